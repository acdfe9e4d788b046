"""torchvision.datasets.MNIST: the four IDX files under root/MNIST/raw/, torchvision's layout.

Samples are (image, int target) as torchvision's: the image a PIL Image of mode 'L' where Pillow
is installed, else a uint8 (28, 28) NumPy array (ToTensor takes either). download=True can't
fetch here: with the files missing it raises, naming the folder and the files to put there.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..ops.creation import from_numpy
from ..data.idx import read_idx

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
        img, target = self._images[index], int(self._labels[index])
        if Image is not None:
            img = Image.fromarray(img)          # a (28, 28) uint8 array makes mode 'L'
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __repr__(self):
        lines = [f"Dataset {type(self).__name__}", f"    Number of datapoints: {len(self)}",
                 f"    Root location: {self.root}", f"    Split: {'Train' if self.train else 'Test'}"]
        if self.transform is not None:
            lines.append("    StandardTransform")
            lines.append("Transform: " + repr(self.transform).replace("\n", "\n           "))
        if self.target_transform is not None:
            lines.append("Target transform: " + repr(self.target_transform))
        return "\n".join(lines)
