"""Activations and binary math ops at edge values, against torch: +-0, +-inf, NaN, subnormals
(1e-40 is subnormal in float32, 1e-310 in float64) and each op's kinks, values and gradients,
float32 and float64. NaN-ness, infinities and the sign of every result (zeros included) must
match exactly, other values closely. One tensor holds all the edge values of a case, so a row
here checks them all at once; an elementwise op's gradient at one point can't leak into another.

Known differences are listed in KNOWN with the reason: those points are left out of the main
comparison and checked in test_known_differences, which must fail (strict xfail) so that a fix
shows up as an unexpected pass."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import lib

INF, NAN = math.inf, math.nan
# the same values everywhere; the subnormal column differs per dtype
EDGES = [0.0, -0.0, "tiny", "-tiny", INF, -INF, NAN, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5, 1e30, -1e30]
TINY = {"float32": 1e-40, "float64": 1e-310}


def F(x):
    return lib(x).nn.functional


# name -> (fn, extra kink points)
UNARY = {
    "relu": (lambda x: F(x).relu(x), []),
    "relu6": (lambda x: F(x).relu6(x), [6.0, 7.0]),
    "leaky_relu": (lambda x: F(x).leaky_relu(x, 0.2), []),
    "elu": (lambda x: F(x).elu(x), [-100.0]),
    "elu(alpha=0.5)": (lambda x: F(x).elu(x, 0.5), []),
    "selu": (lambda x: F(x).selu(x), [-100.0]),
    "celu": (lambda x: F(x).celu(x, 2.0), [-100.0]),
    "gelu": (lambda x: F(x).gelu(x), [-10.0, 10.0]),
    "gelu(tanh)": (lambda x: F(x).gelu(x, approximate="tanh"), [-10.0, 10.0]),
    "silu": (lambda x: F(x).silu(x), [-100.0, 100.0]),
    "mish": (lambda x: F(x).mish(x), [-100.0, 100.0]),
    "softplus": (lambda x: F(x).softplus(x), [20.0, 21.0, -100.0]),
    "softplus(beta=2, threshold=5)": (lambda x: F(x).softplus(x, 2.0, 5.0), [2.5, 3.0]),
    "softsign": (lambda x: F(x).softsign(x), []),
    "tanh": (lambda x: lib(x).tanh(x), [20.0, -20.0]),
    "sigmoid": (lambda x: lib(x).sigmoid(x), [100.0, -100.0]),
    "logsigmoid": (lambda x: F(x).logsigmoid(x), [100.0, -100.0]),
    "hardtanh": (lambda x: F(x).hardtanh(x), []),
    "hardtanh(-2, 3)": (lambda x: F(x).hardtanh(x, -2.0, 3.0), [3.0, -2.0]),
    "hardswish": (lambda x: F(x).hardswish(x), [3.0, -3.0, 4.0, -4.0]),
    "hardsigmoid": (lambda x: F(x).hardsigmoid(x), [3.0, -3.0, 4.0, -4.0]),
    "hardshrink": (lambda x: F(x).hardshrink(x), []),
    "softshrink": (lambda x: F(x).softshrink(x), []),
    "tanhshrink": (lambda x: F(x).tanhshrink(x), []),
    "threshold": (lambda x: F(x).threshold(x, 1.0, -7.0), []),
    "rrelu(eval)": (lambda x: F(x).rrelu(x, training=False), []),
}

BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a ** b,
    "atan2": lambda a, b: lib(a).atan2(a, b),
    "fmod": lambda a, b: lib(a).fmod(a, b),
    "remainder": lambda a, b: lib(a).remainder(a, b),
    "maximum": lambda a, b: lib(a).maximum(a, b),
    "minimum": lambda a, b: lib(a).minimum(a, b),
    "fmax": lambda a, b: lib(a).fmax(a, b),
    "fmin": lambda a, b: lib(a).fmin(a, b),
    "hypot": lambda a, b: lib(a).hypot(a, b),
    "copysign": lambda a, b: lib(a).copysign(a, b),
    "logaddexp": lambda a, b: lib(a).logaddexp(a, b),
    "xlogy": lambda a, b: lib(a).xlogy(a, b),
    "logaddexp2": lambda a, b: lib(a).logaddexp2(a, b),
    "float_power": lambda a, b: lib(a).float_power(a, b),
    "lerp": lambda a, b: lib(a).lerp(a, b, 0.25),
}


def _value(v, dtype):
    if v == "tiny":
        return TINY[dtype]
    if v == "-tiny":
        return -TINY[dtype]
    return v


def _unary_points(name, dtype):
    return np.array([_value(v, dtype) for v in EDGES + UNARY[name][1]], dtype=dtype)


def _binary_points(dtype):
    vals = [_value(v, dtype) for v in EDGES]
    a, b = np.meshgrid(vals, vals, indexing="ij")
    return a.reshape(-1).astype(dtype), b.reshape(-1).astype(dtype)


def _neg_zero(x):
    return (x == 0) & np.signbit(x)


def _zero_tie(a, b):
    return (a == 0) & (b == 0) & (np.signbit(a) != np.signbit(b))


def _saturated(f):
    def pred(x):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.abs(f(x)) == 1
    return pred


def _zero_remainder(a, b):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.fmod(a, b) == 0


_TIE = ("the sign of a zero at a signed-zero tie: the backend maximum/minimum primitives "
        "(NumPy's, CuPy's) return their second operand, torch's clamp and maximum the first")
_BUF = ("the sign of a zero gradient where the output saturates: the buffer formulas "
        "-(g (y^2 - 1)) and -(g y (y - 1)), which the CUDA fused kernels round alike, give -0.0")
# Known differences: (op, dtype or None, predicate on the inputs) -> reason
KNOWN = {
    ("relu", None, _neg_zero): _TIE,
    ("relu6", None, _neg_zero): _TIE,
    ("maximum", None, _zero_tie): _TIE,
    ("minimum", None, _zero_tie): _TIE,
    ("remainder", None, _zero_remainder): (
        "the sign of a zero remainder: the backend mod primitive (NumPy's, CuPy's remainder) "
        "gives it the divisor's sign, torch the dividend's"),
    ("tanh", None, _saturated(np.tanh)): _BUF,
    ("sigmoid", None, _saturated(lambda x: 1 / (1 + np.exp(-x)))): _BUF,
    ("hardsigmoid", "float64", lambda x: (x > -3) & (x < 3)): (
        "torch's float64 hardsigmoid gradient is the float32 1/6 (its kernel's constant); "
        "paragrad's is the float64 one"),
}


def _known(op, dtype):
    return [(pred, why) for (o, d, pred), why in KNOWN.items() if o == op and d in (None, dtype)]


def _run(fn, arrays, library):
    """[value, grad of each input] as arrays, the gradient of out.sum()."""
    xs = [library.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*xs)
    out.backward(library.ones_like(out))
    return [out.detach().numpy()] + [x.grad.numpy() if x.grad is not None else
                                     np.zeros(a.shape, a.dtype) for x, a in zip(xs, arrays)]


def _run_torch(fn, arrays):
    """torch one element at a time. Its CPU kernels give some edge values differently in the
    vectorized body of a tensor and in its scalar tail (at a NaN the hardtanh, relu6, hardshrink
    and softshrink gradients are 1 in the scalar kernel and 0 in the vectorized one; elu's and
    hardswish's 1 and NaN; softshrink(-0.5) is -0.0 and 0.0), so a point's result would depend
    on where in the tensor it sits. The scalar kernel is the formula torch documents."""
    rows = [_run(fn, [a[i:i + 1] for a in arrays], torch) for i in range(arrays[0].size)]
    return [np.concatenate(col) for col in zip(*rows)]


def _mismatch(p, t, dtype):
    """Elementwise: True where p and t differ in NaN-ness, infinity, the sign of a zero or an
    infinity, or value (a tiny value beside a zero of the other sign is close, not a mismatch)."""
    p, t = p.astype(np.float64), t.astype(np.float64)
    atol, rtol = (1e-12, 1e-9) if dtype == "float64" else (1e-6, 1e-5)
    nan_p, nan_t = np.isnan(p), np.isnan(t)
    bad = nan_p != nan_t
    both = ~nan_p & ~nan_t
    signed = both & (((p == 0) & (t == 0)) | np.isinf(p) | np.isinf(t))   # zeros and infinities
    bad |= signed & (np.signbit(p) != np.signbit(t))
    bad |= both & (np.isinf(p) != np.isinf(t))
    finite = both & ~np.isinf(p) & ~np.isinf(t)
    with np.errstate(invalid="ignore", over="ignore"):
        bad |= finite & (np.abs(p - t) > atol + rtol * np.abs(t))
    return bad


def _compare(op, fn, arrays, dtype, include):
    """Mismatches among the points where include(*inputs) holds, as readable lines."""
    got, want = _run(fn, arrays, pg), _run_torch(fn, arrays)
    mask = include(*arrays)
    lines = []
    for what, p, t in zip(["value"] + [f"grad {i}" for i in range(len(arrays))], got, want):
        assert p.shape == t.shape, f"{op} {what}: shape {p.shape} != torch {t.shape}"
        assert p.dtype == t.dtype, f"{op} {what}: dtype {p.dtype} != torch {t.dtype}"
        for i in np.nonzero(_mismatch(p, t, dtype) & mask)[0]:
            at = ", ".join(repr(float(a[i])) for a in arrays)
            lines.append(f"{op}({at}) {what}: {float(p[i])!r}, torch {float(t[i])!r}")
    return lines


def _exclude_known(op, dtype):
    known = _known(op, dtype)
    return lambda *xs: ~np.any([pred(*xs) for pred, _ in known], axis=0) if known else \
        np.ones(xs[0].shape, bool)


DTYPES = ["float32", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", UNARY)
def test_activation_edge_values_match_torch(op, dtype):
    lines = _compare(op, UNARY[op][0], [_unary_points(op, dtype)], dtype, _exclude_known(op, dtype))
    assert not lines, "\n".join(lines)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", BINARY)
def test_binary_edge_values_match_torch(op, dtype):
    lines = _compare(op, BINARY[op], list(_binary_points(dtype)), dtype, _exclude_known(op, dtype))
    assert not lines, "\n".join(lines)


def _known_cases():
    for (op, dtype, pred), why in KNOWN.items():
        for d in ([dtype] if dtype else DTYPES):
            yield pytest.param(op, d, pred, id=f"{op}-{d}-{why[:40]}",
                               marks=pytest.mark.xfail(strict=True, reason=why))


@pytest.mark.parametrize("op, dtype, pred", list(_known_cases()))
def test_known_differences(op, dtype, pred):
    if op in UNARY:
        fn, arrays = UNARY[op][0], [_unary_points(op, dtype)]
    else:
        fn, arrays = BINARY[op], list(_binary_points(dtype))
    lines = _compare(op, fn, arrays, dtype, pred)
    assert not lines, "\n".join(lines)
