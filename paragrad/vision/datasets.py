"""torchvision.datasets.MNIST: the four IDX files under root/MNIST/raw/, torchvision's layout;
and FakeData: random images, each drawn from a seed of its own index.

Samples are (image, int target) as torchvision's: the image a PIL Image (mode 'L' for MNIST)
where Pillow is installed, else a uint8 NumPy array, (H, W) or (H, W, C) (ToTensor takes
either). MNIST's download=True can't fetch here: with the files missing it raises, naming the
folder and the files to put there.
"""
from __future__ import annotations

import os
from pathlib import Path

from .. import random as _random
from ..data.idx import read_idx
from ..ops.creation import from_numpy, randint, randn

try:
    from PIL import Image
except ImportError:         # optional: the image stays a NumPy array (docs/compatibility.md)
    Image = None

_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
          "t10k-labels-idx1-ubyte")


class MNIST:
    """torchvision.datasets.MNIST(root, train=True, transform=None, target_transform=None,
    download=False): the 60,000 training or 10,000 test digits from root/MNIST/raw/, each file
    raw or gzipped. `data` (uint8 (N, 28, 28)), `targets` (int64 (N,)), `classes` and
    `class_to_idx` as torchvision's."""

    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
               "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        self.root = os.path.expanduser(root) if isinstance(root, str) else root
        self.train, self.transform, self.target_transform = train, transform, target_transform
        split = "train" if train else "t10k"
        self._images = read_idx(self._find(f"{split}-images-idx3-ubyte", download))     # (N, 28, 28)
        self._labels = read_idx(self._find(f"{split}-labels-idx1-ubyte", download))     # (N,)
        if len(self._images) != len(self._labels):
            raise RuntimeError(f"MNIST: {len(self._images)} images but {len(self._labels)} labels "
                               f"in {self.raw_folder}")
        self.data = from_numpy(self._images.copy())      # frombuffer arrays are read-only
        self.targets = from_numpy(self._labels.astype("int64"))

    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, "MNIST", "raw")

    @property
    def class_to_idx(self):
        return {name: i for i, name in enumerate(self.classes)}

    def _find(self, name, download):
        for candidate in (Path(self.raw_folder) / name, Path(self.raw_folder) / f"{name}.gz"):
            if candidate.exists():
                return candidate
        wanted = ", ".join(f"{n}.gz" for n in _FILES)
        if download:        # torchvision would download them; paragrad has no network to use
            raise RuntimeError(f"MNIST: {name} is missing and paragrad does not download it: put the "
                               f"four MNIST files ({wanted}; gzipped or not) in {self.raw_folder}")
        raise RuntimeError(f"Dataset not found: MNIST needs {wanted} (gzipped or not) in "
                           f"{self.raw_folder}")

    def __len__(self):
        return len(self._labels)

    def __getitem__(self, index):
        return _item(self._images[index], int(self._labels[index]), self.transform, self.target_transform)

    def __repr__(self):
        lines = [f"Dataset {type(self).__name__}", f"    Number of datapoints: {len(self)}",
                 f"    Root location: {self.root}", f"    Split: {'Train' if self.train else 'Test'}"]
        if self.transform is not None:
            lines.append("    StandardTransform")
            lines.append("Transform: " + repr(self.transform).replace("\n", "\n           "))
        if self.target_transform is not None:
            lines.append("Target transform: " + repr(self.target_transform))
        return "\n".join(lines)


class FakeData:
    """torchvision.datasets.FakeData(size=1000, image_size=(3, 224, 224), num_classes=10,
    transform=None, target_transform=None, random_offset=0): item i is drawn with the CPU
    generator seeded with i + random_offset (its state restored afterwards, so drawing items
    doesn't move the script's random stream): a standard-normal image of image_size turned into
    bytes as ToPILImage does, and a target in [0, num_classes). The values are paragrad's
    generator's, not torch's."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        self.size, self.image_size, self.num_classes = size, tuple(image_size), num_classes
        self.transform, self.target_transform, self.random_offset = transform, target_transform, random_offset

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if index >= len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        state = _random.get_rng_state()
        try:
            _random.manual_seed(index + self.random_offset)
            img = randn(*self.image_size)                                   # (C, H, W)
            target = int(randint(0, self.num_classes, (1,))[0])
        finally:
            _random.set_rng_state(state)
        img = img.mul(255).byte().numpy().transpose(1, 2, 0)               # (H, W, C)
        return _item(img[:, :, 0] if img.shape[2] == 1 else img, target, self.transform, self.target_transform)

    def __repr__(self):
        return f"Dataset {type(self).__name__}\n    Number of datapoints: {len(self)}"


def _item(image, target, transform, target_transform):
    """(image, target) as torchvision's datasets give them: a uint8 (H, W) or (H, W, C) array
    as a PIL Image where Pillow is installed (mode L, LA, RGB or RGBA by its channels), each
    transform applied."""
    if Image is not None:
        image = Image.fromarray(image)
    if transform is not None:
        image = transform(image)
    if target_transform is not None:
        target = target_transform(target)
    return image, target
