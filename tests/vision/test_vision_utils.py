"""torchvision.utils' make_grid and save_image (paragrad.vision.utils) against grids built by hand
in NumPy (torchvision itself isn't installed), and the PNG codec they write with
(paragrad.vision.png) read back by its own decoder and by Pillow."""
import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image       # a dependency of matplotlib, which the dev extra installs: never skipped

import paragrad as pg
from paragrad.vision import png
from paragrad.vision.utils import make_grid, save_image

_RNG = np.random.default_rng(0)


def _numpy_grid(batch, nrow, padding, pad_value):
    """make_grid's layout, written out for a (B, C, H, W) array of 3 channels."""
    b, c, h, w = batch.shape
    xmaps = min(nrow, b)
    ymaps = -(-b // xmaps)
    grid = np.full((c, ymaps * (h + padding) + padding, xmaps * (w + padding) + padding), pad_value,
                   batch.dtype)
    for k in range(b):
        y, x = (k // xmaps) * (h + padding) + padding, (k % xmaps) * (w + padding) + padding
        grid[:, y:y + h, x:x + w] = batch[k]
    return grid


def test_make_grid_places_five_grey_images_in_rows_of_two(device):
    x = _RNG.random((5, 1, 3, 4)).astype(np.float32)
    t = pg.tensor(x, device=device)
    got = make_grid(t, nrow=2, padding=1, pad_value=0.5)
    # 2 columns of 4 + 1 wide and 3 rows of 3 + 1 high, plus the outer padding; grey -> 3 channels
    assert tuple(got.shape) == (3, 13, 11) and got.device == t.device
    want = np.full((3, 13, 11), 0.5, np.float32)
    for k in range(5):
        row, col = divmod(k, 2)
        want[:, 1 + 4 * row:4 + 4 * row, 1 + 5 * col:5 + 5 * col] = x[k, 0]
    np.testing.assert_array_equal(got.cpu().numpy(), want)
    assert (want[:, 9:12, 6:10] == 0.5).all()                  # the sixth cell stays padding
    np.testing.assert_array_equal(t.cpu().numpy(), x)           # the input is left as it was


def test_make_grid_defaults_and_a_batch_of_one(device):
    x = _RNG.random((3, 3, 2, 2)).astype(np.float32)
    got = make_grid(pg.tensor(x, device=device))                # nrow=8, padding=2, pad_value=0
    assert tuple(got.shape) == (3, 6, 14)
    np.testing.assert_array_equal(got.cpu().numpy(), _numpy_grid(x, 8, 2, 0.0))
    one = make_grid(pg.tensor(x[:1], device=device), padding=5)     # the image itself, no frame
    np.testing.assert_array_equal(one.cpu().numpy(), x[0])


def test_make_grid_of_single_images(device):
    rgb = _RNG.random((3, 4, 5)).astype(np.float32)
    np.testing.assert_array_equal(make_grid(pg.tensor(rgb, device=device)).cpu().numpy(), rgb)
    grey = _RNG.random((4, 5)).astype(np.float32)
    for image in (grey, grey[None]):                             # (H, W) and (1, H, W): copied to 3
        got = make_grid(pg.tensor(image, device=device))
        np.testing.assert_array_equal(got.cpu().numpy(), np.stack([grey] * 3))


def test_make_grid_of_a_list_stacks_it(device):
    x = _RNG.random((3, 1, 2, 3)).astype(np.float32)
    images = [pg.tensor(a, device=device) for a in x]
    np.testing.assert_array_equal(make_grid(images, nrow=2).cpu().numpy(),
                                  make_grid(pg.tensor(x, device=device), nrow=2).cpu().numpy())


def test_make_grid_normalize(device):
    x = (_RNG.random((4, 3, 2, 3)) * 6 - 2).astype(np.float32)          # values in [-2, 4)
    x[3] = 1.5                                                          # a flat image
    t = pg.tensor(x, device=device)

    def grid(**kw):
        return make_grid(t, nrow=4, padding=1, normalize=True, **kw).cpu().numpy()

    by_batch = (x - x.min()) / (x.max() - x.min())
    np.testing.assert_allclose(grid(), _numpy_grid(by_batch, 4, 1, 0.0), rtol=1e-6, atol=1e-7)
    clamped = (np.clip(x, -1, 1) + 1) / 2                               # clamped to value_range first
    np.testing.assert_allclose(grid(value_range=(-1, 1)), _numpy_grid(clamped, 4, 1, 0.0), atol=1e-7)
    np.testing.assert_allclose(grid(value_range=(-1, 1), scale_each=True),
                               _numpy_grid(clamped, 4, 1, 0.0), atol=1e-7)
    lo, hi = x.min(axis=(1, 2, 3), keepdims=True), x.max(axis=(1, 2, 3), keepdims=True)
    by_image = (x - lo) / np.maximum(hi - lo, 1e-5)                     # the flat image: all 0
    np.testing.assert_allclose(grid(scale_each=True), _numpy_grid(by_image, 4, 1, 0.0), atol=1e-7)
    np.testing.assert_array_equal(t.cpu().numpy(), x)                  # not normalized in place
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        make_grid(t, normalize=True, value_range=[0, 1])


def test_save_image_round_trip_of_exact_bytes(tmp_path, device):
    values = np.array([[0.0, 1.0, 0.5], [0.2, -0.3, 1.7]], np.float32)   # (H, W)
    save_image(pg.tensor(values, device=device)[None], tmp_path / "one.png")
    got = png.read_png(tmp_path / "one.png")                             # grey -> RGB, as make_grid
    assert got.dtype == np.uint8 and got.shape == (2, 3, 3)
    # v * 255 + 0.5, clamped to [0, 255], truncated: 0.5 -> 128, 0.2 -> 51 (51.5 truncated)
    np.testing.assert_array_equal(got[:, :, 0], [[0, 255, 128], [51, 0, 255]])
    assert (got == got[:, :, :1]).all()

    # vae/main.py's call: a (64, 1, 28, 28) batch, 8 to a row with the default padding of 2
    sample = _RNG.random((64, 1, 28, 28)).astype(np.float32)
    path = str(tmp_path / "sample_1.png")
    save_image(pg.tensor(sample, device=device), path)
    want = _numpy_grid(np.repeat(sample, 3, axis=1), 8, 2, 0.0)
    want = np.clip(want * np.float32(255) + np.float32(0.5), 0, 255).astype(np.uint8).transpose(1, 2, 0)
    np.testing.assert_array_equal(png.read_png(path), want)
    assert want.shape == (242, 242, 3)

    rgba = _RNG.random((4, 5, 6)).astype(np.float32)                    # 4 channels: written RGBA
    save_image(pg.tensor(rgba, device=device), tmp_path / "rgba.png")
    with Image.open(tmp_path / "rgba.png") as im:                      # Pillow reads it the same
        assert im.mode == "RGBA" and im.size == (6, 5)
        np.testing.assert_array_equal(np.array(im), png.read_png(tmp_path / "rgba.png"))


def test_save_image_to_a_file_object(tmp_path, device):
    x = pg.tensor(_RNG.random((3, 1, 4, 4)).astype(np.float32), device=device)
    buf = io.BytesIO()
    save_image(x, buf, format="png", nrow=3, padding=1)
    (tmp_path / "named.png").touch()
    with open(tmp_path / "named.png", "wb") as f:                # format from the file's name
        save_image(x, f, nrow=3, padding=1)
    assert (tmp_path / "named.png").read_bytes() == buf.getvalue()
    buf.seek(0)
    assert png.read_png(buf).shape == (6, 16, 3)
    with pytest.raises(ValueError, match="save_image: writes PNG only.*format='png'"):
        save_image(x, io.BytesIO())                              # no name and no format


def test_save_image_refuses_other_formats_and_writes_nothing(tmp_path):
    x = pg.rand(2, 3, 4, 4)
    with pytest.raises(ValueError, match=r"PNG only, got the extension '\.jpg' of '.*out\.jpg'"):
        save_image(x, tmp_path / "out.jpg")
    with pytest.raises(ValueError, match=r"PNG only, got format 'JPEG' for '.*out\.png'"):
        save_image(x, tmp_path / "out.png", format="JPEG")
    # 2 channels make no PNG: refused after the grid is made, still leaving no file (or temp file)
    with pytest.raises(ValueError, match=r"shape \(4, 4, 2\)"):
        save_image(pg.rand(2, 4, 4), tmp_path / "two.png")
    assert list(tmp_path.iterdir()) == []


def test_bad_arguments_name_the_function_and_the_shape():
    with pytest.raises(ValueError, match=r"make_grid: expected a 4-D mini-batch .* shape \(1, 2, 1, 3, 3\)"):
        make_grid(pg.rand(1, 2, 1, 3, 3))
    with pytest.raises(ValueError, match=r"make_grid: .* shape \(7,\)"):
        save_image(pg.rand(7), io.BytesIO(), format="png")
    with pytest.raises(TypeError, match="make_grid: tensor or list of tensors expected"):
        make_grid(np.zeros((3, 4, 4), np.float32))
    with pytest.raises(TypeError, match="make_grid: tensor or non-empty list of tensors"):
        make_grid([pg.rand(3, 2, 2), np.zeros((3, 2, 2))])
    with pytest.raises(TypeError, match="save_image: tensor or list of tensors expected"):
        save_image("image", io.BytesIO(), format="png")


def test_png_codec_checks():
    grey = _RNG.integers(0, 256, (3, 5), dtype=np.uint8)
    data = png.encode_png(grey)
    np.testing.assert_array_equal(png.read_png(io.BytesIO(data)), grey)
    with Image.open(io.BytesIO(data)) as im:
        assert im.mode == "L"
        np.testing.assert_array_equal(np.array(im), grey)
    with pytest.raises(TypeError, match="uint8"):
        png.encode_png(grey.astype(np.float32))
    damaged = bytearray(data)
    damaged[-20] ^= 1                                           # inside IDAT's compressed rows
    with pytest.raises(ValueError, match="bad CRC in the IDAT chunk"):
        png.read_png(io.BytesIO(bytes(damaged)))
    # a row with filter type 1 (Sub), which write_png never writes: refused, not misread
    rows = np.concatenate([np.ones((3, 1), np.uint8), grey], axis=1)
    header = struct.pack(">IIBBBBB", 5, 3, 8, 0, 0, 0, 0)
    sub = (png._SIGNATURE + png._chunk(b"IHDR", header) + png._chunk(b"IDAT", zlib.compress(rows.tobytes()))
           + png._chunk(b"IEND", b""))
    with pytest.raises(ValueError, match=r"only filter type 0 is read, got \[1\]"):
        png.read_png(io.BytesIO(sub))
