"""pow: a tensor to a tensor or Python-number power, and its gradient. Small integral and half
exponents run as multiplies or the matching unary op, as torch's CPU kernel does, so results
match torch bit for bit and NumPy's slow general power is avoided."""
from __future__ import annotations

import numpy as np

from ... import autocast_state, autograd
from ... import dtypes as dt
from ...autograd import Node, grad_mode, node_class, record
from ...tensor import Tensor, _wrap
from .._common import alias, snapshot
from .binary import _binary, _g, _result_dtype, _scalar, where
from ..autocast_policy import cast


class PowBackward(Node):
    """pow's formula, for torch's three overloads: PowBackward0 (tensor ** number),
    PowBackward1 (tensor ** tensor), PowBackward2 (number ** tensor)."""

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


_POW_NUMBER = node_class(PowBackward, "PowBackward0")
_POW_TENSOR = node_class(PowBackward, "PowBackward1")
_NUMBER_POW = node_class(PowBackward, "PowBackward2")


# ---- a Python-number exponent -----------------------------------------------------------------
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
    """Elementwise input ** exponent, each a tensor or a Python number, as torch.pow."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, exponent = cast("pow", input, exponent)
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
            if grad_mode._enabled and a._requires_grad:
                node = _POW_NUMBER()
                node.a, node.b, node.saved = a, b, (snapshot(a), b, snapshot(alias(out)))
                record(node, (a, None), out)
            return out
    a_is_t = isinstance(a, Tensor)
    node = (_POW_TENSOR if isinstance(b, Tensor) else _POW_NUMBER) if a_is_t else _NUMBER_POW
    out = _binary("pow", a, b, node, save=lambda x, y, out: (x if a_is_t else a, y, alias(out)))
    return out
