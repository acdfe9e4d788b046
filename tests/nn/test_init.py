"""nn.init against the theory PyTorch implements: sample statistics of large tensors (mean, std,
bounds), calculate_gain values equal torch's, Linear's default init, deterministic fills, and
that initializers fill in place without recording a graph."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn as nn
from paragrad.nn import init
from tests.helpers import _np

SHAPE = (400, 500)          # fan_in 500, fan_out 400, 200k samples
FAN_IN, FAN_OUT = 500, 400
N = SHAPE[0] * SHAPE[1]


def stats(t):
    a = _np(t).astype(np.float64)
    return a.mean(), a.std(), a.min(), a.max()


def check_uniform(t, bound, lo=None):
    """U(lo, bound) (lo = -bound by default): bounds hold, mean and std match within 5 sigma."""
    lo = -bound if lo is None else lo
    mean, std, mn, mx = stats(t)
    width = bound - lo
    true_std = width / math.sqrt(12)
    assert lo <= mn and mx <= bound, f"samples outside [{lo}, {bound}]: [{mn}, {mx}]"
    assert mn < lo + 0.01 * width and mx > bound - 0.01 * width        # the whole range is used
    assert abs(mean - (lo + bound) / 2) < 5 * true_std / math.sqrt(N)
    assert abs(std / true_std - 1) < 0.01


def check_normal(t, std_true, mean_true=0.0):
    mean, std, _, _ = stats(t)
    assert abs(mean - mean_true) < 5 * std_true / math.sqrt(N)
    assert abs(std / std_true - 1) < 0.01


def fresh(device, shape=SHAPE, dtype=pg.float32):
    return nn.Parameter(pg.empty(*shape, device=device, dtype=dtype))


@pytest.mark.parametrize("a,b", [(0.0, 1.0), (-3.0, 3.0), (2.0, 2.5)])
def test_uniform(a, b, device):
    t = fresh(device)
    assert init.uniform_(t, a, b) is t
    check_uniform(t, b, a)


@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (2.0, 0.02), (-1.0, 3.0)])
def test_normal(mean, std, device):
    t = fresh(device)
    assert init.normal_(t, mean, std) is t
    check_normal(t, std, mean)


@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_xavier_uniform(gain, device):
    t = init.xavier_uniform_(fresh(device), gain=gain)
    check_uniform(t, gain * math.sqrt(6.0 / (FAN_IN + FAN_OUT)))


@pytest.mark.parametrize("gain", [1.0, init.calculate_gain("relu")])
def test_xavier_normal(gain, device):
    t = init.xavier_normal_(fresh(device), gain=gain)
    check_normal(t, gain * math.sqrt(2.0 / (FAN_IN + FAN_OUT)))


KAIMING = [
    (0, "fan_in", "leaky_relu"), (0, "fan_out", "leaky_relu"), (0, "fan_in", "relu"),
    (0, "fan_out", "relu"), (math.sqrt(5), "fan_in", "leaky_relu"), (0.2, "fan_out", "leaky_relu"),
    (0, "fan_in", "linear"), (0, "fan_in", "tanh"), (0, "fan_in", "selu"),
]


def kaiming_std(a, mode, nonlinearity):
    fan = FAN_IN if mode == "fan_in" else FAN_OUT
    return torch.nn.init.calculate_gain(nonlinearity, a) / math.sqrt(fan)


@pytest.mark.parametrize("a,mode,nonlinearity", KAIMING)
def test_kaiming_uniform(a, mode, nonlinearity, device):
    t = init.kaiming_uniform_(fresh(device), a=a, mode=mode, nonlinearity=nonlinearity)
    check_uniform(t, math.sqrt(3) * kaiming_std(a, mode, nonlinearity))


@pytest.mark.parametrize("a,mode,nonlinearity", KAIMING)
def test_kaiming_normal(a, mode, nonlinearity, device):
    t = init.kaiming_normal_(fresh(device), a=a, mode=mode, nonlinearity=nonlinearity)
    check_normal(t, kaiming_std(a, mode, nonlinearity))


def test_fans_of_conv_shaped_tensors(device):
    """(out, in, kh, kw): fans multiply by the receptive field, as in torch."""
    t = fresh(device, (64, 32, 3, 3))
    tt = torch.empty(64, 32, 3, 3)
    assert init._calculate_fan_in_and_fan_out(t) == torch.nn.init._calculate_fan_in_and_fan_out(tt)
    init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu")
    bound = math.sqrt(3) * math.sqrt(2) / math.sqrt(64 * 9)
    assert _np(t).max() <= bound and _np(t).min() >= -bound and _np(t).max() > 0.95 * bound


def test_trunc_normal(device):
    t = init.trunc_normal_(fresh(device), mean=0.5, std=1.0, a=-1.0, b=2.0)
    mean, std, mn, mx = stats(t)
    assert -1.0 <= mn and mx <= 2.0
    # moments of N(0.5, 1) truncated to [-1, 2], i.e. standard bounds alpha=-1.5, beta=1.5
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    Z = math.erf(1.5 / math.sqrt(2))
    assert abs(mean - 0.5) < 0.01
    true_var = 1 - 2 * 1.5 * phi(1.5) / Z
    assert abs(std / math.sqrt(true_var) - 1) < 0.01


GAINS = [("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None),
         ("conv_transpose1d", None), ("conv_transpose2d", None), ("conv_transpose3d", None),
         ("sigmoid", None), ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
         ("leaky_relu", 1), ("leaky_relu", math.sqrt(5)), ("selu", None)]


@pytest.mark.parametrize("nonlinearity,param", GAINS)
def test_calculate_gain_matches_torch(nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param), rel=1e-12)


def test_calculate_gain_errors():
    with pytest.raises(ValueError):
        init.calculate_gain("swish")
    with pytest.raises(ValueError):
        torch.nn.init.calculate_gain("swish")


def test_fan_of_1d_tensor_raises(device):
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(fresh(device, (10,)))
    with pytest.raises(ValueError):
        init.kaiming_normal_(fresh(device), mode="fan_avg")


@pytest.mark.parametrize("in_features", [1, 16, 300])
def test_linear_default_init_matches_torch_distribution(in_features, device):
    out_features = max(8, 60_000 // in_features)
    m = nn.Linear(in_features, out_features).to(device)
    bound = 1 / math.sqrt(in_features)
    w, b = _np(m.weight), _np(m.bias)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() / (1 / math.sqrt(3 * in_features)) - 1) < 0.03
    assert abs(w.mean()) < 5 * bound / math.sqrt(3 * w.size)
    tm = torch.nn.Linear(in_features, out_features)
    assert abs(w.std() / tm.weight.detach().numpy().std() - 1) < 0.05


def test_linear_init_is_reproducible_per_seed():
    pg.manual_seed(7)
    a = _np(nn.Linear(5, 5).weight)
    pg.manual_seed(7)
    b = _np(nn.Linear(5, 5).weight)
    c = _np(nn.Linear(5, 5).weight)
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_deterministic_fills(dtype, device):
    dt = getattr(pg, dtype)
    t = fresh(device, (3, 5), dt)
    assert init.zeros_(t) is t
    np.testing.assert_array_equal(_np(t), np.zeros((3, 5)))
    init.ones_(t)
    np.testing.assert_array_equal(_np(t), np.ones((3, 5)))
    init.constant_(t, -2.5)
    np.testing.assert_array_equal(_np(t), np.full((3, 5), -2.5))
    init.eye_(t)
    np.testing.assert_array_equal(_np(t), torch.nn.init.eye_(torch.empty(3, 5)).numpy())
    assert t.dtype is dt
    with pytest.raises(ValueError):
        init.eye_(fresh(device, (2, 2, 2)))


INITS = [
    lambda t: init.uniform_(t, -1, 1), lambda t: init.normal_(t), lambda t: init.trunc_normal_(t),
    lambda t: init.xavier_uniform_(t), lambda t: init.xavier_normal_(t),
    lambda t: init.kaiming_uniform_(t), lambda t: init.kaiming_normal_(t),
    lambda t: init.zeros_(t), lambda t: init.ones_(t), lambda t: init.constant_(t, 0.3),
    lambda t: init.eye_(t),
]


@pytest.mark.parametrize("fn", INITS, ids=["uniform", "normal", "trunc_normal", "xavier_u", "xavier_n",
                                           "kaiming_u", "kaiming_n", "zeros", "ones", "constant", "eye"])
def test_init_records_no_graph(fn, device):
    p = nn.Parameter(pg.empty(6, 4, device=device))
    x = pg.ones(6, 4, device=device)
    before = p._data
    out = fn(p)                               # grad mode is on: the init still runs under no_grad
    assert out is p and p.is_leaf and p.grad_fn is None and p.requires_grad
    assert p._data is before                  # filled in place, same buffer
    (p * x).sum().backward()                  # still a usable leaf: gradient lands in .grad
    np.testing.assert_array_equal(_np(p.grad), np.ones((6, 4)))


def test_init_with_generator_is_reproducible(device):
    g1, g2 = pg.Generator(device).manual_seed(3), pg.Generator(device).manual_seed(3)
    a = init.kaiming_uniform_(fresh(device, (20, 20)), generator=g1)
    b = init.kaiming_uniform_(fresh(device, (20, 20)), generator=g2)
    np.testing.assert_array_equal(_np(a), _np(b))


@pytest.mark.parametrize("in_features,out_features", [(0, 3), (3, 0)])
def test_zero_sized_linear(in_features, out_features, device):
    with pytest.warns(UserWarning, match="zero-element"):
        m = nn.Linear(in_features, out_features).to(device)
    with pytest.warns(UserWarning):
        t = torch.nn.Linear(in_features, out_features)
    x = np.ones((2, in_features), np.float32)
    np.testing.assert_array_equal(_np(m(pg.tensor(x, device=device))), t(torch.tensor(x)).detach().numpy())


@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (6, 2, 3), (5, 5)])
def test_orthogonal(shape, device):
    w = init.orthogonal_(pg.empty(*shape, device=device), gain=1.5)
    a = _np(w).reshape(shape[0], -1).astype(np.float64)
    small = a @ a.T if a.shape[0] <= a.shape[1] else a.T @ a
    np.testing.assert_allclose(small, 2.25 * np.eye(small.shape[0]), atol=1e-5)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(pg.empty(3))


@pytest.mark.parametrize("shape,groups", [((6, 4, 3, 3), 2), ((4, 4, 5), 1), ((2, 3, 3, 3, 3), 1), ((3, 5, 1, 1), 1)])
def test_dirac_matches_torch(shape, groups, device):
    t = torch.nn.init.dirac_(torch.empty(shape), groups)
    assert np.array_equal(_np(init.dirac_(pg.empty(*shape, device=device), groups)), t.numpy())
    with pytest.raises(ValueError):
        init.dirac_(pg.empty(3, 3))
    with pytest.raises(ValueError, match="divisible by groups"):
        init.dirac_(pg.empty(3, 3, 3), 2)


def test_sparse(device):
    w = init.sparse_(pg.empty(50, 40, device=device), 0.3, std=0.02)
    a = _np(w)
    assert ((a == 0).sum(0) >= 15).all() and ((a == 0).sum(0) <= 16).all()   # ceil(0.3 * 50) (+ exact zeros)
    assert abs(a[a != 0].std() - 0.02) < 0.003
    with pytest.raises(ValueError, match="2 dimensions"):
        init.sparse_(pg.empty(3), 0.5)
