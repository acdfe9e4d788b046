"""Unary elementwise ops and activations against PyTorch, and their gradients against finite
differences. Each lambda runs on both libraries: `ns(x)` is the module of x's library (pg or
torch) and `F(x)` its functional-activation namespace (pg or torch.nn.functional)."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op, fd_check


def ns(x):
    return pg if isinstance(x, pg.Tensor) else torch


def F(x):
    return pg if isinstance(x, pg.Tensor) else torch.nn.functional


# (name, kwargs, low, high): inputs drawn from [low, high). Positive ranges for ops with a
# restricted domain; ranges for rounding ops avoid nothing (their gradient is zero anyway).
MATH = [
    ("neg", {}, -2, 2), ("exp", {}, -2, 2), ("log", {}, 0.1, 3), ("sqrt", {}, 0.1, 3),
    ("rsqrt", {}, 0.1, 3), ("abs", {}, -2, 2), ("sign", {}, -2, 2), ("sin", {}, -3, 3),
    ("cos", {}, -3, 3), ("tanh", {}, -3, 3), ("sigmoid", {}, -4, 4), ("relu", {}, -2, 2),
    ("erf", {}, -2, 2), ("log1p", {}, -0.5, 3), ("expm1", {}, -2, 2),
    ("reciprocal", {}, 0.2, 3), ("floor", {}, -3, 3), ("ceil", {}, -3, 3),
    ("round", {}, -3, 3), ("trunc", {}, -3, 3), ("round", {"decimals": 1}, -3, 3),
]
# activations that live in torch.nn.functional: (name, kwargs, low, high)
ACTIVATIONS = [
    ("gelu", {}, -3, 3), ("gelu", {"approximate": "tanh"}, -3, 3),
    ("gelu", {"approximate": "none"}, -3, 3), ("silu", {}, -4, 4),
    ("softplus", {}, -4, 4), ("softplus", {"beta": 2.0, "threshold": 1.0}, -2, 2),
    ("softplus", {"beta": 0.5}, -30, 30), ("leaky_relu", {}, -2, 2),
    ("leaky_relu", {"negative_slope": 0.2}, -2, 2), ("relu", {}, -2, 2),
    ("sigmoid", {}, -3, 3), ("tanh", {}, -3, 3),
]
FLOATS = ["float32", "float64", "float16"]
ids = lambda rows: [r[0] + "".join(f"-{k}={v}" for k, v in r[1].items()) for r in rows]  # noqa: E731


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,kw,low,high", MATH, ids=ids(MATH))
def test_math_method(device, name, kw, low, high, dtype):
    check_op(lambda x: getattr(x, name)(**kw), [(3, 5)], dtype=dtype, device=device, low=low, high=high)


@pytest.mark.parametrize("name,kw,low,high", MATH, ids=ids(MATH))
def test_math_functional(device, name, kw, low, high):
    check_op(lambda x: getattr(ns(x), name)(x, **kw), [(2, 3, 4)], device=device, low=low, high=high)


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1,)])
@pytest.mark.parametrize("name,kw,low,high", MATH, ids=ids(MATH))
def test_math_odd_shapes(device, name, kw, low, high, shape):
    check_op(lambda x: getattr(x, name)(**kw), [shape], device=device, low=low, high=high)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,kw,low,high", ACTIVATIONS, ids=ids(ACTIVATIONS))
def test_activation(device, name, kw, low, high, dtype):
    check_op(lambda x: getattr(F(x), name)(x, **kw), [(4, 6)], dtype=dtype, device=device,
             low=low, high=high)


@pytest.mark.parametrize("shape", [(), (0,), (0, 3)])
@pytest.mark.parametrize("name,kw,low,high", ACTIVATIONS, ids=ids(ACTIVATIONS))
def test_activation_odd_shapes(device, name, kw, low, high, shape):
    check_op(lambda x: getattr(F(x), name)(x, **kw), [shape], device=device, low=low, high=high)


# int (and bool) inputs: float-only ops return the default float dtype, as torch; the others
# keep the integer dtype. Ranges stay positive where the op needs it.
INT_OPS = [
    ("exp", -3, 3), ("log", 1, 9), ("sqrt", 0, 9), ("rsqrt", 1, 9), ("sin", -3, 3), ("cos", -3, 3),
    ("tanh", -3, 3), ("sigmoid", -3, 3), ("erf", -3, 3), ("log1p", 0, 9), ("expm1", -3, 3),
    ("reciprocal", 1, 9), ("neg", -3, 3), ("abs", -3, 3), ("sign", -3, 3), ("relu", -3, 3),
    ("floor", -3, 3), ("ceil", -3, 3), ("round", -3, 3), ("trunc", -3, 3),
]


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("name,low,high", INT_OPS, ids=[r[0] for r in INT_OPS])
def test_int_inputs(device, name, low, high, dtype):
    if dtype == "uint8":
        low = max(low, 0)
    check_op(lambda x: getattr(ns(x), name)(x), [(3, 4)], dtype=dtype, device=device, low=low,
             high=high, atol=1e-6, rtol=1e-6)   # float32 results: float32 tolerances


@pytest.mark.parametrize("name", ["exp", "sin", "sigmoid", "sqrt", "sign", "logical_not", "isnan"])
def test_bool_inputs(device, name):
    check_op(lambda x: getattr(x, name)(), [(3, 4)], dtype="bool", device=device, atol=1e-6, rtol=1e-6)


# ---- clamp ---------------------------------------------------------------------------------------
CLAMP = [  # (name, fn, shapes)
    ("min_max", lambda x: x.clamp(-0.5, 0.7), [(3, 4)]),
    ("min_only", lambda x: x.clamp(min=-0.5), [(3, 4)]),
    ("max_only", lambda x: x.clamp(max=0.3), [(3, 4)]),
    ("functional", lambda x: ns(x).clamp(x, -1, 1), [(3, 4)]),
    ("clip", lambda x: x.clip(-1, 1), [(3, 4)]),
    ("clamp_min", lambda x: x.clamp_min(0.1), [(3, 4)]),
    ("clamp_max", lambda x: x.clamp_max(0.1), [(3, 4)]),
    ("int_bounds", lambda x: x.clamp(-1, 1), [(3, 4)]),
    ("tensor_min_max", lambda x, lo, hi: x.clamp(lo, hi), [(3, 4), (3, 4), (4,)]),
    ("tensor_min", lambda x, lo: x.clamp(min=lo), [(3, 4), (3, 1)]),
    ("tensor_max", lambda x, hi: ns(x).clamp(x, max=hi), [(3, 4), ()]),
    ("0d", lambda x: x.clamp(-0.5, 0.5), [()]),
    ("empty", lambda x: x.clamp(-0.5, 0.5), [(0, 2)]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,shapes", CLAMP, ids=[r[0] for r in CLAMP])
def test_clamp(device, name, fn, shapes, dtype):
    check_op(fn, shapes, dtype=dtype, device=device)


@pytest.mark.parametrize("fn", [
    lambda x: x.clamp(0, 2), lambda x: x.clamp(min=0.5), lambda x: x.clamp(max=1.5),
    lambda x: x.clamp(min=x.new_tensor(0.5)),
], ids=["int_bounds", "float_min", "float_max", "0d_float_tensor"])
def test_clamp_int_input(device, fn):
    # an int tensor clamped by a float promotes to float, as torch.result_type says
    check_op(fn, [(3, 4)], dtype="int64", device=device, low=-3, high=4)


# ---- predicates and logic ------------------------------------------------------------------------
SPECIAL = np.array([[0.0, -1.5, np.nan, np.inf], [-np.inf, 2.0, -0.0, np.nan]])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite", "logical_not", "sign", "abs", "neg"])
def test_special_values(device, name, dtype):
    check_op(lambda x: getattr(ns(x), name)(x), None, device=device, grad=False,
             inputs=[SPECIAL.astype(dtype)], dtype=dtype)


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite", "logical_not"])
def test_predicates_int(device, name, dtype):
    check_op(lambda x: getattr(x, name)(), [(3, 4)], dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "uint8", "int8"])
@pytest.mark.parametrize("fn", [lambda x: x.bitwise_not(), lambda x: ~x,
                                lambda x: ns(x).bitwise_not(x)], ids=["method", "op", "functional"])
def test_bitwise_not(device, fn, dtype):
    check_op(fn, [(3, 4)], dtype=dtype, device=device, low=-5 if dtype != "uint8" else 0, high=100)


# ---- in-place forms ------------------------------------------------------------------------------
@pytest.mark.parametrize("name,args", [("exp_", ()), ("relu_", ()), ("neg_", ()), ("abs_", ()),
                                       ("sigmoid_", ()), ("tanh_", ()), ("clamp_", (-0.5, 0.5))])
def test_inplace_unary(device, name, args):
    def fn(x):
        y = x.clone()
        r = getattr(y, name)(*args)
        assert r is y
        return y
    check_op(fn, [(3, 4)], device=device)


def test_inplace_unary_leaf_raises(device):
    x = pg.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="exp_"):
        x.exp_()
    assert x.tolist() == [1.0, 1.0, 1.0] and x.grad_fn is None
    with pg.no_grad():
        x.exp_()
    np.testing.assert_allclose(x.detach().cpu().numpy(), np.e, rtol=1e-6)


# ---- finite differences (float64) ----------------------------------------------------------------
FD = [  # (name, fn, low, high): ranges keep away from kinks and domain edges
    ("neg", lambda x: -x, -2, 2), ("exp", lambda x: x.exp(), -2, 2), ("log", lambda x: x.log(), 0.2, 3),
    ("sqrt", lambda x: x.sqrt(), 0.2, 3), ("rsqrt", lambda x: x.rsqrt(), 0.2, 3),
    ("abs", lambda x: x.abs(), 0.1, 2), ("abs_neg", lambda x: x.abs(), -2, -0.1),
    ("sin", lambda x: x.sin(), -3, 3), ("cos", lambda x: x.cos(), -3, 3),
    ("tanh", lambda x: x.tanh(), -2, 2), ("sigmoid", lambda x: x.sigmoid(), -3, 3),
    ("relu_pos", lambda x: x.relu(), 0.1, 2), ("relu_neg", lambda x: x.relu(), -2, -0.1),
    ("erf", lambda x: x.erf(), -2, 2), ("log1p", lambda x: x.log1p(), -0.5, 2),
    ("expm1", lambda x: x.expm1(), -2, 2), ("reciprocal", lambda x: x.reciprocal(), 0.3, 2),
    ("floor", lambda x: x.floor(), 0.1, 0.9), ("ceil", lambda x: x.ceil(), 0.1, 0.9),
    ("round", lambda x: x.round(), 0.1, 0.4), ("trunc", lambda x: x.trunc(), 1.1, 1.9),
    ("sign", lambda x: x.sign(), 0.1, 2),
    ("gelu", lambda x: pg.gelu(x), -3, 3), ("gelu_tanh", lambda x: pg.gelu(x, approximate="tanh"), -3, 3),
    ("silu", lambda x: pg.silu(x), -3, 3), ("softplus", lambda x: pg.softplus(x), -3, 3),
    ("softplus_beta", lambda x: pg.softplus(x, beta=2.0, threshold=3.0), -1, 1),
    ("softplus_linear", lambda x: pg.softplus(x, beta=2.0, threshold=1.0), 0.6, 2),
    ("leaky_relu", lambda x: pg.leaky_relu(x, 0.1), 0.1, 2),
    ("leaky_relu_neg", lambda x: pg.leaky_relu(x, 0.1), -2, -0.1),
    ("clamp_inside", lambda x: x.clamp(-5, 5), -2, 2), ("clamp_outside", lambda x: x.clamp(max=-3), -2, 2),
    ("chain", lambda x: (x.sin() * x.exp()).tanh(), -1, 1),
]


@pytest.mark.parametrize("name,fn,low,high", FD, ids=[r[0] for r in FD])
def test_fd(device, name, fn, low, high):
    fd_check(fn, [(3, 4)], device=device, low=low, high=high)


def test_fd_clamp_tensor_bounds(device):
    lo = np.full((3, 4), -0.5)
    x = np.linspace(-2, 2, 12).reshape(3, 4) + 0.01   # no element sits on a bound
    fd_check(lambda x, lo: x.clamp(min=lo, max=lo + 1), None, device=device, inputs=[x, lo])


# ---- errors --------------------------------------------------------------------------------------
ERRORS = [  # (fn, exception, message that names the op); every row also raises in torch
    (lambda x, i, b: ns(x).bitwise_not(x), RuntimeError, "bitwise_not"),
    (lambda x, i, b: F(x).gelu(i), RuntimeError, "gelu|Gelu"),
    (lambda x, i, b: F(x).gelu(x, approximate="foo"), RuntimeError, "approximate"),
    (lambda x, i, b: F(x).silu(i), RuntimeError, "silu"),
    (lambda x, i, b: F(x).softplus(i), RuntimeError, "softplus"),
    (lambda x, i, b: F(x).leaky_relu(i), RuntimeError, "leaky_relu"),
    (lambda x, i, b: ns(x).clamp(x), RuntimeError, "clamp"),
    (lambda x, i, b: -b, RuntimeError, "Negation"),
    (lambda x, i, b: b.abs(), RuntimeError, "abs"),
    (lambda x, i, b: x.clamp(min=ns(x).zeros(5)), RuntimeError, "clamp"),
    (lambda x, i, b: b.floor(), RuntimeError, "floor"),
]


@pytest.mark.parametrize("fn,exc,match", ERRORS)
def test_errors(device, fn, exc, match):
    args = [np.array([0.5, -1.0, 2.0]), np.array([1, 2, 3]), np.array([True, False, True])]
    with pytest.raises(exc):
        fn(*[torch.tensor(a) for a in args])
    p = [pg.tensor(a, device=device) for a in args]
    with pytest.raises(exc, match=match):
        fn(*p)
    assert p[0].tolist() == [0.5, -1.0, 2.0] and p[1].tolist() == [1, 2, 3]  # inputs untouched


def test_relu_backward_edges_match_torch(device):
    """relu(nan) is nan; threshold_backward's rule: 0 where y <= 0 even for a NaN gradient, a
    NaN input passes g."""
    vals, grads = [-1.0, 0.0, 2.0, float("nan")], [float("nan"), 1.0, 3.0, 5.0]
    x = pg.tensor(vals, device=device, requires_grad=True)
    y = x.relu()
    y.backward(pg.tensor(grads, device=device))
    t = torch.tensor(vals, requires_grad=True)
    ty = t.relu()
    ty.backward(torch.tensor(grads))
    np.testing.assert_array_equal(y.detach().cpu().numpy(), ty.detach().numpy())    # relu(nan) = nan
    np.testing.assert_array_equal(x.grad.cpu().numpy(), t.grad.numpy())


@pytest.mark.parametrize("op", ["sigmoid", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_activation_backward_fast_path_is_the_composition_bit_for_bit(op, dtype, device):
    """A backend's one-kernel sigmoid/tanh backward rounds as the buffer formulas it replaces
    (fast paths off: the composition), over ordinary values and the edges (0, +-inf, nan)."""
    from paragrad.backends.base import fast_paths
    rng = np.random.default_rng(0)
    vals = np.concatenate([rng.standard_normal(500) * 4, [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(dtype)
    cot = rng.standard_normal(vals.size).astype(dtype)
    grads = []
    for enabled in (True, False):
        with fast_paths(enabled):
            x = pg.tensor(vals, device=device, requires_grad=True)
            getattr(x, op)().backward(pg.tensor(cot, device=device))
            grads.append(x.grad.cpu().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
