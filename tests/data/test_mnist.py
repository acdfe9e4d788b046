"""paragrad.data.MNIST: the real test split, raw (uncompressed) files checked against their
checksums, and a missing file named in the error with where to put it."""
import gzip
import shutil

import numpy as np
import pytest

import paragrad as pg
from paragrad.data import MNIST, DataError, DataLoader
from tests.data_paths import mnist_root


def test_mnist_reads_real_files():
    ds = MNIST(mnist_root(), train=False)
    assert len(ds) == 10000 and tuple(ds.images.shape) == (10000, 1, 28, 28)
    counts = np.bincount(ds.targets.numpy(), minlength=10)
    assert counts.tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert abs(float(ds.data.float().mean()) - 33.791) < 1e-3
    x, y = ds[0]
    assert tuple(x.shape) == (1, 28, 28) and isinstance(y, int)
    xb, yb = next(iter(DataLoader(ds, batch_size=32)))
    assert tuple(xb.shape) == (32, 1, 28, 28) and yb.dtype is pg.int64


def test_mnist_raw_files_and_checksums(tmp_path):
    src = mnist_root() / "mnist"
    (tmp_path / "mnist").mkdir()
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        with gzip.open(src / (name + ".gz")) as f, open(tmp_path / "mnist" / name, "wb") as g:
            shutil.copyfileobj(f, g)
    assert len(MNIST(tmp_path, train=False, download=False)) == 10000
    raw = tmp_path / "mnist" / "t10k-labels-idx1-ubyte"
    raw.write_bytes(raw.read_bytes()[:-1] + b"\x00")
    with pytest.raises(DataError, match="corrupt"):
        MNIST(tmp_path, train=False, download=False)


def test_mnist_missing_files_error_names_them(tmp_path):
    with pytest.raises(DataError, match=r"t10k-images-idx3-ubyte\.gz.*PARAGRAD_DATA"):
        MNIST(tmp_path, train=False, download=False)
