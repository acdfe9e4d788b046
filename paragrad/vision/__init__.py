"""paragrad.vision: the part of torchvision that PyTorch's example scripts use, and what
`paragrad run` answers `import torchvision` with: datasets.MNIST read from torchvision's folder
layout and datasets.FakeData, the transforms Compose, ToTensor, ToPILImage, Normalize, Lambda,
Resize and CenterCrop, which see one image at a time as torchvision's do (paragrad.data.transforms holds paragrad's own
batched augmentations),
models.resnet18 and resnet34, and utils.make_grid and utils.save_image (written as PNG, by
paragrad.vision.png without Pillow)."""
from . import datasets, models, transforms, utils  # noqa: F401
