"""Math composed from other differentiable ops (their gradients come from autograd):
elementwise math beyond the primitives (trigonometric and hyperbolic forms, lerp, addcmul,
logaddexp, hypot, fmod, ...), closeness tests, NaN-ignoring and other small reductions, dist;
the sign and floating-point decomposition (signbit, copysign, ldexp, frexp) and integer
gcd/lcm. torch.norm is in linalg/matrix_functions.py.

Differences from PyTorch: signbit(-nan) is False, because the sign bit of a NaN can't be read
without a bit-cast primitive, which the backend boundary lacks (copysign with a -nan `other`
follows)."""
from __future__ import annotations

import math
from collections import namedtuple

from ... import autograd
from ... import dtypes as dt
from ...autograd import node_class, rename
from ...tensor import Tensor
from .._common import check_tensor, floating, same_device, snapshot
from ..creation import _number, ones, ones_like, zeros, zeros_like
from ..linalg.vector_norm import vector_norm
from ..movement.views import grad_for
from .binary import sub, where
from ..autocast_policy import policy

frexp_result = namedtuple("frexp", ["mantissa", "exponent"])
_LN2 = math.log(2.0)


def _float(x):
    return x if x.dtype.is_floating_point else x.to(dt.get_default_dtype())


def square(input):
    """x * x; a bool tensor squares to int64, as torch's pow(x, 2)."""
    x = input
    if x.dtype is dt.bool_:
        x = x.long()
    return rename(x * x, "PowBackward0")      # torch's square is pow(x, 2)


@policy("tan")
def tan(input):
    """Elementwise tangent, computed as sin(input) / cos(input), as torch.tan."""
    x = input
    x = _float(x)
    return rename(x.sin() / x.cos(), "TanBackward0")


@policy("sinh")
def sinh(input):
    """Elementwise hyperbolic sine, (expm1(x) - expm1(-x)) / 2, as torch.sinh."""
    x = input
    x = _float(x)
    return rename((x.expm1() - (-x).expm1()) * 0.5, "SinhBackward0")


@policy("cosh")
def cosh(input):
    """Elementwise hyperbolic cosine, (exp(x) + exp(-x)) / 2, as torch.cosh."""
    x = input
    x = _float(x)
    return rename((x.exp() + (-x).exp()) * 0.5, "CoshBackward0")


@policy("log2")
def log2(input):
    """Elementwise base-2 logarithm, as torch.log2."""
    x = input
    return rename(_float(x).log() * (1.0 / math.log(2.0)), "Log2Backward0")


@policy("log10")
def log10(input):
    """Elementwise base-10 logarithm, as torch.log10."""
    x = input
    return rename(_float(x).log() * (1.0 / math.log(10.0)), "Log10Backward0")


def exp2(input):
    """Elementwise 2**input, computed as exp(input * ln 2), as torch.exp2."""
    x = input
    return rename((_float(x) * math.log(2.0)).exp(), "Exp2Backward0")


def deg2rad(input):
    """Elementwise conversion of degrees to radians, as torch.deg2rad."""
    x = input
    return rename(_float(x) * (math.pi / 180.0), "Deg2RadBackward0")


def rad2deg(input):
    """Elementwise conversion of radians to degrees, as torch.rad2deg."""
    x = input
    return rename(_float(x) * (180.0 / math.pi), "Rad2DegBackward0")


def frac(input):
    """Elementwise fractional part input - trunc(input), with input's sign, as torch.frac."""
    x = input
    return rename(x - x.trunc(), "FracBackward0")


def lerp(input, end, weight):
    """input + weight * (end - input)."""
    # torch's overloads: lerp(Scalar weight) is LerpBackward0, lerp(Tensor weight) LerpBackward1
    return rename(input + weight * (end - input),
                  "LerpBackward1" if isinstance(weight, Tensor) else "LerpBackward0")


@policy("addcmul")
def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2, elementwise with broadcasting, as torch.addcmul."""
    return rename(input + value * tensor1 * tensor2, "AddcmulBackward0")


@policy("addcdiv")
def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2, elementwise with broadcasting, as torch.addcdiv.
    Integer tensor1 and tensor2 are divided truly (to float), where PyTorch raises."""
    return rename(input + value * tensor1 / tensor2, "AddcdivBackward0")


class _PairBackward(autograd.Node):
    """A binary op's node whose gradients are torch's formulas `grads(g, a, b, out)` (a
    composition's autograd would give NaN at the edge values they handle)."""

    def backward(self, g):
        a, b, out = self.saved
        ga, gb = self.grads(g, a, b, out)
        return (grad_for(ga, a) if a._requires_grad else None,
                grad_for(gb, b) if isinstance(b, Tensor) and b._requires_grad else None)


def _pair(node_name, a, b, out, grads):
    """Record out = op(a, b) (computed without a graph) with a _PairBackward node of torch's
    class node_name; operands of another dtype join it through a differentiable cast."""
    if autograd.needs_grad(a, *(b,) if isinstance(b, Tensor) else ()):
        a = a if a.dtype is out.dtype else a.to(out.dtype)
        b = b if not isinstance(b, Tensor) or b.dtype is out.dtype else b.to(out.dtype)
        node = node_class(_PairBackward, node_name)()
        node.grads, node.saved = grads, (snapshot(a), snapshot(b) if isinstance(b, Tensor) else b, out)
        autograd.record(node, (a, b if isinstance(b, Tensor) else None), out)
    return out


def logaddexp(input, y):
    """log(exp(x) + exp(y)) without overflow. The gradients are torch's, g / (1 + exp(y - x))
    and g / (1 + exp(x - y)): 1 and 0 beside an infinity, NaN where both are the same one."""
    x = input
    with autograd.no_grad():
        m = x.maximum(y)
        m = m.masked_fill(m.isinf(), 0.0)       # both -inf (or +inf): keep exp finite
        out = ((x - m).exp() + (y - m).exp()).log() + m
    return _pair("LogaddexpBackward0", x, y, out,
                 lambda g, x, y, out: (g / (1 + (y - x).exp()), g / (1 + (x - y).exp())))


def hypot(input, y):
    """sqrt(x^2 + y^2) as C's hypot: scaled by the larger magnitude, so neither overflows nor
    underflows (hypot(1e30, 0) in float32, hypot of subnormals), and an infinity beats a NaN.
    The gradients are torch's, g * x / out and g * y / out."""
    x = input
    with autograd.no_grad():
        ax, ay = x.abs(), y.abs()
        big, small = ax.maximum(ay), ax.minimum(ay)
        scale = where((big == 0) | big.isinf(), 1.0, big)      # (0 / 0 and inf / inf)
        r = small / scale
        out = big * (1 + r * r).sqrt()
        out = where(ax.isinf() | ay.isinf(), math.inf, out)
    return _pair("HypotBackward0", x, y, out, lambda g, x, y, out: (g * x / out, g * y / out))


def isclose(input, other, rtol=1e-5, atol=1e-8, equal_nan=False):
    """|input - other| <= atol + rtol * |other|, elementwise (infinities equal when equal)."""
    close = (input - other).abs() <= atol + rtol * other.abs()
    close = close | (input == other)
    if equal_nan:
        close = close | (input.isnan() & other.isnan())
    return close


def allclose(input, other, rtol=1e-5, atol=1e-8, equal_nan=False):
    """Whether isclose(input, other, rtol, atol, equal_nan) holds everywhere, a Python bool, as
    torch.allclose."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other):
    """True if both have the same shape and elements."""
    return tuple(input.shape) == tuple(other.shape) and bool((input == other).all())


def count_nonzero(input, dim=None):
    """The number of nonzero elements, in all or along dim, as torch.count_nonzero."""
    return (input != 0).sum(dim) if dim is not None else (input != 0).sum()


def nansum(input, dim=None, keepdim=False):
    """Sum treating NaN as zero, over all elements or along dim, as torch.nansum (no dtype
    argument)."""
    zeroed = input.masked_fill(input.isnan(), 0)
    out = zeroed.sum() if dim is None else zeroed.sum(dim, keepdim=keepdim)
    return rename(out, "NansumBackward0")


def nanmean(input, dim=None, keepdim=False):
    """Mean of the non-NaN elements, over all or along dim, as torch.nanmean (no dtype
    argument)."""
    counts = (~input.isnan()).to(input.dtype)
    if dim is None:
        return nansum(input) / counts.sum()
    return nansum(input, dim, keepdim) / counts.sum(dim, keepdim=keepdim)


class Atan2Backward0(autograd.Node):
    """torch's atan2_backward: g * x / (y^2 + x^2) to y and g * -y / (y^2 + x^2) to x, the
    reciprocal set to 0 where the sum of squares is 0 (at the origin, or underflowed at
    subnormal operands): zero, not NaN, gradients there."""

    def backward(self, g):
        y, x = self.saved
        denom = y * y + x * x
        recip = where(denom == 0, 0.0, denom.reciprocal())
        gy = grad_for(g * x * recip, y) if y._requires_grad else None
        gx = grad_for(g * -y * recip, x) if x._requires_grad else None
        return gy, gx


@policy("atan2")
def atan2(input, other):
    """The angle of the point (other, input), in [-pi, pi] (PyTorch's atan2(y, x)), with C's
    special values: the signs of zeros count (atan2(+-0, -0) is +-pi), infinities give
    multiples of pi/4, and a NaN on either side gives NaN."""
    check_tensor(input, "atan2")
    check_tensor(other, "atan2", "other")
    same_device("atan2", input, other)
    dtype = floating(dt.result_type(input, other))
    y, x = input.to(dtype), other.to(dtype)
    with autograd.no_grad():
        ay, ax = y.abs(), x.abs()
        theta = (ay / ax).atan()                                # first quadrant
        theta = where((ay == 0) & (ax == 0), 0.0, theta)        # (0 / 0)
        theta = where(ay.isinf() & ax.isinf(), math.pi / 4, theta)   # (inf / inf)
        theta = where(signbit(x), math.pi - theta, theta)
        out = where(signbit(y), -theta, theta)
    if autograd.needs_grad(y, x):
        node = Atan2Backward0()
        node.saved = (snapshot(y), snapshot(x))
        autograd.record(node, (y, x), out)
    return out


def logit(input, eps=None):
    """Elementwise log(p / (1 - p)), p = input clamped to [eps, 1 - eps] when eps is given, as
    torch.logit."""
    x = _float(input)
    if eps is not None:
        x = x.clamp(eps, 1 - eps)
    return rename((x / (1 - x)).log(), "LogitBackward0")


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN -> nan, +inf -> posinf (default: the dtype's largest), -inf -> neginf (its lowest)."""
    if not input.dtype.is_floating_point:
        return input.clone()
    info = dt.finfo(input.dtype)
    x = input.masked_fill(input.isnan(), nan)
    x = x.masked_fill(x == math.inf, info.max if posinf is None else posinf)
    return rename(x.masked_fill(x == -math.inf, info.min if neginf is None else neginf),
                  "NanToNumBackward0")


def fmax(input, other):
    """maximum ignoring NaN (NaN only where both are). The gradient goes to input where
    input >= other or other is NaN, else to other (ties: all to input), as torch's."""
    return rename(where((input >= other) | other.isnan(), input, other), "FmaxBackward0")


def fmin(input, other):
    """minimum ignoring NaN, its gradient as fmax's."""
    return rename(where((input <= other) | other.isnan(), input, other), "FminBackward0")


def fmod(input, other):
    """The C remainder: a - trunc(a / b) * b, with the sign of the dividend (a zero result
    too), and a itself for a finite a and an infinite b. Floats compute it exactly as
    remainder(|a|, |b|) with a's sign (for non-negative operands the two agree, and the mod
    primitive is exact where a - trunc(a / b) * b is not: a huge quotient, a subnormal b).
    The gradients are torch's: g to a, -g * trunc(a / b) to b."""
    if not input.dtype.is_floating_point and not (isinstance(other, Tensor) and other.dtype.is_floating_point) \
            and not isinstance(other, float):
        q = input / other
        return input - q.trunc().to(input.dtype) * other
    with autograd.no_grad():
        r = input.abs() % (other.abs() if isinstance(other, Tensor) else abs(other))
        out = where(signbit(input), -r, r)
    # torch's overloads: fmod(Tensor) is FmodBackward1, fmod(Scalar) FmodBackward0
    return _pair("FmodBackward1" if isinstance(other, Tensor) else "FmodBackward0", input, other, out,
                 lambda g, a, b, out: (g, -g * (a / b).trunc()))


def heaviside(input, values):
    """0 where input < 0, values where input == 0, 1 where input > 0."""
    return where(input == 0, values, (input > 0).to(input.dtype))


def float_power(input, exponent):
    """input ** exponent computed in float64 (the result is float64), as torch.float_power."""
    x = input.to(dt.float64)
    return x ** (exponent.to(dt.float64) if isinstance(exponent, Tensor) else exponent)


@policy("dist")
def dist(input, other, p=2):
    """The p-norm of input - other, as torch.dist."""
    return rename(vector_norm(input - other, p), "DistBackward0")    # (torch.norm with a number p)


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) together."""
    from collections import namedtuple
    pair = namedtuple("aminmax", ["min", "max"])
    if dim is None:
        lo, hi = input.amin(), input.amax()
    else:
        lo, hi = input.amin(dim, keepdim=keepdim), input.amax(dim, keepdim=keepdim)
    # torch records one AminmaxBackward0 for both; paragrad a node each, named as torch's
    return pair(rename(lo, "AminmaxBackward0"), rename(hi, "AminmaxBackward0"))


def get_device(input):
    """-1 for CPU tensors, else the device index."""
    return -1 if input.device.type == "cpu" else input.device.index


def positive(input):
    """input itself (unary plus); refused for bool, as PyTorch."""
    check_tensor(input, "positive")
    if input.dtype is dt.bool_:
        raise RuntimeError("positive: The `+` operator, on a bool tensor is not supported.")
    return input


def rsub(input, other, *, alpha=1):
    """other - alpha * input (sub with its operands reversed)."""
    check_tensor(input, "rsub")
    out = sub(other, input, alpha=alpha)
    return rename(out, "RsubBackward0" if isinstance(other, Tensor) else "RsubBackward1", input)


def isposinf(input):
    """Elementwise test for +inf, a bool tensor (all False for non-float dtypes), as
    torch.isposinf."""
    check_tensor(input, "isposinf")
    if not input.dtype.is_floating_point:
        return zeros(tuple(input.shape), dtype=dt.bool_, device=input.device)
    return input == math.inf


def isneginf(input):
    """Elementwise test for -inf, a bool tensor (all False for non-float dtypes), as
    torch.isneginf."""
    check_tensor(input, "isneginf")
    if not input.dtype.is_floating_point:
        return zeros(tuple(input.shape), dtype=dt.bool_, device=input.device)
    return input == -math.inf


def isreal(input):
    """True everywhere: paragrad has no complex dtypes."""
    check_tensor(input, "isreal")
    return ones_like(input, dtype=dt.bool_)


def signbit(input):
    """True where the sign bit is set: negative numbers and -0.0. Differs from PyTorch for
    NaN: -nan gives False (reading a NaN's sign needs a bit-cast, which no primitive does)."""
    check_tensor(input, "signbit")
    if input.dtype is dt.bool_ or (not input.dtype.is_floating_point and not input.dtype.is_signed):
        return zeros(tuple(input.shape), dtype=dt.bool_, device=input.device)
    if not input.dtype.is_floating_point:
        return input < 0
    x = input.detach()
    return (x < 0) | ((x == 0) & (x.reciprocal() < 0))          # 1 / -0.0 = -inf


def copysign(input, other):
    """|input| with the sign of other (-0.0 counts as negative), in a floating dtype. The
    gradient to input is +-1 (0 where input is 0, NaN where it is infinite) and to other 0,
    as PyTorch."""
    check_tensor(input, "copysign")
    dtype = floating(dt.result_type(input, other))
    with autograd.no_grad():
        mag = input.to(dtype).abs()
        if isinstance(other, Tensor):
            same_device("copysign", input, other)
            out = where(signbit(other), -mag, mag)
        else:
            out = -mag if math.copysign(1.0, _number(other, "copysign", "other")) < 0 else mag
    # torch's gradients: g * out / x (+-1, NaN at an infinite x), 0 where x is 0; 0 to other
    # torch's overloads: copysign(Tensor) is CopysignBackward0, copysign(Scalar) CopysignBackward1
    node_name = "CopysignBackward0" if isinstance(other, Tensor) else "CopysignBackward1"
    return _pair(node_name, input, other, out, lambda g, x, other, out: (
        g * where(x == 0, 0.0, out / x), zeros_like(other) if isinstance(other, Tensor) else None))


def ldexp(input, other):
    """input * 2**other, computed in the promoted floating dtype."""
    check_tensor(input, "ldexp")
    check_tensor(other, "ldexp", "other")
    dtype = floating(dt.result_type(input, other))
    return rename(input.to(dtype) * (2.0 ** other.to(dtype)), "LdexpBackward0")


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2**exponent, |mantissa| in [0.5, 1) (0, inf
    and nan give themselves and exponent 0); exponent is int32. The mantissa's gradient is
    grad / 2**exponent, as PyTorch."""
    check_tensor(input, "frexp")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"frexp(): only supports floating-point dtypes, got {input.dtype}")
    x = input.to(dt.float64)        # exact for every float dtype, with room for subnormals
    with autograd.no_grad():
        a = x.abs()
        regular = (a != 0) & a.isfinite()
        a = where(regular, a, 1.0)
        e = where(regular, (a.log() * (1.0 / math.log(2.0))).floor() + 1, 0.0)
        m = _scale_down(a, e)
        # log2's rounding can put e one off near powers of two: one correction step
        e = where(regular, e + (m >= 1).to(e.dtype) - (m < 0.5).to(e.dtype), 0.0)
    return frexp_result(rename(_scale_down(x, e).to(input.dtype), "FrexpBackward0"), e.to(dt.int32))


def _scale_down(x, e):
    """x / 2**e, exact, e from -1073 to 1024: 2**e is applied in two halves, each a normal
    float64 (2**1024 itself overflows)."""
    half = (e * 0.5).floor()
    for part in (half, e - half):
        scale = _pow2(part.abs())
        x = where(part < 0, x * scale, x / scale)
    return x


def _pow2(n):
    """2**n for integral float64 n in [0, 1024), exact: the product of one exact power of two per
    bit of n (CUDA's pow(2, n) was measured an ulp off for |n| near 510)."""
    out = ones(tuple(n.shape), dtype=dt.float64, device=n.device)
    for bit in range(10):
        is_set = (n * 0.5 ** bit).floor() % 2 == 1
        out = where(is_set, out * 2.0 ** (1 << bit), out)
    return out


def sinc(input):
    """sin(pi x) / (pi x), 1 at 0 (gradient 0 there). Half types compute in float32."""
    check_tensor(input, "sinc")
    out_dtype = floating(input.dtype)
    x = input.to(dt.float32) if out_dtype.itemsize == 2 else input.to(out_dtype)
    zero = x == 0
    px = where(zero, 1.0, x * math.pi)          # (a safe denominator where x == 0)
    return rename(where(zero, 1.0, px.sin() / px).to(out_dtype), "SincBackward0")


def _int_operands(op, input, other):
    check_tensor(input, op)
    check_tensor(other, op, "other")
    for t in (input, other):
        if t.dtype.is_floating_point or t.dtype is dt.bool_:
            raise NotImplementedError(f"{op}: not implemented for {t.dtype} (integer dtypes only)")
    dtype = dt.result_type(input, other)
    return input.to(dtype), other.to(dtype)


def gcd(input, other):
    """The greatest common divisor, elementwise (non-negative; gcd(0, 0) = 0). Euclid's
    algorithm: one remainder step over all elements per round, until every remainder is zero
    (a host read per round; at most ~92 rounds for int64)."""
    a, b = _int_operands("gcd", input, other)
    a, b = a.abs(), b.abs()
    a, b = a + b * 0, b + a * 0                 # broadcast to the result's shape
    while bool((b != 0).any()):
        live = b != 0
        r = a % where(live, b, 1)
        a, b = where(live, b, a), where(live, r, 0)
    return a


def lcm(input, other):
    """The least common multiple, elementwise: |a / gcd(a, b) * b|, 0 where gcd is 0."""
    a, b = _int_operands("lcm", input, other)
    g = gcd(a, b)
    zero = g == 0
    return where(zero, 0, (a // where(zero, 1, g) * b).abs())


def logaddexp2(input, other):
    """log2(2**input + 2**other), through logaddexp in natural-log units."""
    check_tensor(input, "logaddexp2")
    return rename(logaddexp(input * _LN2, other * _LN2) * (1.0 / _LN2), "Logaddexp2Backward0")
