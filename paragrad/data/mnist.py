"""MNIST from the original IDX files (gzipped or raw), checked by sha256."""
from __future__ import annotations

import gzip

import numpy as np


from ..ops.creation import from_numpy
from .dataset import Dataset
from .download import DataError, data_root, download, sha256_of
from .idx import parse_idx

MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/",
           "https://storage.googleapis.com/cvdf-datasets/mnist/")
# name -> (sha256 of the .gz, sha256 of the raw file, magic, count)
FILES = {
    "train-images-idx3-ubyte": ("440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
                                "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db", 2051, 60000),
    "train-labels-idx1-ubyte": ("3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
                                "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5", 2049, 60000),
    "t10k-images-idx3-ubyte": ("8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
                               "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7", 2051, 10000),
    "t10k-labels-idx1-ubyte": ("f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
                               "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2", 2049, 10000),
}
MEAN, STD = 0.1307, 0.3081   # the usual normalization constants of the training images


def _read(folder, name, allow_download):
    gz_sha, raw_sha, magic, count = FILES[name]
    gz, raw = folder / (name + ".gz"), folder / name
    if not gz.exists() and not raw.exists() and allow_download:
        download([m + name + ".gz" for m in MIRRORS], gz, gz_sha)
    if gz.exists():
        if sha256_of(gz) != gz_sha:
            raise DataError(f"MNIST: {gz} is corrupt (sha256 mismatch); delete it and fetch it again")
        with gzip.open(gz) as f:
            data = f.read()
    elif raw.exists():
        if sha256_of(raw) != raw_sha:
            raise DataError(f"MNIST: {raw} is corrupt (sha256 mismatch); delete it and fetch it again")
        data = raw.read_bytes()
    else:
        raise DataError(f"MNIST: missing {name}.gz in {folder} and it could not be downloaded; put "
                        f"the four MNIST files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,"
                        f" t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz) there, or pass "
                        f"--data-dir / set PARAGRAD_DATA to the folder that holds mnist/")
    got = int.from_bytes(data[:4], "big")
    if got != magic or int.from_bytes(data[4:8], "big") != count:
        raise DataError(f"MNIST: {name} has a bad header (magic {got}, expected {magic})")
    return parse_idx(data, folder / name)       # (N, 28, 28) images or (N,) labels


class MNIST(Dataset):
    """MNIST digits. root: folder containing mnist/ (default: $PARAGRAD_DATA or
    ~/.cache/paragrad). Samples are (image float32 (1, 28, 28) normalized with the usual
    mean/std, label int64). `.data` (uint8 N x 28 x 28) and `.targets` (int64 N) as torchvision."""

    def __init__(self, root=None, train=True, download=True, normalize=True):
        folder = data_root(root) / "mnist"
        split = "train" if train else "t10k"
        images = _read(folder, f"{split}-images-idx3-ubyte", download)
        labels = _read(folder, f"{split}-labels-idx1-ubyte", download)
        self.data = from_numpy(images.copy())
        self.targets = from_numpy(labels.astype(np.int64))
        x = images.astype(np.float32)[:, None] / 255.0
        if normalize:
            x = (x - MEAN) / STD
        self.images = from_numpy(x)          # (N, 1, 28, 28) float32, ready for a model

    def __len__(self):
        return self.targets.shape[0]

    def __getitem__(self, i):
        return self.images[i], int(self.targets[i])

    def get_batch(self, indices):
        return self.images[indices], self.targets[indices]

    def subset(self, n):
        """The first n samples (a cheap slice for quick runs and tests)."""
        self.images, self.data, self.targets = self.images[:n], self.data[:n], self.targets[:n]
        return self



