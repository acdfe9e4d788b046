"""Binary elementwise ops: arithmetic, comparisons, logic, where/masked_fill, in-place forms.

Operands are Tensors or Python scalars; dtypes promote as in PyTorch (dtypes.result_type),
shapes broadcast by NumPy rules, and gradients are summed back to each input's shape. The
public functions take torch's parameter names (input, other) and call them a, b inside.
"""
from __future__ import annotations

import numpy as np

from ... import autograd
from ... import dtypes as dt
from ...autograd import Node, record
from ...tensor import Tensor, _wrap, bump_version, rebind
from .._common import alias, floating, same_device, snapshot
from ..movement.views import grad_for


def _scalar(x, op):
    """A Python scalar, or a TypeError naming the op."""
    if isinstance(x, (bool, int, float)):
        return x.item() if isinstance(x, np.generic) else x
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"{op}(): expected a Tensor or a Python number as operand, "
                    f"got {type(x).__name__}")


# backend op -> the public name that error messages use
_NAMES = {"floordiv": "floor_divide", "mod": "remainder", "and": "bitwise_and", "or": "bitwise_or",
          "xor": "bitwise_xor"}


def _wrap_int(v, dtype):
    """A Python int wrapped to an integer dtype's width, as torch does (uint8 + 1000, uint8 - 1)."""
    bits = 8 * dtype.itemsize
    lo = -(1 << (bits - 1)) if dtype.is_signed else 0
    return (v - lo) % (1 << bits) + lo


def _result_dtype(a, b):
    if isinstance(b, Tensor):
        return a.dtype if a.dtype is b.dtype else dt.result_type(a, b)
    ad, tb = a.dtype, type(b)
    if ad.is_floating_point or (tb is int and ad is not dt.bool_):
        return ad
    return dt.result_type(a, b)


def _check_shapes(op, a, b):
    sa, sb = a._data.shape, b._data.shape
    for x, y in zip(reversed(sa), reversed(sb)):    # (NumPy's broadcast_shapes costs 5x more)
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"{op}: The size of tensor a {sa} must match the size of "
                               f"tensor b {sb} (shapes not broadcastable)")


def prepare(op, a, b, compute=None):
    """Promote a (Tensor) and b (Tensor or scalar): -> (a_buf, b_buf_or_scalar, dtype, device).
    `compute(dtype)` may widen the dtype the op runs in (true division of ints -> float)."""
    if isinstance(b, Tensor):
        dev = a._device
        moved = b._device is not dev and b._device != dev
        if moved:
            same_device(op, a, b)
            if a.ndim == 0 and a._device.type == "cpu":
                dev = b._device
        dtype = _result_dtype(a, b)
        if compute is not None:
            dtype = compute(dtype)
        sa, sb = a._data.shape, b._data.shape   # (buffer shapes: tuples, no Size built)
        if sa != sb and sa and sb:              # (a 0-d operand broadcasts to anything)
            _check_shapes(op, a, b)
        ab = a._data if a.dtype is dtype else a._backend.cast(a._data, dtype)
        bb = b._data if b.dtype is dtype else b._backend.cast(b._data, dtype)
        if moved:       # a 0-d CPU operand joins the other's device
            if b._device != dev:
                bb = _to_device_buf(bb, b, dev, dtype)
            else:
                ab = _to_device_buf(ab, a, dev, dtype)
        return ab, bb, dtype, dev
    b = _scalar(b, op)
    dtype = _result_dtype(a, b)
    if compute is not None:
        dtype = compute(dtype)
    if type(b) is int and not dtype.is_floating_point and dtype is not dt.bool_:
        b = _wrap_int(b, dtype)
    ab = a._data if a.dtype is dtype else a._backend.cast(a._data, dtype)
    return ab, b, dtype, a._device


def _to_device_buf(buf, t, dev, dtype):
    """A 0-d CPU tensor joining an op on another device: move its value there."""
    from ...backends import backend_for
    return backend_for(dev).full((), t._backend.to_numpy(buf).item(), dtype, dev.index)


def _binary(op, a, b, node_cls=None, compute=None, out_dtype=None, save=None, name=None):
    """Run backend.binary and record `node_cls` (whose backward gets .saved = save(a, b, out)).
    `name` is the public op name for error messages (default: from the backend op)."""
    name = name or _NAMES.get(op, op)
    if not isinstance(a, Tensor):       # reflected form: scalar op tensor
        if not isinstance(b, Tensor):
            raise TypeError(f"{name}(): expected at least one Tensor operand")
        a = _scalar(a, name)
        d = _result_dtype(b, a)
        if type(a) is int and not d.is_floating_point and d is not dt.bool_:
            a = _wrap_int(a, d)
        a = _wrap(b._backend.full((), a, d, b._device.index), d, b._device)
    ab, bb, dtype, dev = prepare(name, a, b, compute)
    buf = a._backend.binary(op, ab, bb)
    out = _wrap(buf, out_dtype or dtype, dev)
    if node_cls is not None and autograd._grad_enabled and (
            a._requires_grad or (isinstance(b, Tensor) and b._requires_grad)):
        node = node_cls()
        node.a, node.b = a, b
        if save is not None:
            # snapshots: a later in-place op on an input must not change what backward sees
            node.saved = tuple([snapshot(t) if isinstance(t, Tensor) else t for t in save(a, b, out)])
        record(node, (a, b if isinstance(b, Tensor) else None), out)
    return out


def _g(g, t):
    """Gradient for operand t, or None for a Python scalar / a tensor not requiring grad."""
    if isinstance(t, (Tensor, _Operand)) and t._requires_grad:
        return grad_for(g, t)
    return None


class _Operand:
    """What add/sub backward needs of an operand: its flag, shape and dtype, not its values."""
    __slots__ = ("_requires_grad", "shape", "dtype")

    def __init__(self, t):
        self._requires_grad, self.shape, self.dtype = t._requires_grad, t._data.shape, t.dtype


class _ShapesOnly(Node):
    """A node whose formula reads no operand values: torch's AddBackward0 saves no tensor, so
    after backward it keeps just the operands' metadata and allows another backward."""

    def release_variables(self):       # a and b (set in _binary) are all such a node holds
        a, b = self.a, self.b
        self.a = _Operand(a) if isinstance(a, Tensor) else a
        self.b = _Operand(b) if isinstance(b, Tensor) else b


# ---- arithmetic ------------------------------------------------------------------------------
class AddBackward(_ShapesOnly):
    def backward(self, g):
        return _g(g, self.a), _g(g, self.b)


class SubBackward(_ShapesOnly):
    def backward(self, g):
        gb = _g(g, self.b)
        return _g(g, self.a), (-gb if gb is not None else None)


class MulBackward(Node):
    def backward(self, g):
        a, b = self.saved
        need_a = isinstance(a, Tensor) and a._requires_grad
        need_b = isinstance(b, Tensor) and b._requires_grad
        if not autograd._grad_enabled and need_a and need_b:
            grads = _mul_grads_on_buffers(g, a, b)
            if grads is not None:
                return grads
        return (_g(g * b, self.a) if need_a else None, _g(g * a, self.b) if need_b else None)


def _mul_grads_on_buffers(g, a, b):
    """(g * b, g * a) as two backend products when g, a and b share shape, dtype and device
    (a recurrent cell's gates): no broadcast to undo, nothing to record, so none of the
    Tensor ops' checks and wrapping, half of the node's host time on small tensors."""
    gd, ad, bd = g._data, a._data, b._data
    if not (g.dtype is a.dtype is b.dtype and gd.shape == ad.shape == bd.shape
            and g._device is a._device is b._device):
        return None
    k = g._backend
    return (_wrap(k.binary("mul", gd, bd), g.dtype, g._device),
            _wrap(k.binary("mul", gd, ad), g.dtype, g._device))


class DivBackward(Node):
    def backward(self, g):
        a, b = self.saved
        ga = _g(g / b, self.a) if self.a._requires_grad else None
        gb = None
        if isinstance(b, Tensor) and b._requires_grad:
            gb = _g(-g * a / (b * b), b)
        return ga, gb


def _alpha(name, a, b, alpha):
    """b * alpha for add/sub; a float alpha is refused for integer operands, as in torch."""
    if alpha == 1:
        return b
    if isinstance(alpha, float) and not _binary_dtype(a, b).is_floating_point:
        raise RuntimeError(f"{name}: For integral input tensors, argument alpha must not be a "
                           f"floating point number (got alpha={alpha}).")
    return b * alpha


def add(input, other, alpha=1):
    a, b = input, other
    b = _alpha("add", a, b, alpha)
    return _binary("add", a, b, AddBackward)


def sub(input, other, alpha=1):
    a, b = input, other
    if isinstance(a, Tensor) and a.dtype is dt.bool_ and isinstance(b, Tensor) and b.dtype is dt.bool_:
        raise RuntimeError("sub: Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    b = _alpha("sub", a, b, alpha)
    return _binary("sub", a, b, SubBackward)


def mul(input, other):
    a, b = input, other
    return _binary("mul", a, b, MulBackward, save=lambda a, b, out: (a, b))


def div(input, other, rounding_mode=None):
    a, b = input, other
    if rounding_mode is not None:
        if rounding_mode == "floor":    # unlike floor_divide, torch gives it a (zero) gradient
            return _floor_div(a, b, ZeroGradBackward)
        if rounding_mode == "trunc":
            if _binary_dtype(a, b).is_floating_point:
                return div(a, b).trunc()
            # integers: exact (no float round trip): floor, plus one where inexact and signs differ
            q = floor_divide(a, b)
            fix = (remainder(a, b) != 0) & ((a < 0) ^ (b < 0))
            return q + fix.to(q.dtype)
        raise ValueError(f"div: expected rounding_mode to be one of None, 'trunc', 'floor', "
                         f"got {rounding_mode!r}")
    return _binary("div", a, b, DivBackward, compute=floating, save=lambda a, b, out: (a, b))


def _binary_dtype(a, b):
    return _result_dtype(a, b) if isinstance(a, Tensor) else _result_dtype(b, a)


class PowBackward(Node):
    def backward(self, g):
        a, b, out = self.saved
        ga = gb = None
        if isinstance(a, Tensor) and a._requires_grad:
            if isinstance(b, Tensor):
                ga = g * b * pow(a, b - 1)
                ga = where(b == 0, 0.0, ga)
            elif b == 0:                # torch: zeros, even where g is inf or nan
                ga = a.new_zeros(tuple(a.shape))
            else:
                # torch's order, grad * (b * a ** (b - 1)), so float32 gradients match it bit
                # for bit; a ** 1 is a copy of a, which a itself stands for
                ga = g * (b * (a if b == 2 else pow(a, b - 1)))
            ga = _g(ga, a)
        if isinstance(b, Tensor) and b._requires_grad:
            if autograd.is_grad_enabled():
                out = pow(a, b)          # double backward: differentiate through a fresh forward
            base = a if isinstance(a, Tensor) else _wrap(out._backend.full((), a, out.dtype, out.device.index), out.dtype, out.device)
            gb = g * out * base.log()
            gb = where((base == 0) & (b >= 0), 0.0, gb)
            gb = _g(gb, b)
        return ga, gb


# ---- pow with a Python-number exponent -------------------------------------------------------
# torch's CPU kernel (ATen PowKernel.cpp, Pow.cpp) computes these exponents without pow(): 0 fills
# ones, 1 copies, 2/3/-2 multiply (x*x, x*x*x, 1/(x*x)), 0.5/-0.5/-1 are sqrt/rsqrt/reciprocal.
# NumPy's power with a float exponent costs hundreds of multiplies, so paragrad does the same (and
# adds 4 as (x*x)**2, where torch calls pow: within an ulp of it). The special values follow:
# sqrt(-0.) is -0. and sqrt(-inf) nan, as torch's, where C's pow gives +0. and +inf. Integer
# tensors to integer powers multiply by squaring, wrapping as torch's powi.
def _cube(bk, x):
    r = bk.binary("mul", x, x)
    return bk.binary("mul", r, x, out=r)


def _fourth(bk, x):
    r = bk.binary("mul", x, x)
    return bk.binary("mul", r, r, out=r)


def _inv_square(bk, x):
    r = bk.binary("mul", x, x)
    return bk.unary("reciprocal", r, out=r)


def _int_power(n):
    """x ** n for an integer buffer and n >= 0 by squaring, wrapping as torch's powi does."""
    def kernel(bk, x):
        r, sq, m = None, x, n
        while True:
            if m & 1:
                r = sq if r is None else bk.binary("mul", r, sq)
            m >>= 1
            if not m:
                return r
            sq = bk.binary("mul", sq, sq)
    return kernel


_POW_KERNELS = {    # exponent -> kernel(backend, buffer); 3.0 finds 3, True finds 1
    0: "ones", 1: "copy", 2: lambda bk, x: bk.binary("mul", x, x), 3: _cube, 4: _fourth,
    -1: lambda bk, x: bk.unary("reciprocal", x), -2: _inv_square,
    0.5: lambda bk, x: bk.unary("sqrt", x), -0.5: lambda bk, x: bk.unary("rsqrt", x),
}
# torch's float16 pow skips the sqrt/rsqrt forms (C's pow: (-0.) ** 0.5 is +0.) and rounds once
# from float32; bfloat16 rounds after each op (x*x*x, 1/(x*x), 1/sqrt(x)) but pow()s 4 once
_HALF_GENERAL = {dt.float16: (0.5, -0.5)}
_HALF_WIDE = {dt.float16: (3, 4, -1, -2), dt.bfloat16: (4,)}


def _pow_special(bk, x, b, dtype, index):
    """x ** b for a buffer x of the result dtype without the general power, or None where the
    general power is what torch uses. The result is a new buffer, never x."""
    if dtype.is_floating_point:
        k = _POW_KERNELS.get(b)
        if k is None or b in _HALF_GENERAL.get(dtype, ()):
            return None
    elif b in (0, 1):                   # (a bool ** bool stays bool)
        k = _POW_KERNELS[b]
    else:                               # int ** int >= 0
        if b > np.iinfo(dtype.to_numpy()).max:
            raise RuntimeError(f"pow: value {b} cannot be converted to type {dtype.name} without "
                               f"overflow")
        k = _int_power(b)
    if k == "ones":                     # torch fills: nan ** 0 is 1 too
        return bk.full(tuple(x.shape), 1, dtype, index)
    if k == "copy":
        return bk.copy_(bk.empty(tuple(x.shape), dtype, index), x)
    if b in _HALF_WIDE.get(dtype, ()):  # float16/bfloat16: in float32, rounded once
        return bk.cast(k(bk, bk.cast(x, dt.float32)), dtype)
    fast = bk.fast("pow_scalar")        # the same multiplies in one kernel
    y = fast(x, b) if fast is not None else None
    return k(bk, x) if y is None else y


def pow(input, exponent):
    a, b = input, exponent
    if isinstance(a, Tensor) and not isinstance(b, Tensor):
        b = _scalar(b, "pow")
        ad = a.dtype
        if not ad.is_floating_point and not isinstance(b, float) and b < 0:
            raise RuntimeError("pow: Integers to negative integer powers are not allowed.")
        dtype = ad if ad.is_floating_point else _result_dtype(a, b)
        bk = a._backend
        if dtype is ad:
            buf = _pow_special(bk, a._data, b, dtype, a._device.index)
        elif b == 1:                    # int ** 1.0 is float: the cast is a new buffer already
            buf = bk.cast(a._data, dtype)
        elif b in _POW_KERNELS or not dtype.is_floating_point:
            buf = _pow_special(bk, bk.cast(a._data, dtype), b, dtype, a._device.index)
        else:
            buf = None
        if buf is not None:
            out = _wrap(buf, dtype, a._device)
            if autograd._grad_enabled and a._requires_grad:
                node = PowBackward()
                node.a, node.b, node.saved = a, b, (snapshot(a), b, snapshot(alias(out)))
                record(node, (a, None), out)
            return out
    a_is_t = isinstance(a, Tensor)
    out = _binary("pow", a, b, PowBackward, save=lambda x, y, out: (x if a_is_t else a, y, alias(out)))
    return out


class MaximumBackward(Node):
    """torch's: a tie splits g in halves; each side gets g unless it lost, so where a NaN
    makes both comparisons false both sides get all of g."""
    op = "maximum"

    def backward(self, g):
        a, b = self.saved
        a_lost, b_lost = (a < b, a > b) if self.op == "maximum" else (a > b, a < b)
        shared = where(a == b, g * 0.5, g)
        ga = where(a_lost, 0.0, shared) if a._requires_grad else None
        gb = where(b_lost, 0.0, shared) if b._requires_grad else None
        return (_g(ga, a) if ga is not None else None), (_g(gb, b) if gb is not None else None)


class MinimumBackward(MaximumBackward):
    op = "minimum"


def _maxmin(op, a, b):
    if not isinstance(b, Tensor):
        raise TypeError(f"{op}(): argument 'other' must be Tensor, not {type(b).__name__}")
    node = MaximumBackward if op == "maximum" else MinimumBackward
    return _binary(op, a, b, node, save=lambda a, b, out: (a, b))


def maximum(input, other):
    a, b = input, other
    return _maxmin("maximum", a, b)


def minimum(input, other):
    a, b = input, other
    return _maxmin("minimum", a, b)


class ZeroGradBackward(Node):
    """A piecewise-constant op: zero gradient to both operands."""

    def backward(self, g):
        return _g(g * 0, self.a), _g(g * 0, self.b)


def _check_int_div(name, a, b):
    """Integer division by zero raises, as in torch. This reads the divisor on the host, a cost
    only integer operands pay (float division gives inf/nan instead)."""
    if _binary_dtype(a, b).is_floating_point:
        return
    zero = bool((b == 0).any()) if isinstance(b, Tensor) else b == 0
    if zero:
        raise RuntimeError(f"{name}: ZeroDivisionError (integer division by zero)")


def _floor_div(a, b, node_cls=None):
    _check_int_div("floor_divide", a, b)
    return _binary("floordiv", a, b, node_cls)


def floor_divide(input, other):
    """Division rounded toward -inf. No gradient is recorded (torch has no derivative for it)."""
    a, b = input, other
    return _floor_div(a, b)


class RemainderBackward(Node):
    def backward(self, g):
        a, b = self.saved
        gb = None
        if isinstance(b, Tensor) and b._requires_grad:
            gb = _g(-g * floor_divide(a, b), b)
        return _g(g, self.a), gb


def remainder(input, other):
    a, b = input, other
    _check_int_div("remainder", a, b)
    return _binary("mod", a, b, RemainderBackward, save=lambda a, b, out: (a, b))


# ---- comparisons and logic -------------------------------------------------------------------
def _compare(op):
    def f(input, other):
        a, b = input, other
        if not isinstance(b, (Tensor, bool, int, float, np.generic)):
            return NotImplemented
        return _binary(op, a, b, out_dtype=dt.bool_)
    f.__name__ = op
    return f


eq, ne, lt, le, gt, ge = (_compare(o) for o in ("eq", "ne", "lt", "le", "gt", "ge"))


def _bitwise(op, name):
    def f(input, other):
        a, b = input, other
        for t in (a, b):
            # torch raises NotImplementedError (a RuntimeError) for both
            if isinstance(t, Tensor) and t.dtype.is_floating_point:
                raise NotImplementedError(f"{name}: not implemented for floating-point tensors "
                                          f"({t.dtype})")
            if isinstance(t, float):
                raise NotImplementedError(f"{name}: not implemented for float operands ({t})")
        return _binary(op, a, b)
    f.__name__ = name
    return f


bitwise_and = _bitwise("and", "bitwise_and")
bitwise_or = _bitwise("or", "bitwise_or")
bitwise_xor = _bitwise("xor", "bitwise_xor")


def _as_bool(x):
    return x if x.dtype is dt.bool_ else x.ne(0)


def logical_and(input, other):
    a, b = input, other
    return _binary("and", _as_bool(a), _as_bool(b), name="logical_and")


def logical_or(input, other):
    a, b = input, other
    return _binary("or", _as_bool(a), _as_bool(b), name="logical_or")


def logical_xor(input, other):
    a, b = input, other
    return _binary("xor", _as_bool(a), _as_bool(b), name="logical_xor")


# ---- selection ---------------------------------------------------------------------------------
class WhereBackward(Node):
    def backward(self, g):
        (cond,) = self.saved
        zero = g.new_zeros(())
        ga = _g(where(cond, g, zero), self.a) if isinstance(self.a, Tensor) and self.a._requires_grad else None
        gb = _g(where(cond, zero, g), self.b) if isinstance(self.b, Tensor) and self.b._requires_grad else None
        return None, ga, gb


def where(condition, input=None, other=None):
    """where(cond, a, b): a where cond is True else b; a and b may be Python scalars.
    where(cond) alone is nonzero(cond, as_tuple=True)."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not {type(condition).__name__}")
    if condition.dtype is not dt.bool_:
        raise RuntimeError(f"where: expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {condition.dtype}")
    ref = input if isinstance(input, Tensor) else other
    if not isinstance(ref, Tensor):
        ref = _wrap(condition._backend.full((), _scalar(input, "where"), dt.result_type(input, other),
                                            condition._device.index),
                    dt.result_type(input, other), condition._device)
        input = ref
    dtype = dt.result_type(*(x for x in (input, other)))
    same_device("where", condition, input, other)
    bk = condition._backend
    try:
        shape = np.broadcast_shapes(condition.shape, *(x.shape for x in (input, other) if isinstance(x, Tensor)))
    except ValueError:
        raise RuntimeError(f"where: shapes not broadcastable: condition {tuple(condition.shape)}, "
                           f"input {tuple(getattr(input, 'shape', ()))}, other "
                           f"{tuple(getattr(other, 'shape', ()))}") from None
    del shape

    def buf(x):
        if isinstance(x, Tensor):
            return x._data if x.dtype is dtype else x._backend.cast(x._data, dtype)
        return bk.full((), _scalar(x, "where"), dtype, condition._device.index)

    out = _wrap(bk.where(condition._data, buf(input), buf(other)), dtype, condition._device)
    if autograd.needs_grad(*(x for x in (input, other) if isinstance(x, Tensor))):
        node = WhereBackward()
        node.a, node.b, node.saved = input, other, (condition,)
        record(node, (None, input if isinstance(input, Tensor) else None,
                      other if isinstance(other, Tensor) else None), out)
    return out


def masked_fill(x, mask, value):
    """x with `value` wherever mask is True (mask broadcasts to x's shape)."""
    if not isinstance(mask, Tensor) or mask.dtype is not dt.bool_:
        raise RuntimeError(f"masked_fill: expected mask to be a bool Tensor, got "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"masked_fill: only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s)")
    else:
        value = _scalar(value, "masked_fill")
    try:
        if np.broadcast_shapes(mask.shape, x.shape) != tuple(x.shape):
            raise ValueError
    except ValueError:
        raise RuntimeError(f"masked_fill: mask of shape {tuple(mask.shape)} is not broadcastable "
                           f"to input of shape {tuple(x.shape)}") from None
    v = value.to(x.dtype) if isinstance(value, Tensor) else _wrap(
        x._backend.full((), value, x.dtype, x._device.index), x.dtype, x._device)
    return where(mask, v, x)


# ---- in-place forms ----------------------------------------------------------------------------
def _check_inplace(op, a, dtype):
    """An in-place result must cast to a's dtype under torch's canCast (dtypes.can_cast)."""
    if not dt.can_cast(dtype, a.dtype):
        raise RuntimeError(f"{op}: result type {dtype} can't be cast to the desired output type "
                           f"{a.dtype}")


def binary_(op, a, b, fn):
    """a op= b in place. Without a graph to record, the backend writes into a's buffer.
    With one, the result (and its graph) replaces a's buffer and grad_fn: views taken earlier
    keep the old values. A leaf that requires grad can't be modified while grad mode is on."""
    name = fn.__name__ + "_"
    if autograd._grad_enabled:
        if a.grad_fn is None and a._requires_grad:
            raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an "
                               f"in-place operation.")
        if a._requires_grad or (isinstance(b, Tensor) and b._requires_grad):
            out = fn(snapshot(a), b)     # mul_/div_ save their input: it must keep its old value
            _check_inplace(name, a, out.dtype)
            if out.shape != a.shape:
                raise RuntimeError(f"{name}: output with shape {tuple(a.shape)} doesn't match "
                                   f"the broadcast shape {tuple(out.shape)}")
            return rebind(a, out if out.dtype is a.dtype else out.to(a.dtype))
    if isinstance(b, Tensor) and b.shape != a.shape:
        try:
            ok = np.broadcast_shapes(a.shape, b.shape) == tuple(a.shape)
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(f"{name}: output with shape {tuple(a.shape)} doesn't match the "
                               f"broadcast shape of {tuple(a.shape)} and {tuple(b.shape)}")
    ab, bb, dtype, _ = prepare(name, a, b, floating if op == "div" else None)
    _check_inplace(name, a, dtype)
    if dtype is a.dtype:
        a._backend.binary(op, a._data, bb, out=a._data)
    else:
        a._backend.copy_(a._data, a._backend.binary(op, ab, bb))
    bump_version(a)
    return a
