"""torchvision's Compose, ToTensor and Normalize (paragrad.vision.transforms) against torch ops
that compute the same (torchvision itself isn't installed) and hand-computed values."""
import numpy as np
import pytest
import torch
from PIL import Image       # (a dependency of matplotlib, which the dev extra installs)

import paragrad as pg
from paragrad.vision import transforms as T

_RNG = np.random.default_rng(0)


def test_to_tensor_of_a_uint8_image_is_torchs_float_division():
    a = _RNG.integers(0, 256, (28, 28), dtype=np.uint8)
    got = T.ToTensor()(a)
    want = torch.from_numpy(a).float().div(255).unsqueeze(0)
    assert got.dtype == pg.float32 and tuple(got.shape) == (1, 28, 28)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert got.numpy()[0, 0, 0] == np.float32(a[0, 0]) / np.float32(255)


def test_to_tensor_moves_channels_first_and_keeps_other_dtypes():
    rgb = _RNG.integers(0, 256, (4, 5, 3), dtype=np.uint8)
    np.testing.assert_array_equal(T.ToTensor()(rgb).numpy(),
                                  torch.from_numpy(rgb).permute(2, 0, 1).float().div(255).numpy())
    f = _RNG.random((4, 5, 2)).astype(np.float64)           # not uint8: no division, dtype kept
    got = T.ToTensor()(f)
    assert got.dtype == pg.float64
    np.testing.assert_array_equal(got.numpy(), f.transpose(2, 0, 1))


def test_to_tensor_of_a_pil_image():
    Image = pytest.importorskip("PIL.Image")
    a = _RNG.integers(0, 256, (6, 7), dtype=np.uint8)
    np.testing.assert_array_equal(T.ToTensor()(Image.fromarray(a)).numpy(), T.ToTensor()(a).numpy())
    bilevel = Image.fromarray(a > 127).convert("1")         # torchvision reads mode 1 as 0 / 255
    np.testing.assert_array_equal(T.ToTensor()(bilevel).numpy()[0], (a > 127).astype(np.float32))


def test_to_tensor_refuses_what_torchvision_refuses():
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        T.ToTensor()([[1, 2]])
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional. Got 1 dimensions"):
        T.ToTensor()(np.zeros(3, np.uint8))


def test_normalize_per_channel_as_torch_broadcasting():
    x = _RNG.random((3, 4, 5)).astype(np.float32)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    got = T.Normalize(mean, std)(pg.tensor(x))
    want = (torch.from_numpy(x) - torch.tensor(mean).view(-1, 1, 1)) / torch.tensor(std).view(-1, 1, 1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    one = T.Normalize((0.5,), (0.5,))(pg.tensor(x))          # one value: every channel
    np.testing.assert_allclose(one.numpy(), (x - 0.5) / 0.5, rtol=1e-6)


def test_normalize_in_place_and_its_refusals():
    x = pg.ones(1, 2, 2)
    out = T.Normalize((0.5,), (0.25,), inplace=True)(x)
    assert out is x and x.numpy().tolist() == [[[2.0, 2.0], [2.0, 2.0]]]
    with pytest.raises(TypeError, match="Input tensor should be a float tensor"):
        T.Normalize((0,), (1,))(pg.zeros(1, 2, 2, dtype=pg.uint8))
    with pytest.raises(ValueError, match="std evaluated to zero"):
        T.Normalize((0,), (0,))(pg.zeros(1, 2, 2))
    with pytest.raises(TypeError, match="img should be Tensor Image"):
        T.Normalize((0,), (1,))(np.zeros((1, 2, 2), np.float32))


def test_compose_applies_in_order_with_torchvisions_repr():
    t = T.Compose([T.ToTensor(), T.Normalize((0.1307,), (0.3081,))])
    assert repr(t) == "Compose(\n    ToTensor()\n    Normalize(mean=(0.1307,), std=(0.3081,))\n)"
    a = _RNG.integers(0, 256, (28, 28), dtype=np.uint8)
    want = (torch.from_numpy(a).float().div(255).unsqueeze(0) - 0.1307) / 0.3081
    np.testing.assert_allclose(t(a).numpy(), want.numpy(), rtol=1e-6, atol=1e-7)


def test_lambda_applies_the_function_and_refuses_what_is_not_callable():
    t = T.Compose([T.ToTensor(), T.Lambda(lambda x: x.flatten())])
    assert tuple(t(np.zeros((28, 28), np.uint8)).shape) == (784,)
    assert repr(T.Lambda(abs)) == "Lambda()"
    with pytest.raises(TypeError, match="Argument lambd should be callable, got 'int'"):
        T.Lambda(3)


@pytest.mark.parametrize("channels,mode", [(1, "L"), (2, "LA"), (3, "RGB"), (4, "RGBA")])
def test_to_pil_image_scales_floats_to_bytes_in_pillows_mode(channels, mode):
    x = pg.tensor(_RNG.random((channels, 5, 6)).astype(np.float32))
    image = T.ToPILImage()(x)
    assert image.mode == mode and image.size == (6, 5)
    want = (x.numpy() * 255).astype(np.uint8).transpose(1, 2, 0)
    np.testing.assert_array_equal(np.array(image).reshape(5, 6, channels), want)
    np.testing.assert_array_equal(T.ToTensor()(image).numpy(), want.transpose(2, 0, 1) / np.float32(255))


def test_to_pil_image_modes_and_refusals():
    assert T.ToPILImage(mode="F")(pg.rand(1, 3, 4)).mode == "F"
    assert T.ToPILImage(mode="L")(np.zeros((3, 4, 3), np.uint8)).mode == "L"         # converted
    assert T.ToPILImage()(np.zeros((3, 4), np.uint8)).mode == "L"
    assert repr(T.ToPILImage()) == "ToPILImage()"
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional. Got 4"):
        T.ToPILImage()(pg.rand(1, 1, 3, 4))
    with pytest.raises(ValueError, match="pic should not have > 4 channels. Got 5"):
        T.ToPILImage()(pg.rand(5, 3, 4))
    with pytest.raises(TypeError, match="pic should be Tensor or ndarray"):
        T.ToPILImage()([1, 2])


def test_resize_a_pil_image_as_torchvision_asks_pillow():
    image = Image.fromarray(_RNG.integers(0, 256, (28, 20), dtype=np.uint8))      # (w, h) = (20, 28)
    got = T.Resize(64)(image)                       # the shorter side (w) to 64, the aspect kept
    assert got.size == (64, int(64 * 28 / 20))
    np.testing.assert_array_equal(np.array(got), np.array(image.resize((64, 89), Image.Resampling.BILINEAR)))
    assert T.Resize((30, 40), interpolation=T.InterpolationMode.NEAREST)(image).size == (40, 30)
    assert T.Resize(40, max_size=50)(image).size == (35, 50)       # the longer side capped
    assert T.Resize(20)(image) is image                             # already that size
    assert repr(T.Resize(64)) == "Resize(size=64, interpolation=bilinear, max_size=None, antialias=True)"
    with pytest.raises(ValueError, match="max_size = 30 must be strictly greater"):
        T.Resize(40, max_size=30)(image)


def test_resize_a_tensor_as_interpolate_and_refuse_antialiased_shrinking():
    x = _RNG.random((2, 3, 10, 12)).astype(np.float32)
    want = torch.nn.functional.interpolate(torch.from_numpy(x).reshape(6, 1, 10, 12), size=(20, 24), mode="bilinear",
                                           align_corners=False).reshape(2, 3, 20, 24)
    np.testing.assert_allclose(T.Resize((20, 24))(pg.tensor(x)).numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    assert tuple(T.Resize(5, antialias=False)(pg.tensor(x[0])).shape) == (3, 5, 6)
    with pytest.raises(NotImplementedError, match=r"shrinking a tensor image \(10x12 to 5x6\) with antialias=True"):
        T.Resize(5)(pg.tensor(x[0]))


def test_center_crop_rounds_and_pads_as_torchvision():
    a = _RNG.integers(0, 256, (7, 10), dtype=np.uint8)
    image = Image.fromarray(a)
    np.testing.assert_array_equal(np.array(T.CenterCrop(4)(image)), a[2:6, 3:7])     # round(1.5) = 2, round(3) = 3
    np.testing.assert_array_equal(T.CenterCrop((4, 4))(pg.tensor(a[None])).numpy()[0], a[2:6, 3:7])
    big = T.CenterCrop((9, 10))(pg.tensor(a[None].astype(np.float32))).numpy()[0]  # one row of zeros each side
    assert big.shape == (9, 10) and not big[0].any() and not big[-1].any()
    np.testing.assert_array_equal(big[1:-1], a)
    assert T.CenterCrop(12)(image).size == (12, 12)


def test_center_crop_pads_an_odd_difference_at_the_bottom_right_in_both_kinds():
    a = _RNG.integers(1, 256, (7, 10), dtype=np.uint8)
    for crop in (T.CenterCrop((10, 13)), T.CenterCrop((8, 11))):
        from_image = np.array(crop(Image.fromarray(a)))
        from_tensor = crop(pg.tensor(a[None])).numpy()[0]
        np.testing.assert_array_equal(from_image, from_tensor)
        rows, cols = np.nonzero(from_image)
        assert (rows.min(), cols.min()) == ((crop.size[0] - 7) // 2, (crop.size[1] - 10) // 2)


def test_resize_and_center_crop_refuse_what_is_neither_image_nor_tensor():
    for transform in (T.Resize(4), T.CenterCrop(4)):
        with pytest.raises(TypeError, match="img should be PIL Image or Tensor. Got <class 'list'>"):
            transform([[1, 2], [3, 4]])
