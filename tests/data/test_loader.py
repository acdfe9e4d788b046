import gzip
import shutil

import numpy as np
import pytest

import paragrad as pg
from paragrad.data import MNIST, DataError, DataLoader, TensorDataset, data_root, default_collate
from tests.data_paths import mnist_root
from tests.helpers import check_raises


def test_tensor_dataset_and_loader_batches():
    x, y = pg.arange(10).reshape(10, 1).float(), pg.arange(10)
    ds = TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    assert batches[1][1].tolist() == [4, 5, 6, 7]
    assert len(DataLoader(ds, batch_size=4)) == 3
    dl = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dl) == 2 and [b[0].shape[0] for b in dl] == [4, 4]


def test_shuffle_is_seeded_and_covers_everything():
    ds = TensorDataset(pg.arange(100))
    order = lambda seed: [int(v) for b in DataLoader(ds, 10, shuffle=True, generator=pg.Generator().manual_seed(seed)) for v in b[0]]  # noqa: E731
    a, b, c = order(1), order(1), order(2)
    assert a == b and a != c and sorted(a) == list(range(100))
    g = pg.Generator().manual_seed(3)
    dl = DataLoader(ds, 100, shuffle=True, generator=g)
    assert next(iter(dl))[0].tolist() != next(iter(dl))[0].tolist()   # a new order every epoch


def test_collate_and_custom_collate():
    samples = [(pg.tensor([1.0, 2.0]), 1, {"k": 0.5}), (pg.tensor([3.0, 4.0]), 2, {"k": 1.5})]
    x, y, d = default_collate(samples)
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]] and y.tolist() == [1, 2] and d["k"].tolist() == [0.5, 1.5]

    class Squares(pg.data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return i * i
    assert [b.tolist() for b in DataLoader(Squares(), 2)] == [[0, 1], [4, 9], [16]]
    assert list(DataLoader(Squares(), 2, collate_fn=sum)) == [1, 13, 16]


def test_loader_rejects_bad_batch_size():
    check_raises(lambda L: L.utils.data.DataLoader(L.utils.data.TensorDataset(L.zeros(3)), batch_size=0),
                 match="batch_size")


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


def test_data_root_resolution(monkeypatch, tmp_path):
    assert data_root(tmp_path) == tmp_path
    monkeypatch.setenv("PARAGRAD_DATA", str(tmp_path / "x"))
    assert data_root() == tmp_path / "x"
    monkeypatch.delenv("PARAGRAD_DATA")
    assert str(data_root()).endswith(".cache/paragrad")


def test_torch_style_import_path_and_compat_options():
    from paragrad.utils.data import DataLoader as DL, TensorDataset as TD
    dl = DL(TD(pg.arange(6)), batch_size=4, num_workers=2, pin_memory=True)
    assert [b[0].tolist() for b in dl] == [[0, 1, 2, 3], [4, 5]]
    check_raises(lambda L: L.utils.data.DataLoader(L.utils.data.TensorDataset(L.arange(6)), num_workers=-1),
                 match="num_workers")
