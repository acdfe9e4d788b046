"""Unary elementwise ops and activations (and clamp_min/clamp_max, clamp's one-sided forms).

Simple math ops run one backend primitive; their gradients are one-line formulas in `_GRADS`
(of grad g, input x and output y). Activations that are not primitives (gelu, silu, softplus,
clamp) compute with Tensor ops under no_grad and record a single node.
"""
from __future__ import annotations

import math

from ... import autocast_state, autograd
from ... import dtypes as dt
from ...autograd import Node, grad_mode, node_class, record, rename
from ...tensor import Tensor, _wrap
from .._common import alias, check_tensor, floating, snapshot
from ..movement.views import grad_for
from ..autocast_policy import cast, policy

# gradient formulas: (g, x, y) -> dx. Entries marked in _NEEDS_Y use the output y.
_GRADS = {
    "neg": lambda g, x, y: -g,
    "exp": lambda g, x, y: g * y,
    "log": lambda g, x, y: g / x,
    "sqrt": lambda g, x, y: g / (2 * y),
    "rsqrt": lambda g, x, y: g * (-0.5) * y * y * y,
    "abs": lambda g, x, y: g * x.sign(),
    "sin": lambda g, x, y: g * x.cos(),
    "cos": lambda g, x, y: -g * x.sin(),
    "tanh": lambda g, x, y: g * (1 - y * y),
    "sigmoid": lambda g, x, y: g * y * (1 - y),
    "relu": lambda g, x, y: g.masked_fill(y <= 0, 0.0),      # torch: 0 there even for a NaN g
    "erf": lambda g, x, y: g * (2 / math.sqrt(math.pi)) * (-(x * x)).exp(),
    "log1p": lambda g, x, y: g / (1 + x),
    "expm1": lambda g, x, y: g * (y + 1),
    "reciprocal": lambda g, x, y: -g * y * y,
    "asin": lambda g, x, y: g * (1 - x * x).rsqrt(),
    "acos": lambda g, x, y: -g * (1 - x * x).rsqrt(),
    "atan": lambda g, x, y: g / (1 + x * x),
    "asinh": lambda g, x, y: g * (x * x + 1).rsqrt(),
    "acosh": lambda g, x, y: g * (x * x - 1).rsqrt(),
    "atanh": lambda g, x, y: g / (1 - x * x),
}
_NEEDS_Y = {"exp", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "expm1", "reciprocal"}


def _tanh_grad(b, g, y):
    t = b.binary("mul", y, y)
    b.binary("sub", t, 1.0, out=t)              # y^2 - 1 = -(1 - y^2) exactly
    b.binary("mul", g, t, out=t)
    return b.unary("neg", t, out=t)             # g (1 - y^2), bit for bit as the formula


def _sigmoid_grad(b, g, y):
    t = b.binary("mul", g, y)
    b.binary("mul", t, b.binary("sub", y, 1.0), out=t)      # (g y)(y - 1) = -(g y (1 - y))
    return b.unary("neg", t, out=t)


# the same formulas on buffers, for a backward that builds no graph: a third of the host cost
# of three Tensor ops (tanh and sigmoid are the hand-written recurrent cells' activations)
_BUFFER_GRADS = {"tanh": _tanh_grad, "sigmoid": _sigmoid_grad}
_FAST_GRADS = {"tanh": "tanh_backward", "sigmoid": "sigmoid_backward"}
_ZERO_GRAD = {"sign", "floor", "ceil", "round", "trunc"}
_FLOAT_ONLY = {"exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "erf", "log1p",
               "expm1", "reciprocal", "asin", "acos", "atan", "asinh", "acosh", "atanh"}
_BOOL_OUT = {"isnan", "isinf", "isfinite"}
# ops torch allows on bool tensors without converting to float; sign of a bool is a copy of it
_BOOL_SELF = {"sign"}
# rounding an integer tensor copies it (NumPy's rint would return float64)
_INT_SELF = {"floor", "ceil", "round", "trunc"}
_BOOL_ARITH = _BOOL_OUT | _BOOL_SELF | {"not"}


class UnaryBackward(Node):
    def backward(self, g):
        x, y = self.saved
        if autograd.is_grad_enabled() and y is not None:
            y = unary(self.op, x)      # double backward: differentiate through a fresh forward
        elif self.op == "relu" and g.dtype is y.dtype and (fast := g._backend.fast("relu_backward")):
            return _wrap(fast(g._data, y._data), g.dtype, g._device)   # one kernel, not three
        elif self.op in _BUFFER_GRADS and g.dtype is y.dtype and g._data.shape == y._data.shape:
            b = g._backend
            fast = b.fast(_FAST_GRADS[self.op])         # one kernel where the backend has it
            dx = fast(g._data, y._data) if fast is not None else None
            if dx is None:
                dx = _BUFFER_GRADS[self.op](b, g._data, y._data)
            return _wrap(dx, g.dtype, g._device)
        return _GRADS[self.op](g, x, y)


class ZeroBackward(Node):
    def backward(self, g):
        return g * 0


# op -> torch's grad_fn class name (one formula class, UnaryBackward or ZeroBackward, serves all)
_TORCH_NAMES = {
    "neg": "NegBackward0", "exp": "ExpBackward0", "log": "LogBackward0", "sqrt": "SqrtBackward0",
    "rsqrt": "RsqrtBackward0", "abs": "AbsBackward0", "sin": "SinBackward0", "cos": "CosBackward0",
    "tanh": "TanhBackward0", "sigmoid": "SigmoidBackward0", "relu": "ReluBackward0",
    "erf": "ErfBackward0", "log1p": "Log1PBackward0", "expm1": "Expm1Backward0",
    "reciprocal": "ReciprocalBackward0", "asin": "AsinBackward0", "acos": "AcosBackward0",
    "atan": "AtanBackward0", "asinh": "AsinhBackward0", "acosh": "AcoshBackward0",
    "atanh": "AtanhBackward0", "sign": "SignBackward0", "floor": "FloorBackward0",
    "ceil": "CeilBackward0", "round": "RoundBackward0", "trunc": "TruncBackward0",
}
_NODES = {op: node_class(ZeroBackward if op in _ZERO_GRAD else UnaryBackward, name)
          for op, name in _TORCH_NAMES.items()}


def unary(op, x):
    check_tensor(x, op)
    dtype = x.dtype
    if op in _FLOAT_ONLY and not dtype.is_floating_point:
        dtype = dt.get_default_dtype()          # torch: exp(int tensor) -> float
        data = x._backend.cast(x._data, dtype)
    else:
        if dtype is dt.bool_ and op == "neg":
            raise RuntimeError("neg: Negation, the `-` operator, on a bool tensor is not supported. "
                               "If you are trying to invert a mask, use the `~` or "
                               "`logical_not()` operator instead.")
        if dtype is dt.bool_ and op not in _BOOL_ARITH:
            raise NotImplementedError(f"{op}: not implemented for bool tensors")
        data = x._data
    if (dtype is dt.bool_ and op in _BOOL_SELF) or (not dtype.is_floating_point and op in _INT_SELF):
        buf = x._backend.cast(data, dtype)      # the input itself, copied
    else:
        buf = x._backend.unary(op, data)
    out = _wrap(buf, dt.bool_ if op in _BOOL_OUT else dtype, x._device)
    if x._requires_grad and grad_mode._enabled and dtype.is_floating_point and op not in _BOOL_OUT:
        node = _NODES[op]()
        if op not in _ZERO_GRAD:
            node.op = op
            node.saved = (snapshot(x), alias(out) if op in _NEEDS_Y else None)
        record(node, (x,), out)
    return out


# op -> the docstring of its function made by _make
_DOCS = {
    "neg": "Elementwise negation -input, as torch.neg (alias negative).",
    "exp": "Elementwise exponential e**input, as torch.exp.",
    "log": "Elementwise natural logarithm, as torch.log.",
    "sqrt": "Elementwise square root, as torch.sqrt.",
    "rsqrt": "Elementwise reciprocal square root 1 / sqrt(input), as torch.rsqrt.",
    "abs": "Elementwise absolute value |input|, as torch.abs (alias absolute).",
    "sign": "Elementwise sign, -1, 0 or 1 (a bool tensor gives a copy), as torch.sign.",
    "sin": "Elementwise sine, as torch.sin.",
    "cos": "Elementwise cosine, as torch.cos.",
    "tanh": "Elementwise hyperbolic tangent, as torch.tanh.",
    "sigmoid": "Elementwise logistic sigmoid 1 / (1 + exp(-input)), as torch.sigmoid.",
    "relu": "Elementwise ReLU max(0, input), as torch.relu.",
    "erf": "Elementwise error function, as torch.erf.",
    "log1p": "Elementwise log(1 + input), accurate near 0, as torch.log1p.",
    "expm1": "Elementwise exp(input) - 1, accurate near 0, as torch.expm1.",
    "reciprocal": "Elementwise reciprocal 1 / input, as torch.reciprocal.",
    "floor": "Elementwise floor, rounding down (integer tensors are copied), as torch.floor.",
    "ceil": "Elementwise ceiling, rounding up (integer tensors are copied), as torch.ceil.",
    "round": "Elementwise rounding to the nearest integer, halves to even, as torch.round.",
    "trunc": "Elementwise rounding toward zero (integer tensors are copied), as torch.trunc "
             "(alias fix).",
    "isnan": "Elementwise test for NaN, a bool tensor, as torch.isnan.",
    "isinf": "Elementwise test for +inf or -inf, a bool tensor, as torch.isinf.",
    "isfinite": "Elementwise test for a finite value (not inf or NaN), a bool tensor, as "
                "torch.isfinite.",
    "asin": "Elementwise arcsine, as torch.asin (alias arcsin).",
    "acos": "Elementwise arccosine, as torch.acos (alias arccos).",
    "atan": "Elementwise arctangent, as torch.atan (alias arctan).",
    "asinh": "Elementwise inverse hyperbolic sine, as torch.asinh (alias arcsinh).",
    "acosh": "Elementwise inverse hyperbolic cosine, as torch.acosh (alias arccosh).",
    "atanh": "Elementwise inverse hyperbolic tangent, as torch.atanh (alias arctanh).",
}


def _make(op):
    def f(input):
        if autocast_state.on:     # paragrad.amp: the dtype this op runs in
            input, = cast(op, input)
        return unary(op, input)
    f.__name__ = f.__qualname__ = op      # (the reference finds it by module and name)
    f.__doc__ = _DOCS[op]
    return f


(neg, exp, log, sqrt, rsqrt, abs, sign, sin, cos, tanh, sigmoid, relu, erf, log1p, expm1,
 reciprocal, floor, ceil, round_, trunc, isnan, isinf, isfinite) = (
    _make(o) for o in ("neg", "exp", "log", "sqrt", "rsqrt", "abs", "sign", "sin", "cos", "tanh",
                       "sigmoid", "relu", "erf", "log1p", "expm1", "reciprocal", "floor", "ceil",
                       "round", "trunc", "isnan", "isinf", "isfinite"))


def sgn(input):
    """sign, for the real dtypes paragrad has; its node is torch's SgnBackward0."""
    return rename(sign(input), "SgnBackward0", input)


asin, acos, atan, asinh, acosh, atanh = (
    _make(o) for o in ("asin", "acos", "atan", "asinh", "acosh", "atanh"))


def round(input, decimals=0):  # noqa: A001
    """Elementwise rounding to `decimals` decimal places, halves to even, as torch.round.
    With decimals != 0 it computes round(input * 10**decimals) / 10**decimals."""
    x = input
    if decimals == 0:
        return round_(x)
    scale = 10.0 ** decimals
    return rename(round_(x * scale) / scale, "RoundBackward1", x)


def logical_not(input):
    """Elementwise logical NOT (input == 0), a bool tensor, as torch.logical_not."""
    x = input
    return unary("not", x if x.dtype is dt.bool_ else x.ne(0))


def bitwise_not(input):
    """Elementwise bitwise NOT of an integer or bool tensor, as torch.bitwise_not."""
    x = input
    if x.dtype.is_floating_point:    # torch raises NotImplementedError (a RuntimeError) too
        raise NotImplementedError(f"bitwise_not: not implemented for floating-point tensors "
                                  f"({x.dtype}); use logical_not for a mask")
    return unary("not", x)


# ---- composite activations: forward and backward formulas with Tensor ops -------------------
class CompositeBackward(Node):
    """One node for an activation computed from several primitives."""

    def backward(self, g):
        (x,) = self.saved
        return self.grad(g, x, **self.kw)


def _activation(name, node_name, x, forward, grad, **kw):
    """name(x) computed by `forward` without a graph, recorded as one node of torch's class
    `node_name` whose backward is `grad`."""
    check_tensor(x, name)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating-point tensor, got {x.dtype}")
    with autograd.no_grad():
        out = forward(x, **kw)
    if x._requires_grad and grad_mode._enabled:
        node = node_class(CompositeBackward, node_name)()
        node.grad, node.kw, node.saved = grad, kw, (snapshot(x),)
        record(node, (x,), out)
    return out


_SQRT1_2 = 1 / math.sqrt(2)
_SQRT2_PI = math.sqrt(2 / math.pi)


def _gelu_cdf(x):
    """Phi(x), the standard normal CDF: exact gelu is x * Phi(x)."""
    return 0.5 * (1 + (x * _SQRT1_2).erf())


def _gelu_grad(g, x, approximate, cdf=None):
    """g * gelu'(x); cdf: Phi(x) already computed (exact gelu), else computed here."""
    if approximate == "tanh":
        inner = _SQRT2_PI * (x + 0.044715 * x * x * x)
        t = inner.tanh()
        dinner = _SQRT2_PI * (1 + 3 * 0.044715 * x * x)
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * dinner)
    cdf = _gelu_cdf(x) if cdf is None else cdf
    pdf = (-0.5 * x * x).exp() * (1 / math.sqrt(2 * math.pi))
    return g * (cdf + x * pdf)


class GeluBackward0(Node):
    """saved: x, and Phi(x) where the composite forward computed it (exact gelu). The backward:
    a backend's fused kernel, else the formula with the saved Phi (erf is the costly part on the
    CPU); under create_graph the formula recomputes Phi, so that it is differentiable."""

    def backward(self, g):
        x, cdf = self.saved
        if autograd.is_grad_enabled():
            return (_gelu_grad(g, x, self.approximate),)
        fast = g._backend.fast("gelu_backward")
        dx = fast(g._data, x._data, self.approximate) if fast is not None else None
        if dx is not None:
            return (_wrap(dx, g.dtype, g._device),)
        return (_gelu_grad(g, x, self.approximate, cdf),)


def gelu(x, approximate="none"):
    """Elementwise GELU x * Phi(x) (approximate="tanh": the tanh approximation), as
    torch.nn.functional.gelu."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"gelu: approximate argument must be either none or tanh, "
                           f"got {approximate!r}")
    check_tensor(x, "gelu")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"gelu: expected a floating-point tensor, got {x.dtype}")
    fast = x._backend.fast("gelu")
    y = fast(x._data, approximate) if fast is not None else None
    cdf = None
    if y is not None:
        out = _wrap(y, x.dtype, x._device)
    else:
        with autograd.no_grad():
            if approximate == "none":
                cdf = _gelu_cdf(x)
                out = x * cdf
            else:
                out = 0.5 * x * (1 + (_SQRT2_PI * (x + 0.044715 * x * x * x)).tanh())
    if x._requires_grad and grad_mode._enabled:
        node = GeluBackward0()
        node.approximate, node.saved = approximate, (snapshot(x), cdf)
        record(node, (x,), out)
    return out


def silu(x):
    """Elementwise SiLU x * sigmoid(x), as torch.nn.functional.silu (no inplace argument)."""
    return _activation("silu", "SiluBackward0", x, lambda x: x * x.sigmoid(),
                       lambda g, x: g * (s := x.sigmoid()) * (1 + x * (1 - s)))


def _select(cond, a, b):
    from .binary import where
    return where(cond, a, b)


@policy("softplus")
def softplus(x, beta=1.0, threshold=20.0):
    """Elementwise log(1 + exp(beta * x)) / beta, x itself where beta * x > threshold, as
    torch.nn.functional.softplus."""
    def fwd(x, beta, threshold):
        bx = x * beta
        # log1p(exp(bx)) = max(bx, 0) + log1p(exp(-|bx|)): no overflow, even in float16
        soft = (bx.relu() + (-bx.abs()).exp().log1p()) / beta
        return _select(bx > threshold, x, soft)

    def grad(g, x, beta, threshold):
        bx = x * beta           # (torch's test: a NaN takes the sigmoid branch, NaN gradient)
        return g * _select(bx > threshold, 1.0, bx.sigmoid())
    return _activation("softplus", "SoftplusBackward0", x, fwd, grad, beta=beta, threshold=threshold)


def leaky_relu(x, negative_slope=0.01):
    """Elementwise x where x > 0, else negative_slope * x, as torch.nn.functional.leaky_relu
    (no inplace argument)."""
    return _activation("leaky_relu", "LeakyReluBackward0", x,
                       lambda x, s: _select(x > 0, x, x * s),
                       lambda g, x, s: _select(x > 0, g, g * s), s=negative_slope)


# ---- clamp -------------------------------------------------------------------------------------
class ClampBackward(Node):
    """As torch: x gets the gradient where min <= x <= max; a tensor bound gets it where its
    value was taken (min where x < min < max; max where x > max or max < min)."""

    def backward(self, g):
        x, lo, hi = self.saved
        zero = g.new_zeros(())
        keep = None
        if lo is not None:
            keep = x >= lo
        if hi is not None:
            keep = (x <= hi) if keep is None else keep & (x <= hi)
        gx = grad_for(_select(keep, g, zero), x) if x._requires_grad else None
        glo = ghi = None
        if isinstance(lo, Tensor) and lo._requires_grad:
            took = (x < lo) if hi is None else (x < lo) & (lo < hi)
            glo = grad_for(_select(took, g, zero), lo)
        if isinstance(hi, Tensor) and hi._requires_grad:
            took = (x > hi) if lo is None else (x > hi) | (hi < lo)
            ghi = grad_for(_select(took, g, zero), hi)
        return gx, glo, ghi


def clamp(input, min=None, max=None):  # noqa: A002
    """Limit x to [min, max]; min/max are numbers or tensors (which broadcast and promote,
    and receive gradients, as in PyTorch)."""
    # torch's overloads: clamp(Scalar) records ClampBackward1, clamp(Tensor) ClampBackward0
    return _clamp(input, min, max, "ClampBackward1", "ClampBackward0")


def _clamp(x, min, max, scalar_node, tensor_node):  # noqa: A002
    """clamp, recorded as torch's class scalar_node (number bounds) or tensor_node."""
    check_tensor(x, "clamp")
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    with autograd.no_grad():
        out = x
        if min is not None:
            out = _clamp_tensor(out, min, "maximum") if isinstance(min, Tensor) else \
                _clamp_scalar(out, min, "maximum")
        if max is not None:
            out = _clamp_tensor(out, max, "minimum") if isinstance(max, Tensor) else \
                _clamp_scalar(out, max, "minimum")
        if out is x:
            out = x.clone()
    bounds = [b if isinstance(b, Tensor) else None for b in (min, max)]
    if out.dtype.is_floating_point and autograd.needs_grad(x, *bounds):
        tensors = bounds[0] is not None or bounds[1] is not None
        node = node_class(ClampBackward, tensor_node if tensors else scalar_node)()
        node.saved = tuple(snapshot(t) if isinstance(t, Tensor) else t for t in (x, min, max))
        record(node, (x, *bounds), out)
    return out


def _clamp_tensor(x, bound, op):
    try:
        return x.maximum(bound) if op == "maximum" else x.minimum(bound)
    except RuntimeError as e:      # name the op the user called, not its building block
        raise RuntimeError(f"clamp: {e}") from None


def _clamp_scalar(x, v, op):
    dtype = floating(x.dtype) if isinstance(v, float) else x.dtype
    data = x._data if dtype is x.dtype else x._backend.cast(x._data, dtype)
    return _wrap(x._backend.binary(op, data, v), dtype, x._device)


def clamp_min(input, min):  # noqa: A002
    """Elementwise max(input, min), min a number or tensor: clamp with a lower bound only, as
    torch.clamp_min."""
    return _clamp(input, min, None, "ClampMinBackward0", "ClampMinBackward1")


def clamp_max(input, max):  # noqa: A002
    """Elementwise min(input, max), max a number or tensor: clamp with an upper bound only, as
    torch.clamp_max."""
    return _clamp(input, None, max, "ClampMaxBackward0", "ClampMaxBackward1")
