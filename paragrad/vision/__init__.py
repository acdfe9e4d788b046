"""paragrad.vision: the part of torchvision that PyTorch's example scripts use, and what
`paragrad run` answers `import torchvision` with: datasets.MNIST read from torchvision's folder
layout, and the transforms Compose, ToTensor and Normalize, which see one image at a time as
torchvision's do (paragrad.data.transforms holds paragrad's own batched augmentations)."""
from . import datasets, transforms  # noqa: F401
