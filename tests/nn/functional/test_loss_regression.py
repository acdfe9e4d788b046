"""mse, l1, smooth_l1 and huber losses as one node (ops/neural/regression_loss.py): values, gradients
to input and target, and double backward against torch, on every backend; float64 finite
differences of the node; and the cases left to the composite (broadcasting, mixed dtypes)."""
import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn.functional as F
from paragrad.ops.neural.regression_loss import RegressionLossBackward
from tests.helpers import fd_check

LOSSES = [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
          ("smooth_l1_loss", {"beta": 0.0}), ("huber_loss", {}), ("huber_loss", {"delta": 0.3})]


def _pair(a, device, dtype):
    p = pg.tensor(a, device=device).to(getattr(pg, dtype)).requires_grad_()
    t = torch.tensor(a).to(getattr(torch, dtype)).requires_grad_()
    return p, t


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,kw", LOSSES, ids=[f"{n}-{kw}" for n, kw in LOSSES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_value_and_gradients_match_torch(device, name, kw, reduction, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3))
    y = x + rng.choice([-2.0, -0.4, 0.0, 0.2, 1.5], size=(5, 3))    # both sides of beta / delta, and d = 0
    (px, tx), (py, ty) = _pair(x, device, dtype), _pair(y, device, dtype)
    p, t = getattr(F, name)(px, py, reduction=reduction, **kw), getattr(torch.nn.functional, name)(tx, ty, reduction=reduction, **kw)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(p.detach().cpu().numpy(), t.detach().numpy(), **tol)
    w = np.arange(1, 16, dtype=np.float64).reshape(5, 3) if reduction == "none" else 1.0
    (p * (pg.tensor(w, device=device).to(p.dtype) if reduction == "none" else w)).sum().backward()
    (t * (torch.tensor(w).to(t.dtype) if reduction == "none" else w)).sum().backward()
    np.testing.assert_allclose(px.grad.cpu().numpy(), tx.grad.numpy(), **tol)
    np.testing.assert_allclose(py.grad.cpu().numpy(), ty.grad.numpy(), **tol)


@pytest.mark.parametrize("name,kw", LOSSES, ids=[f"{n}-{kw}" for n, kw in LOSSES])
def test_finite_differences(device, name, kw):
    # (away from the kinks: |d| near beta / delta or 0 has one-sided slopes)
    fd_check(lambda a, b: getattr(F, name)(a, b * 0.1 + 2.0, **kw), [(3, 4), (3, 4)], device=device)


@pytest.mark.parametrize("name,kw", [("mse_loss", {}), ("smooth_l1_loss", {"beta": 2.0}), ("huber_loss", {"delta": 2.0})])
def test_double_backward_matches_torch(device, name, kw):
    x, y = np.linspace(-1, 1, 6).reshape(2, 3), np.linspace(0.5, -0.5, 6).reshape(2, 3)
    (px, tx), (py, ty) = _pair(x, device, "float64"), _pair(y, device, "float64")
    grads = []
    for lib, a, b in ((pg, px, py), (torch, tx, ty)):
        loss = getattr(lib.nn.functional, name)(a, b, **kw)
        (ga,) = lib.autograd.grad(loss, a, create_graph=True)
        (ga ** 2).sum().backward()
        grads.append((a.grad, b.grad))
    for p, t in zip(grads[0], grads[1]):
        np.testing.assert_allclose(p.cpu().numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


def test_what_the_node_leaves_to_the_composite(device):
    a = pg.randn(4, 1, device=device, requires_grad=True)
    with pytest.warns(UserWarning, match="different to the input size"):
        out = F.mse_loss(a, pg.randn(4, device=device))          # broadcasts to (4, 4), as torch
    assert not isinstance(out.grad_fn, RegressionLossBackward)
    mixed = F.l1_loss(pg.randn(3, device=device, dtype=pg.float64), pg.randn(3, device=device))
    assert mixed.dtype is pg.float64
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.mse_loss(a, a.detach(), reduction="avg")


def test_an_in_place_write_to_an_input_is_caught(device):
    a, b = pg.randn(3, device=device, requires_grad=True), pg.randn(3, device=device)
    loss = F.mse_loss(a * 1, b)
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
