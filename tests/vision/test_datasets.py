"""torchvision.datasets.MNIST (paragrad.vision.datasets) on the real files laid out as torchvision
keeps them (root/MNIST/raw/), and on files cut to a few images; FakeData's seeded items."""
import gzip

import numpy as np
import pytest

import paragrad as pg
from paragrad.vision import datasets, transforms
from paragrad.data.idx import read_idx, write_idx
from tests.data_paths import mnist_root

FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
         "t10k-labels-idx1-ubyte")


def _real(name):
    return mnist_root() / "mnist" / f"{name}.gz"


@pytest.fixture
def small_root(tmp_path):
    """root/MNIST/raw with the first 30 training and 20 test digits, uncompressed (torchvision
    keeps them so after its download)."""
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for name in FILES:
        write_idx(raw / name, read_idx(_real(name))[:30 if name.startswith("train") else 20])
    return tmp_path


def test_full_splits_from_the_gzipped_files(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for name in FILES:
        (raw / f"{name}.gz").symlink_to(_real(name))
    train, test = datasets.MNIST(str(tmp_path)), datasets.MNIST(tmp_path, train=False)
    assert (len(train), len(test)) == (60000, 10000)
    assert tuple(train.data.shape) == (60000, 28, 28) and train.data.dtype == pg.uint8
    assert tuple(test.targets.shape) == (10000,) and test.targets.dtype == pg.int64
    # the first training digits of MNIST are 5, 0, 4, 1, 9 and the first test ones 7, 2, 1, 0, 4
    assert train.targets[:5].tolist() == [5, 0, 4, 1, 9] and test.targets[:5].tolist() == [7, 2, 1, 0, 4]
    with gzip.open(_real("train-images-idx3-ubyte")) as f:
        first = np.frombuffer(f.read(16 + 784), np.uint8, offset=16).reshape(28, 28)
    np.testing.assert_array_equal(train.data[0].numpy(), first)


def test_items_are_an_image_and_an_int_as_torchvisions(small_root):
    ds = datasets.MNIST(small_root, train=False)
    img, target = ds[3]
    assert type(target) is int and target == int(ds.targets[3])
    if datasets.Image is not None:      # Pillow installed: a PIL Image of mode L, as torchvision
        assert img.mode == "L" and img.size == (28, 28)
        img = np.array(img)
    np.testing.assert_array_equal(img, ds.data[3].numpy())
    assert ds.classes[target].startswith(f"{target} - ") and ds.class_to_idx["7 - seven"] == 7


def test_without_pillow_an_item_is_a_uint8_array(small_root, monkeypatch):
    monkeypatch.setattr(datasets, "Image", None)
    img, _ = datasets.MNIST(small_root)[0]
    assert isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.shape == (28, 28)


def test_transforms_apply_to_each_item(small_root):
    t = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    ds = datasets.MNIST(small_root, transform=t, target_transform=lambda y: y + 100)
    x, y = ds[1]
    assert tuple(x.shape) == (1, 28, 28) and x.dtype == pg.float32
    np.testing.assert_allclose(x.numpy()[0], (ds.data[1].numpy() / np.float32(255) - 0.1307) / 0.3081,
                               rtol=1e-5, atol=1e-6)
    assert y == int(ds.targets[1]) + 100 and len(ds) == 30
    assert repr(ds).startswith(f"Dataset MNIST\n    Number of datapoints: 30\n    Root location: {small_root}\n"
                               f"    Split: Train\n    StandardTransform\nTransform: Compose(")
    loader = pg.data.DataLoader(ds, batch_size=8)
    xb, yb = next(iter(loader))
    assert tuple(xb.shape) == (8, 1, 28, 28) and yb.dtype == pg.int64


def test_missing_files_name_the_folder_and_the_files(tmp_path):
    where = str(tmp_path / "MNIST" / "raw")
    with pytest.raises(RuntimeError, match="Dataset not found") as e:
        datasets.MNIST(tmp_path)
    assert where in str(e.value) and "t10k-labels-idx1-ubyte.gz" in str(e.value)
    with pytest.raises(RuntimeError, match="does not download") as e:   # no network: torchvision would fetch
        datasets.MNIST(tmp_path, download=True)
    assert where in str(e.value) and all(f"{name}.gz" in str(e.value) for name in FILES)


def test_idx_round_trip_and_bad_files(tmp_path):
    a = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    for name in ("a", "a.gz"):
        write_idx(tmp_path / name, a)
        np.testing.assert_array_equal(read_idx(tmp_path / name), a)
    assert (tmp_path / "a").read_bytes()[:12] == bytes([0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 3])
    (tmp_path / "short").write_bytes((tmp_path / "a").read_bytes()[:-1])
    with pytest.raises(ValueError, match="header says shape"):
        read_idx(tmp_path / "short")
    (tmp_path / "text").write_bytes(b"hello world")
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(tmp_path / "text")


def test_fake_data_items_are_seeded_by_index_and_leave_the_stream_alone():
    data = datasets.FakeData(size=5, image_size=(3, 6, 4), num_classes=3, transform=transforms.ToTensor())
    assert len(data) == 5
    pg.manual_seed(7)
    before = pg.rand(3)
    pg.manual_seed(7)
    image, target = data[2]
    assert pg.equal(pg.rand(3), before)             # the script's stream didn't move
    again, same = data[2]
    assert pg.equal(image, again) and target == same and 0 <= target < 3
    assert tuple(image.shape) == (3, 6, 4) and image.dtype is pg.float32
    assert not pg.equal(data[3][0], image)
    shifted = datasets.FakeData(size=5, image_size=(3, 6, 4), transform=transforms.ToTensor(), random_offset=1)
    assert pg.equal(shifted[1][0], image)          # item i of offset 1 is item i + 1
    pg.manual_seed(2)
    drawn = pg.randn(3, 6, 4)
    assert pg.equal(image, drawn.mul(255).byte().float() / 255)         # ToPILImage's bytes, back through ToTensor
    with pytest.raises(IndexError, match="FakeData index out of range"):
        data[5]


def test_fake_data_without_pillow_gives_uint8_arrays(monkeypatch):
    monkeypatch.setattr(datasets, "Image", None)
    image, _ = datasets.FakeData(size=2, image_size=(3, 4, 5))[0]
    assert isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.shape == (4, 5, 3)
    gray, _ = datasets.FakeData(size=2, image_size=(1, 4, 5))[0]
    assert gray.shape == (4, 5)
