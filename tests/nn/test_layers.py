"""Layers against torch.nn: the torch module's weights are copied into the paragrad module, then
forward values, input gradients and parameter gradients are compared (a random cotangent, as
check_op). Dropout, being random, is checked by its statistics and its exact gradient rule."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn as nn
from tests.helpers import TOL, _np, assert_close, make_input


def check_module(build, shape, device, dtype="float32", low=-2.0, high=2.0, preprocess=None, seed=0):
    """Build the module in both libraries (torch's weights copied over), run it on the same
    input, compare outputs, then backpropagate one random cotangent and compare the gradients of
    the input and of every parameter."""
    tm = build(torch.nn).to(getattr(torch, dtype))
    pm = build(nn).to(device).to(getattr(pg, dtype))
    pm.load_state_dict(OrderedDict((k, pg.tensor(v.detach().numpy(), device=device))
                                   for k, v in tm.state_dict().items()))
    assert [n for n, _ in pm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    x = make_input(shape, dtype, low, high, np.random.default_rng(seed))
    xt = torch.tensor(x, requires_grad=True)
    xp = pg.tensor(x, device=device, requires_grad=True)
    pre = preprocess or (lambda v: v)
    yt, yp = tm(pre(xt)), pm(pre(xp))
    atol, rtol = TOL[dtype]
    assert_close(yp, yt, atol, rtol, "output")
    w = make_input(tuple(yt.shape), dtype, -1, 1, np.random.default_rng(100))
    (yt * torch.tensor(w)).sum().backward()
    (yp * pg.tensor(w, device=device)).sum().backward()
    assert_close(xp.grad, xt.grad, atol * 10, rtol * 10, "input gradient")
    for (n, pp), (_, tp) in zip(pm.named_parameters(), tm.named_parameters()):
        assert_close(pp.grad, tp.grad, atol * 10, rtol * 10, f"gradient of {n}")
    return pm, yp


LINEAR_CASES = [
    (lambda lib: lib.Linear(3, 4), (3,)),
    (lambda lib: lib.Linear(3, 4), (5, 3)),
    (lambda lib: lib.Linear(3, 4), (2, 6, 3)),
    (lambda lib: lib.Linear(3, 4, bias=False), (3,)),
    (lambda lib: lib.Linear(3, 4, bias=False), (5, 3)),
    (lambda lib: lib.Linear(3, 4, bias=False), (2, 6, 3)),
    (lambda lib: lib.Linear(1, 1), (7, 1)),
    (lambda lib: lib.Linear(16, 2), (2, 2, 3, 16)),
]


@pytest.mark.parametrize("build,shape", LINEAR_CASES, ids=[f"{i}-{s}" for i, (_, s) in enumerate(LINEAR_CASES)])
def test_linear(build, shape, device):
    check_module(build, shape, device)


def test_linear_float64(device):
    check_module(lambda lib: lib.Linear(5, 3), (4, 5), device, dtype="float64")


def test_linear_shape_error(device):
    m = nn.Linear(3, 4).to(device)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        m(pg.ones(2, 5, device=device))


def test_linear_attributes(device):
    m = nn.Linear(3, 4, bias=False, device=device, dtype=pg.float64)
    assert m.bias is None and m.weight.dtype is pg.float64 and m.weight.device == pg.device(device)
    assert (m.in_features, m.out_features) == (3, 4) and tuple(m.weight.shape) == (4, 3)


SHAPE_CASES = [
    (lambda lib: lib.Identity(), (3, 4)),
    (lambda lib: lib.Identity(54, unused="argument"), (2,)),
    (lambda lib: lib.Flatten(), (2, 3, 4, 5)),
    (lambda lib: lib.Flatten(0), (2, 3, 4)),
    (lambda lib: lib.Flatten(1, 2), (2, 3, 4, 5)),
    (lambda lib: lib.Flatten(-3, -2), (2, 3, 4, 5)),
    (lambda lib: lib.Unflatten(1, (2, 3)), (4, 6)),
    (lambda lib: lib.Unflatten(-1, (2, -1)), (4, 3, 6)),
    (lambda lib: lib.Unflatten(0, [2, 2]), (4, 5)),
    (lambda lib: lib.Sequential(lib.Flatten(), lib.Linear(12, 3), lib.Unflatten(1, (3, 1))), (2, 3, 4)),
]


@pytest.mark.parametrize("build,shape", SHAPE_CASES, ids=[f"{i}-{s}" for i, (_, s) in enumerate(SHAPE_CASES)])
def test_shape_layers(build, shape, device):
    check_module(build, shape, device)


ACTIVATIONS = [
    lambda lib: lib.ReLU(),
    lambda lib: lib.GELU(),
    lambda lib: lib.GELU(approximate="tanh"),
    lambda lib: lib.SiLU(),
    lambda lib: lib.Tanh(),
    lambda lib: lib.Sigmoid(),
    lambda lib: lib.Softmax(dim=1),
    lambda lib: lib.Softmax(dim=-1),
    lambda lib: lib.Softmax(dim=0),
    lambda lib: lib.LogSoftmax(dim=1),
    lambda lib: lib.LogSoftmax(dim=0),
    lambda lib: lib.LeakyReLU(),
    lambda lib: lib.LeakyReLU(0.3),
    lambda lib: lib.Softplus(),
    lambda lib: lib.Softplus(beta=2.0, threshold=3.0),    # both branches of the threshold taken
    lambda lib: lib.Softplus(beta=0.5),
]
ACT_IDS = ["relu", "gelu", "gelu-tanh", "silu", "tanh", "sigmoid", "softmax1", "softmax-1", "softmax0",
           "logsoftmax1", "logsoftmax0", "leaky", "leaky0.3", "softplus", "softplus-b2t3", "softplus-b0.5"]


@pytest.mark.parametrize("build", ACTIVATIONS, ids=ACT_IDS)
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 4)])
def test_activations(build, shape, device):
    check_module(build, shape, device, low=-4.0, high=4.0)


@pytest.mark.parametrize("build", ACTIVATIONS, ids=ACT_IDS)
def test_activations_float64(build, device):
    check_module(build, (3, 4), device, dtype="float64", low=-4.0, high=4.0)


def test_activations_extreme_inputs(device):
    x = np.array([[-100.0, -30.0, -1e-3, 0.0, 1e-3, 30.0, 100.0]], np.float32)
    for build in ACTIVATIONS:
        tm, pm = build(torch.nn), build(nn)
        yt = tm(torch.tensor(x))
        yp = pm(pg.tensor(x, device=device))
        assert np.isfinite(_np(yp)).all() == np.isfinite(yt.numpy()).all(), repr(pm)
        assert_close(yp, yt, 1e-5, 1e-5, repr(pm))


@pytest.mark.parametrize("build", [lambda lib: lib.ReLU(inplace=True),
                                   lambda lib: lib.LeakyReLU(0.2, inplace=True),
                                   lambda lib: lib.Dropout(0.0, inplace=True)],
                         ids=["relu", "leaky", "dropout0"])
def test_inplace_activations(build, device):
    pm, yp = check_module(build, (4, 5), device, preprocess=lambda v: v * 1.0)
    x = pg.tensor(make_input((3, 3), "float32"), device=device)
    assert pm(x) is x                  # the result is the input tensor, modified in place


def test_inplace_leaky_relu_gradient_at_zero(device):
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    xt, xp = torch.tensor(x, requires_grad=True), pg.tensor(x, device=device, requires_grad=True)
    torch.nn.LeakyReLU(0.2, inplace=True)(xt * 1).sum().backward()
    nn.LeakyReLU(0.2, inplace=True)(xp * 1).sum().backward()
    assert_close(xp.grad, xt.grad, 1e-7, 1e-7, "gradient")


# ---- Dropout ---------------------------------------------------------------------------------------
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


def test_mlp_forward_backward(device):
    def build(lib):
        return lib.Sequential(lib.Linear(6, 16), lib.GELU(), lib.Linear(16, 16), lib.SiLU(),
                              lib.Dropout(0.5), lib.Linear(16, 3), lib.LogSoftmax(dim=-1)).eval()
    check_module(build, (8, 6), device)
