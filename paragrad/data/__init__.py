"""paragrad.data: datasets and the DataLoader (PyTorch's torch.utils.data + MNIST, CIFAR-10),
and batch augmentations in paragrad.data.transforms."""
from . import transforms  # noqa: F401
from .cifar import CIFAR10  # noqa: F401
from .dataset import (ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset,  # noqa: F401
                      random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,  # noqa: F401
                      SubsetRandomSampler)
from .download import DataError, data_root  # noqa: F401
from .loader import DataLoader, default_collate  # noqa: F401
from .mnist import MNIST  # noqa: F401
