"""paragrad.data: datasets and the DataLoader (PyTorch's torch.utils.data + MNIST, CIFAR-10),
batch augmentations in paragrad.data.transforms, and token streams for language models
(language_model_data, prepare_tokens, TokenDataset, random_windows; tokenizers: paragrad.text)."""
from . import transforms  # noqa: F401
from .cifar import CIFAR10  # noqa: F401
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,  # noqa: F401
                      Subset, TensorDataset, random_split)
from .sampler import (BatchSampler, DistributedSampler, RandomSampler, Sampler,  # noqa: F401
                      SequentialSampler, SubsetRandomSampler, WeightedRandomSampler)
from .download import DataError, data_root  # noqa: F401
from .loader import DataLoader, default_collate  # noqa: F401
from .mnist import MNIST  # noqa: F401
from .text_corpora import CORPORA, LanguageModelData, language_model_data  # noqa: F401
from .token_dataset import TokenDataset, random_windows  # noqa: F401
from .token_files import prepare_tokens  # noqa: F401
