"""paragrad.data: datasets and the DataLoader (PyTorch's torch.utils.data + MNIST)."""
from .dataset import Dataset, TensorDataset  # noqa: F401
from .download import DataError, data_root  # noqa: F401
from .loader import DataLoader, default_collate  # noqa: F401
from .mnist import MNIST  # noqa: F401
