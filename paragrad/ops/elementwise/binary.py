"""Binary elementwise ops: arithmetic, comparisons, logic, bit shifts, where/masked_fill, in-place
forms. pow is in power.py.

Operands are Tensors or Python scalars; dtypes promote as in PyTorch (dtypes.result_type),
shapes broadcast by NumPy rules, and gradients are summed back to each input's shape. The
public functions take torch's parameter names (input, other) and call them a, b inside.
"""
from __future__ import annotations

from itertools import zip_longest

import numpy as np

from ... import autograd, dtypes as dt
from ...autograd import Node, grad_mode, node_class, record, rename
from ...tensor import _wrap, bump_version, rebind, Tensor
from .._common import check_writable, floating, same_device, snapshot
from ..movement.views import grad_for
from ..creation import tensor, zeros_like


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
    lo, span = _INT_RANGES.get(dtype) or _int_range(dtype)
    return v if lo <= v < lo + span else (v - lo) % span + lo


_INT_RANGES = {}        # integer dtype -> (lowest value, number of values)


def _int_range(dtype):
    bits = 8 * dtype.itemsize
    r = _INT_RANGES[dtype] = (-(1 << (bits - 1)) if dtype.is_signed else 0, 1 << bits)
    return r


def _result_dtype(a, b):
    if isinstance(b, Tensor):
        return a.dtype if a.dtype is b.dtype else dt.result_type(a, b)
    ad, tb = a.dtype, type(b)
    if ad.is_floating_point or (tb is int and ad is not dt.bool_):
        return ad
    return dt.result_type(a, b)


def _check_shapes(op, a, b):
    sa, sb = a._data.shape, b._data.shape
    for x, y in zip(reversed(sa), reversed(sb)):    # (two shapes: 3x faster than _broadcastable)
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"{op}: The size of tensor a {sa} must match the size of "
                               f"tensor b {sb} (shapes not broadcastable)")


def _broadcastable(shapes):
    """Whether the shapes broadcast together (NumPy's rule; its broadcast_shapes costs 5x more)."""
    for sizes in zip_longest(*(reversed(s) for s in shapes), fillvalue=1):
        n = 1
        for k in sizes:
            if k != 1:
                if n != 1 and k != n:
                    return False
                n = k
    return True


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
    tb, ad = type(b), a.dtype
    if (tb is int or tb is float) and compute is None and (
            ad.is_floating_point or (tb is int and ad is not dt.bool_)):
        # tensor op Python number of the tensor's kind (i + 8, x * 0.5): the dtype is the
        # tensor's, so none of prepare's promotion (the scalar only wrapped to an int dtype's width)
        dtype, dev = ad, a._device
        buf = a._backend.binary(op, a._data, b if ad.is_floating_point else _wrap_int(b, ad))
    else:
        ab, bb, dtype, dev = prepare(name, a, b, compute)
        buf = a._backend.binary(op, ab, bb)
    out = _wrap(buf, out_dtype or dtype, dev)
    if node_cls is not None and grad_mode._enabled and (
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
class AddBackward0(_ShapesOnly):
    def backward(self, g):
        return _g(g, self.a), _g(g, self.b)


class SubBackward0(_ShapesOnly):
    def backward(self, g):
        gb = _g(g, self.b)
        return _g(g, self.a), (-gb if gb is not None else None)


class MulBackward0(Node):
    def backward(self, g):
        a, b = self.saved
        need_a = isinstance(a, Tensor) and a._requires_grad
        need_b = isinstance(b, Tensor) and b._requires_grad
        if not grad_mode._enabled:
            if need_a and need_b:
                grads = _mul_grads_on_buffers(g, a, b)
                if grads is not None:
                    return grads
            elif need_a and type(b) in (float, int) and g.dtype is a.dtype and g.dtype.is_floating_point \
                    and g._data.shape == a._data.shape:
                # x * 0.5 (a scale, a GELU's constant): g * 0.5 on the buffer, nothing to record
                return _wrap(g._backend.binary("mul", g._data, b), g.dtype, g._device), None
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


class DivBackward0(Node):
    def backward(self, g):
        a, b = self.saved
        ga = _g(g / b, self.a) if self.a._requires_grad else None
        gb = None
        if isinstance(b, Tensor) and b._requires_grad:
            # (a / b) / b as torch's: b * b underflows to 0 at a subnormal b, and overflows
            gb = _g(-g * ((a / b) / b), b)
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
    """Elementwise input + alpha * other (broadcasting, promoting dtypes), as torch.add."""
    a, b = input, other
    b = _alpha("add", a, b, alpha)
    return _binary("add", a, b, AddBackward0)


def sub(input, other, alpha=1):
    """Elementwise input - alpha * other, as torch.sub (alias subtract)."""
    a, b = input, other
    if isinstance(a, Tensor) and a.dtype is dt.bool_ and isinstance(b, Tensor) and b.dtype is dt.bool_:
        raise RuntimeError("sub: Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    b = _alpha("sub", a, b, alpha)
    return _binary("sub", a, b, SubBackward0)


def mul(input, other):
    """Elementwise product input * other, as torch.mul (alias multiply)."""
    a, b = input, other
    return _binary("mul", a, b, MulBackward0, save=lambda a, b, out: (a, b))


def div(input, other, rounding_mode=None):
    """Elementwise input / other, true division (integers give a float), or rounded with
    rounding_mode "trunc" or "floor"; as torch.div (aliases divide, true_divide).
    Another rounding_mode raises ValueError."""
    a, b = input, other
    if rounding_mode is not None:
        if rounding_mode == "floor":    # unlike floor_divide, torch gives it a (zero) gradient
            return _floor_div(a, b, DivBackward2)
        if rounding_mode == "trunc":
            if _binary_dtype(a, b).is_floating_point:
                return rename(div(a, b).trunc(), "DivBackward2")
            # integers: exact (no float round trip): floor, plus one where inexact and signs differ
            q = floor_divide(a, b)
            fix = (remainder(a, b) != 0) & ((a < 0) ^ (b < 0))
            return q + fix.to(q.dtype)
        raise ValueError(f"div: expected rounding_mode to be one of None, 'trunc', 'floor', "
                         f"got {rounding_mode!r}")
    return _binary("div", a, b, DivBackward0, compute=floating, save=lambda a, b, out: (a, b))


def _binary_dtype(a, b):
    return _result_dtype(a, b) if isinstance(a, Tensor) else _result_dtype(b, a)


class MaximumBackward0(Node):
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


class MinimumBackward0(MaximumBackward0):
    op = "minimum"


def _maxmin(op, a, b):
    if not isinstance(b, Tensor):
        raise TypeError(f"{op}(): argument 'other' must be Tensor, not {type(b).__name__}")
    node = MaximumBackward0 if op == "maximum" else MinimumBackward0
    return _binary(op, a, b, node, save=lambda a, b, out: (a, b))


def maximum(input, other):
    """Elementwise maximum of two tensors (NaN propagates), as torch.maximum."""
    a, b = input, other
    return _maxmin("maximum", a, b)


def minimum(input, other):
    """Elementwise minimum of two tensors (NaN propagates), as torch.minimum."""
    a, b = input, other
    return _maxmin("minimum", a, b)


class DivBackward2(Node):
    """div(rounding_mode=...), piecewise constant: zero gradient to both operands."""

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
    """remainder's formula; torch's class is RemainderBackward1 for a tensor divisor,
    RemainderBackward0 for a number."""

    def backward(self, g):
        a, b = self.saved
        gb = None
        if isinstance(b, Tensor) and b._requires_grad:
            gb = _g(-g * floor_divide(a, b), b)
        return _g(g, self.a), gb


_REMAINDER_SCALAR = node_class(RemainderBackward, "RemainderBackward0")
_REMAINDER_TENSOR = node_class(RemainderBackward, "RemainderBackward1")


def remainder(input, other):
    """Elementwise remainder of floor division, with the sign of other (Python's %), as
    torch.remainder."""
    a, b = input, other
    _check_int_div("remainder", a, b)
    node = _REMAINDER_TENSOR if isinstance(b, Tensor) else _REMAINDER_SCALAR
    return _binary("mod", a, b, node, save=lambda a, b, out: (a, b))


# ---- comparisons and logic -------------------------------------------------------------------
_COMPARABLE = (Tensor, bool, int, float, np.generic)


def _compare(op, symbol, alias):
    def f(input, other):
        if not isinstance(other, _COMPARABLE):
            raise TypeError(f"{op}(): argument 'other' must be a Tensor or a number, not "
                            f"{type(other).__name__}")
        return _binary(op, input, other, out_dtype=dt.bool_)
    f.__name__ = f.__qualname__ = op      # (the reference finds it by module and name)
    f.__doc__ = f"Elementwise input {symbol} other, a bool tensor, as torch.{op}{alias}."
    return f


def comparison_operator(f):
    """f as Tensor's operator (t == x, t < x): NotImplemented for an operand it doesn't take,
    so that Python tries the reflected form and == falls back to identity, as torch's do."""
    op = f.__name__

    def operator(self, other):      # (_binary itself, not f: one call less on a hot path)
        return _binary(op, self, other, out_dtype=dt.bool_) if isinstance(other, _COMPARABLE) else NotImplemented
    operator.__name__ = f"__{op}__"
    return operator


eq, ne, lt, le, gt, ge = (_compare(*a) for a in (
    ("eq", "==", ""), ("ne", "!=", " (alias not_equal)"), ("lt", "<", " (alias less)"),
    ("le", "<=", " (alias less_equal)"), ("gt", ">", " (alias greater)"),
    ("ge", ">=", " (alias greater_equal)")))


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
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise bitwise {op.upper()} of integer or bool operands, as torch.{name}."
    return f


bitwise_and = _bitwise("and", "bitwise_and")
bitwise_or = _bitwise("or", "bitwise_or")
bitwise_xor = _bitwise("xor", "bitwise_xor")


def _as_bool(x):
    return x if x.dtype is dt.bool_ else x.ne(0)


def logical_and(input, other):
    """Elementwise logical AND (nonzero is True), a bool tensor, as torch.logical_and."""
    a, b = input, other
    return _binary("and", _as_bool(a), _as_bool(b), name="logical_and")


def logical_or(input, other):
    """Elementwise logical OR (nonzero is True), a bool tensor, as torch.logical_or."""
    a, b = input, other
    return _binary("or", _as_bool(a), _as_bool(b), name="logical_or")


def logical_xor(input, other):
    """Elementwise logical XOR (nonzero is True), a bool tensor, as torch.logical_xor."""
    a, b = input, other
    return _binary("xor", _as_bool(a), _as_bool(b), name="logical_xor")


# ---- selection ---------------------------------------------------------------------------------
class WhereBackward0(Node):
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
    tensors = [x for x in (input, other) if isinstance(x, Tensor)]
    dev = condition._device     # (an attention mask's case: one dtype, one device, nothing to promote)
    if len(tensors) == 2 and input.dtype is other.dtype:
        dtype = input.dtype
    else:
        dtype = dt.result_type(input, other)
    if any(t._device is not dev for t in tensors):
        same_device("where", condition, input, other)
    if not _broadcastable([condition._data.shape] + [t._data.shape for t in tensors]):
        raise RuntimeError(f"where: shapes not broadcastable: condition {tuple(condition.shape)}, "
                           f"input {tuple(getattr(input, 'shape', ()))}, other "
                           f"{tuple(getattr(other, 'shape', ()))}")
    bk = condition._backend

    def buf(x):
        if isinstance(x, Tensor):
            return x._data if x.dtype is dtype else x._backend.cast(x._data, dtype)
        return bk.full((), _scalar(x, "where"), dtype, condition._device.index)

    out = _wrap(bk.where(condition._data, buf(input), buf(other)), dtype, condition._device)
    if autograd.needs_grad(*(x for x in (input, other) if isinstance(x, Tensor))):
        node = WhereBackward0()
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
    # torch's overloads: masked_fill(Scalar) is MaskedFillBackward0, (Tensor) MaskedFillBackward1
    return rename(where(mask, v, x),
                  "MaskedFillBackward1" if isinstance(value, Tensor) else "MaskedFillBackward0")


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
    if grad_mode._enabled:
        check_writable(a, name)
        if a._requires_grad or (isinstance(b, Tensor) and b._requires_grad):
            out = fn(snapshot(a), b)     # mul_/div_ save their input: it must keep its old value
            _check_inplace(name, a, out.dtype)
            if out.shape != a.shape:
                raise RuntimeError(f"{name}: output with shape {tuple(a.shape)} doesn't match "
                                   f"the broadcast shape {tuple(out.shape)}")
            if out.dtype is not a.dtype:     # the cast back is part of the op, as in torch
                out = rename(out.to(a.dtype), out.grad_fn.name(), out)
            return rebind(a, out)
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


def _shift_operands(op, input, other):
    a = input if isinstance(input, Tensor) else tensor(input, device=other.device)
    b = other if isinstance(other, Tensor) else tensor(other, device=a.device)
    dtype = dt.result_type(a, b)
    if dtype.is_floating_point or dtype is dt.bool_:
        raise RuntimeError(f"{op}: not implemented for '{dtype}' tensors (integer dtypes only)")
    return a.to(dtype), b.to(dtype), dtype.itemsize * 8, dtype is not dt.uint8


def bitwise_left_shift(input, other):
    """input << other for integers, wrapping like C; a shift below 0 or of the bit width or more
    gives 0, as PyTorch."""
    a, b, bits, _ = _shift_operands("bitwise_left_shift", input, other)
    out = a * 2 ** b.clamp(0, bits - 1)          # (2 ** (bits - 1) wraps to the sign bit, as C)
    return where((b < 0) | (b >= bits), 0, out)


def bitwise_right_shift(input, other):
    """input >> other for integers, arithmetic (rounding down) for signed types; a shift below 0
    or past the width fills with the sign, as PyTorch."""
    a, b, bits, signed = _shift_operands("bitwise_right_shift", input, other)
    top = bits - 2 if signed else bits - 1       # the largest shift 2 ** shift still represents
    out = a.div(2 ** b.clamp(0, top), rounding_mode="floor")
    fill = where(a < 0, -1, 0) if signed else zeros_like(a)
    return where((b < 0) | (b > top), fill, out)
