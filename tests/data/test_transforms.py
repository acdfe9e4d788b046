import numpy as np
import pytest

import paragrad as pg
from paragrad.data import transforms as T


def _batch(device, n=16, c=3, h=8, w=6):
    x = np.random.rand(n, c, h, w).astype(np.float32)
    return x, pg.tensor(x, device=device)


def test_random_crop_takes_windows_of_the_padded_input(device):
    x, t = _batch(device, n=64)
    out = T.random_crop(t, 5, padding=2)
    assert tuple(out.shape) == (64, 3, 5, 5) and out.device == t.device and out.dtype is pg.float32
    got = out.cpu().numpy()
    xp = np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)))                       # (N, C, 12, 10)
    offsets = set()
    for i in range(64):
        hits = [(oy, ox) for oy in range(12 - 5 + 1) for ox in range(10 - 5 + 1)
                if np.array_equal(got[i], xp[i, :, oy:oy + 5, ox:ox + 5])]
        assert hits, f"crop {i} is not a window of its padded image"
        offsets.add(hits[0])
    assert len(offsets) > 10                                                 # offsets differ per image


def test_random_crop_rectangular_no_padding_and_single_image(device):
    x, t = _batch(device, n=4)
    out = T.random_crop(t, (8, 3))
    assert tuple(out.shape) == (4, 3, 8, 3)
    for i in range(4):
        assert any(np.array_equal(out.cpu().numpy()[i], x[i, :, :, o:o + 3]) for o in range(4))
    full = T.random_crop(t, (8, 6))                                          # only one window
    np.testing.assert_array_equal(full.cpu().numpy(), x)
    one = T.random_crop(t[0], 4, padding=1)
    assert tuple(one.shape) == (3, 4, 4)
    with pytest.raises(ValueError, match="crop size"):
        T.random_crop(t, 11, padding=1)
    with pytest.raises(ValueError, match="N, C, H, W"):
        T.random_crop(t.reshape(-1), 2)


def test_random_crop_gradient_flows_to_the_window(device):
    _, t = _batch(device, n=2, c=1, h=4, w=4)
    t.requires_grad_(True)
    T.random_crop(t, 2, padding=1).sum().backward()
    g = t.grad.cpu().numpy()
    assert set(np.unique(g)) <= {0.0, 1.0} and 0 < g.sum() <= 8


def test_random_horizontal_flip_statistics(device):
    x, t = _batch(device, n=400, c=2, h=3, w=5)
    out = T.random_horizontal_flip(t, p=0.3).cpu().numpy()
    same = np.array([np.array_equal(out[i], x[i]) for i in range(400)])
    mirrored = np.array([np.array_equal(out[i], x[i, :, :, ::-1]) for i in range(400)])
    assert (same | mirrored).all() and not (same & mirrored).any()
    assert 0.22 < mirrored.mean() < 0.38
    np.testing.assert_array_equal(T.random_horizontal_flip(t, p=0.0).cpu().numpy(), x)
    np.testing.assert_array_equal(T.random_horizontal_flip(t, p=1.0).cpu().numpy(), x[..., ::-1])
    with pytest.raises(ValueError, match="p must be"):
        T.random_horizontal_flip(t, p=1.5)


def test_normalize_matches_formula(device):
    x, t = _batch(device)
    mean, std = (0.1, 0.5, -0.2), (0.3, 2.0, 0.7)
    want = (x - np.array(mean, np.float32)[:, None, None]) / np.array(std, np.float32)[:, None, None]
    np.testing.assert_allclose(T.normalize(t, mean, std).cpu().numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(T.Normalize(mean, std)(t[0]).cpu().numpy(), want[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(T.normalize(t, 0.5, 2.0).cpu().numpy(), (x - 0.5) / 2.0, rtol=1e-6)
    with pytest.raises(ValueError, match="one value per channel"):
        T.normalize(t, (0.1, 0.2), (1.0, 1.0))
    with pytest.raises(ValueError, match="zero"):
        T.normalize(t, mean, (1.0, 0.0, 1.0))


def test_seeded_generator_reproduces_and_compose(device):
    _, t = _batch(device, n=32)

    def pipeline(seed):
        g = pg.Generator(device).manual_seed(seed)
        return T.Compose([T.RandomCrop(6, padding=1, generator=g), T.RandomHorizontalFlip(generator=g),
                          T.Normalize((0.5,) * 3, (0.25,) * 3)])
    a, b, c = pipeline(1)(t).cpu().numpy(), pipeline(1)(t).cpu().numpy(), pipeline(2)(t).cpu().numpy()
    assert a.shape == (32, 3, 6, 6)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    p = pipeline(3)
    assert not np.array_equal(p(t).cpu().numpy(), p(t).cpu().numpy())                   # new draws per call
    assert "RandomCrop(size=(6, 6), padding=1)" in repr(p)
    pg.manual_seed(5)
    d = T.random_crop(t, 6, 1).cpu().numpy()
    pg.manual_seed(5)
    np.testing.assert_array_equal(T.random_crop(t, 6, 1).cpu().numpy(), d)       # default generator too
