"""`from paragrad.utils.data import DataLoader` works as `torch.utils.data` does."""
from ..data import *  # noqa: F401,F403
from ..data import DataLoader, Dataset, TensorDataset, default_collate  # noqa: F401
