"""CIFAR-10 from the official python-version batches (or their .tar.gz), archive checked by sha256."""
from __future__ import annotations

import pickle
import tarfile

import numpy as np

from ..ops.creation import from_numpy
from .dataset import Dataset
from .download import DataError, data_root, download, sha256_of

URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
ARCHIVE = "cifar-10-python.tar.gz"
# the published md5 is c58f30108f718f92721af3b95e74349a; this is the same file's sha256
ARCHIVE_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
BATCH_DIR = "cifar-10-batches-py"
TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_FILES = ("test_batch",)
MEAN = (0.4914, 0.4822, 0.4465)   # the usual per-channel statistics of the training images
STD = (0.2470, 0.2435, 0.2616)
CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


class _ArrayUnpickler(pickle.Unpickler):
    """Loads only what a CIFAR batch holds (dicts, lists, numpy arrays): a pickle is code,
    and a file from the internet should not get to run any."""
    _ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
                ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
                ("numpy._core.multiarray", "scalar"),
                ("_codecs", "encode")}   # how protocol-2 pickles from Python 3 store bytes

    def find_class(self, module, name):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"global '{module}.{name}' is not allowed in a CIFAR batch")
        if module == "numpy.core.multiarray":   # files written by NumPy 1 (the official ones)
            module = "numpy._core.multiarray" if hasattr(np, "_core") else module
        return super().find_class(module, name)


def _missing_error(folder, missing):
    return DataError(f"CIFAR10: missing {', '.join(missing)} in {folder / BATCH_DIR} and it could not "
                     f"be downloaded; put {ARCHIVE} (from {URL}) or its extracted {BATCH_DIR}/ folder "
                     f"(data_batch_1..5, test_batch) in {folder}, or pass --data-dir / set "
                     f"PARAGRAD_DATA to the folder that holds cifar10/")


def _extract(archive, folder):
    if sha256_of(archive) != ARCHIVE_SHA256:
        raise DataError(f"CIFAR10: {archive} is corrupt (sha256 mismatch); delete it and fetch it again")
    try:
        with tarfile.open(archive, "r:gz") as tar:
            # only the batch files, never a path that could leave the folder
            members = [m for m in tar.getmembers() if m.isfile() and m.name.startswith(BATCH_DIR + "/")
                       and ".." not in m.name.split("/")]
            if hasattr(tarfile, "data_filter"):
                tar.extractall(folder, members=members, filter="data")
            else:
                tar.extractall(folder, members=members)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise DataError(f"CIFAR10: could not extract {archive}: {e}") from None


def _read_batch(path):
    try:
        with open(path, "rb") as f:
            d = _ArrayUnpickler(f, encoding="bytes").load()
    except Exception as e:  # noqa: BLE001 - any unpickling failure means a bad file
        raise DataError(f"CIFAR10: {path} is corrupt (could not unpickle: {e}); delete it and "
                        f"fetch it again") from None
    if not isinstance(d, dict):
        raise DataError(f"CIFAR10: {path} is not a CIFAR batch (a pickled dict); got {type(d).__name__}")
    d = {k.decode() if isinstance(k, bytes) else k: v for k, v in d.items()}
    data, labels = d.get("data"), d.get("labels")
    if not isinstance(data, np.ndarray) or data.ndim != 2 or data.shape[1] != 3072 or labels is None:
        raise DataError(f"CIFAR10: {path} is not a CIFAR batch: expected 'data' uint8 (N, 3072) and "
                        f"'labels'; got data {getattr(data, 'shape', type(data).__name__)}")
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape != (data.shape[0],) or (labels.size and (labels.min() < 0 or labels.max() > 9)):
        raise DataError(f"CIFAR10: {path} has {labels.size} labels for {data.shape[0]} images "
                        f"(each label must be in 0..9)")
    return data.astype(np.uint8, copy=False), labels


class CIFAR10(Dataset):
    """CIFAR-10. root: folder containing cifar10/ (default: $PARAGRAD_DATA or ~/.cache/paragrad),
    which holds cifar-10-batches-py/ or cifar-10-python.tar.gz (extracted on first use, after a
    sha256 check). Samples are (image float32 (3, 32, 32) normalized with the usual per-channel
    mean/std, label int). As torchvision, `.data` is a NumPy uint8 (N, 32, 32, 3) array and
    `.targets` a list of ints; `.images` (N, 3, 32, 32) float32 and `.labels` int64 are tensors."""

    classes = CLASSES

    def __init__(self, root=None, train=True, download=True, normalize=True):
        folder = data_root(root) / "cifar10"
        names = TRAIN_FILES if train else TEST_FILES
        batches, archive = folder / BATCH_DIR, folder / ARCHIVE
        missing = [n for n in names if not (batches / n).exists()]
        if missing:
            if not archive.exists() and download:
                download_ok = _download(archive)
                if not download_ok:
                    raise _missing_error(folder, missing)
            if archive.exists():
                _extract(archive, folder)
            missing = [n for n in names if not (batches / n).exists()]
            if missing:
                raise _missing_error(folder, missing)
        parts = [_read_batch(batches / n) for n in names]
        flat = np.concatenate([p[0] for p in parts])                     # (N, 3072) RGB planes
        labels = np.concatenate([p[1] for p in parts])
        chw = flat.reshape(-1, 3, 32, 32)
        self.data = np.ascontiguousarray(chw.transpose(0, 2, 3, 1))      # (N, 32, 32, 3)
        self.targets = labels.tolist()
        self.labels = from_numpy(labels)
        x = chw.astype(np.float32) / 255.0
        if normalize:
            x = (x - np.array(MEAN, np.float32)[:, None, None]) / np.array(STD, np.float32)[:, None, None]
        self.images = from_numpy(np.ascontiguousarray(x, dtype=np.float32))  # (N, 3, 32, 32)

    def __len__(self):
        return self.labels.shape[0]

    def __getitem__(self, i):
        return self.images[i], int(self.targets[i])

    def get_batch(self, indices):
        return self.images[indices], self.labels[indices]

    def subset(self, n):
        """The first n samples (a cheap slice for quick runs and tests)."""
        self.images, self.labels = self.images[:n], self.labels[:n]
        self.data, self.targets = self.data[:n], self.targets[:n]
        return self


def _download(archive):
    return download([URL], archive, ARCHIVE_SHA256, timeout=60)
