"""CIFAR10 reads files written here in the official format (the real ones are not in the checkout)."""
import io
import pickle
import tarfile

import numpy as np
import pytest

import paragrad as pg
from paragrad.data import CIFAR10, DataError, DataLoader, cifar
from paragrad.data.download import sha256_of

MEAN = np.array([0.4914, 0.4822, 0.4465], np.float32)[:, None, None]
STD = np.array([0.2470, 0.2435, 0.2616], np.float32)[:, None, None]


def _batch(n, seed):
    rng = np.random.default_rng(seed)
    return {b"batch_label": b"batch %d" % seed, b"labels": rng.integers(0, 10, n).tolist(),
            b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
            b"filenames": [b"img_%d.png" % i for i in range(n)]}


def _write_batches(folder, train_n=3, test_n=4):
    """cifar10/cifar-10-batches-py/ as the official tarball unpacks it; returns the dicts."""
    d = folder / "cifar10" / "cifar-10-batches-py"
    d.mkdir(parents=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    batches = {}
    for seed, name in enumerate(names):
        batches[name] = _batch(test_n if name == "test_batch" else train_n, seed)
        with open(d / name, "wb") as f:
            pickle.dump(batches[name], f, protocol=2)
    return batches


def test_reads_train_and_test_batches(tmp_path):
    batches = _write_batches(tmp_path)
    train = CIFAR10(tmp_path, train=True, download=False)
    raw = np.concatenate([batches[f"data_batch_{i}"][b"data"] for i in range(1, 6)])
    labels = sum((batches[f"data_batch_{i}"][b"labels"] for i in range(1, 6)), [])
    assert len(train) == 15 and train.targets == labels and isinstance(train.targets, list)
    assert train.data.dtype == np.uint8 and train.data.shape == (15, 32, 32, 3)
    planes = raw.reshape(15, 3, 32, 32)                       # row-major R, G, B planes
    np.testing.assert_array_equal(train.data, planes.transpose(0, 2, 3, 1))
    assert train.data[0, 0, 1, 2] == raw[0, 2 * 1024 + 1]     # pixel (0, 1), blue plane
    assert tuple(train.images.shape) == (15, 3, 32, 32) and train.images.dtype is pg.float32
    np.testing.assert_allclose(train.images.numpy(), (planes / np.float32(255) - MEAN) / STD,
                               rtol=1e-5, atol=1e-5)
    x, y = train[4]
    assert tuple(x.shape) == (3, 32, 32) and isinstance(y, int) and y == labels[4]

    test = CIFAR10(tmp_path, train=False, download=False, normalize=False)
    assert len(test) == 4 and test.targets == batches["test_batch"][b"labels"]
    np.testing.assert_allclose(test.images.numpy(),
                               batches["test_batch"][b"data"].reshape(4, 3, 32, 32) / np.float32(255))


def test_get_batch_loader_and_subset(tmp_path):
    _write_batches(tmp_path, train_n=10)
    ds = CIFAR10(tmp_path, download=False)
    xb, yb = next(iter(DataLoader(ds, batch_size=8, shuffle=True)))
    assert tuple(xb.shape) == (8, 3, 32, 32) and yb.dtype is pg.int64
    xi, yi = ds.get_batch(pg.tensor([3, 0, 49]))
    np.testing.assert_array_equal(xi.numpy(), ds.images.numpy()[[3, 0, 49]])
    assert yi.tolist() == [ds.targets[3], ds.targets[0], ds.targets[49]]
    ds.subset(5)
    assert len(ds) == 5 and ds.data.shape[0] == 5 and len(ds.targets) == 5


def test_root_from_environment(tmp_path, monkeypatch):
    _write_batches(tmp_path)
    monkeypatch.setenv("PARAGRAD_DATA", str(tmp_path))
    assert len(CIFAR10(train=False, download=False)) == 4


def _write_archive(tmp_path, batches_root):
    src = batches_root / "cifar10" / "cifar-10-batches-py"
    (tmp_path / "cifar10").mkdir(parents=True)
    archive = tmp_path / "cifar10" / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src, arcname="cifar-10-batches-py")
        evil = tarfile.TarInfo("../escaped.txt")                 # must never be extracted
        evil.size = 3
        tar.addfile(evil, io.BytesIO(b"bad"))
    return archive


def test_archive_is_checked_and_extracted(tmp_path, monkeypatch):
    batches = _write_batches(tmp_path / "src")
    root = tmp_path / "root"
    root.mkdir()
    archive = _write_archive(root, tmp_path / "src")
    with pytest.raises(DataError, match="corrupt.*sha256"):   # not the published archive
        CIFAR10(root, train=False, download=False)
    monkeypatch.setattr(cifar, "ARCHIVE_SHA256", sha256_of(archive))
    ds = CIFAR10(root, train=False, download=False)
    assert ds.targets == batches["test_batch"][b"labels"]
    assert (root / "cifar10" / "cifar-10-batches-py" / "data_batch_5").exists()
    assert not (root / "escaped.txt").exists() and not (tmp_path / "escaped.txt").exists()


def test_download_is_used_when_files_are_missing(tmp_path, monkeypatch):
    _write_batches(tmp_path / "src")
    archive_bytes = _write_archive(tmp_path / "made", tmp_path / "src").read_bytes()
    calls = []

    def fake_download(urls, dest, sha256, timeout=30):
        calls.append((urls, dest.name, sha256))
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(archive_bytes)
        return True
    monkeypatch.setattr(cifar, "download", fake_download)
    monkeypatch.setattr(cifar, "ARCHIVE_SHA256", sha256_of(tmp_path / "made" / "cifar10" / "cifar-10-python.tar.gz"))
    assert len(CIFAR10(tmp_path / "root", train=False)) == 4
    assert calls == [([cifar.URL], "cifar-10-python.tar.gz", cifar.ARCHIVE_SHA256)]


def test_missing_files_error_names_them(tmp_path, monkeypatch):
    with pytest.raises(DataError, match=r"missing test_batch in .*cifar-10-batches-py.*"
                                        r"cifar-10-python\.tar\.gz.*PARAGRAD_DATA"):
        CIFAR10(tmp_path, train=False, download=False)
    monkeypatch.setattr(cifar, "download", lambda *a, **k: False)   # offline
    with pytest.raises(DataError, match=r"missing data_batch_1, data_batch_2, .*data_batch_5 in"):
        CIFAR10(tmp_path, train=True)
    _write_batches(tmp_path)
    (tmp_path / "cifar10" / "cifar-10-batches-py" / "data_batch_3").unlink()
    with pytest.raises(DataError, match=r"missing data_batch_3 in") as e:
        CIFAR10(tmp_path, download=False)
    assert "data_batch_1," not in str(e.value)
    assert len(CIFAR10(tmp_path, train=False, download=False)) == 4   # the test split is complete


def test_corrupt_or_wrong_batches_raise(tmp_path):
    _write_batches(tmp_path)
    path = tmp_path / "cifar10" / "cifar-10-batches-py" / "test_batch"
    path.write_bytes(path.read_bytes()[:200])                   # truncated pickle
    with pytest.raises(DataError, match="test_batch is corrupt"):
        CIFAR10(tmp_path, train=False, download=False)
    path.write_bytes(b"not a pickle at all")
    with pytest.raises(DataError, match="corrupt"):
        CIFAR10(tmp_path, train=False, download=False)
    path.write_bytes(pickle.dumps({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}))
    with pytest.raises(DataError, match=r"not a CIFAR batch.*\(N, 3072\)"):
        CIFAR10(tmp_path, train=False, download=False)
    path.write_bytes(pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0]}))
    with pytest.raises(DataError, match="1 labels for 2 images"):
        CIFAR10(tmp_path, train=False, download=False)


class _Boom:
    def __reduce__(self):
        return (print, ("pickle code ran",))


def test_pickles_may_not_run_code(tmp_path, capsys):
    _write_batches(tmp_path)
    path = tmp_path / "cifar10" / "cifar-10-batches-py" / "test_batch"
    path.write_bytes(pickle.dumps({b"data": _Boom(), b"labels": []}))
    with pytest.raises(DataError, match="not allowed"):
        CIFAR10(tmp_path, train=False, download=False)
    assert "pickle code ran" not in capsys.readouterr().out
