"""nn.Dropout: its statistics in training, identity in eval, p = 0 and 1, reproducibility per
seed and the invalid-p error."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn as nn
from tests.helpers import _np, make_input


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_train_statistics(p, device):
    m = nn.Dropout(p).to(device)
    assert m.training
    n = 200_000
    x = pg.full((n,), 3.0, device=device, requires_grad=True)
    y = m(x)
    out = _np(y)
    zero = out == 0
    sigma = np.sqrt(p * (1 - p) / n)
    assert abs(zero.mean() - p) < 5 * sigma, f"zero fraction {zero.mean()} for p={p}"
    np.testing.assert_allclose(out[~zero], 3.0 / (1 - p), rtol=1e-6)     # survivors scaled
    w = np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32)
    (y * pg.tensor(w, device=device)).sum().backward()
    g = _np(x.grad)
    np.testing.assert_allclose(g[zero], 0.0)
    np.testing.assert_allclose(g[~zero], w[~zero] / (1 - p), rtol=1e-6)


def test_dropout_eval_is_identity(device):
    m = nn.Dropout(0.7).to(device).eval()
    x = pg.tensor(make_input((50, 20)), device=device, requires_grad=True)
    y = m(x)
    np.testing.assert_array_equal(_np(y), _np(x))
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), np.ones((50, 20)))


def test_dropout_p0_and_p1(device):
    x = pg.tensor(make_input((30, 30)), device=device, requires_grad=True)
    y0 = nn.Dropout(0.0)(x)
    np.testing.assert_array_equal(_np(y0), _np(x))
    y1 = nn.Dropout(1.0)(x)
    yt = torch.nn.Dropout(1.0)(torch.tensor(make_input((30, 30)), requires_grad=True))
    np.testing.assert_array_equal(_np(y1), yt.detach().numpy())       # all zeros
    y1.sum().backward()
    assert not _np(x.grad).any() and np.isfinite(_np(x.grad)).all()


def test_dropout_is_reproducible_per_seed(device):
    x = pg.ones(1000, device=device)
    pg.manual_seed(123)
    a = _np(nn.Dropout(0.5)(x))
    pg.manual_seed(123)
    b = _np(nn.Dropout(0.5)(x))
    c = _np(nn.Dropout(0.5)(x))
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()


def test_dropout_invalid_p():
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="dropout probability"):
            nn.Dropout(p)
        with pytest.raises(ValueError):
            torch.nn.Dropout(p)
