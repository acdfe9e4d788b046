"""`from paragrad.utils.data import DataLoader` works as `torch.utils.data` does."""
from ..data import *  # noqa: F401,F403
from ..data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset,  # noqa: F401
                    RandomSampler, Sampler, SequentialSampler, Subset, SubsetRandomSampler,
                    TensorDataset, default_collate, random_split)
