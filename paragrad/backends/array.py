"""What the NumPy and CuPy backends share: primitives that are the same calls on either array
module, and helpers both use.

`ArrayBackend` implements those primitives once over `xp`, the array module (numpy for
cpu.py, cupy for cuda/backend.py), which each subclass sets as a class attribute.
"""
from __future__ import annotations

import sys

from .base import Backend

_BOUND = (int, type(None))       # slice bounds a basic view takes


def plain_basic_key(key, ndim):
    """Whether x[key] on an array buffer of ndim dims is torch's view: a key of ints and slices
    of int bounds with positive steps, no more items than dims (array backends'
    fast_basic_view; anything else goes to the op layer's planner, which gives torch's errors)."""
    items = key if type(key) is tuple else (key,)
    if len(items) > ndim:
        return False
    for k in items:
        if type(k) is not int and not (type(k) is slice and type(k.start) in _BOUND
                                       and type(k.stop) in _BOUND and type(k.step) in _BOUND
                                       and (k.step is None or k.step > 0)):
            return False
    return True


def int_pow(xp, a, b):
    """Integer a ** b with PyTorch's rule for negative exponents (NumPy raises there, CuPy's
    result is unspecified): 1 for base 1, +-1 for base -1 (by the exponent's parity), else 0.
    xp is numpy or cupy; no host read, so it can be captured."""
    a, b = xp.asarray(a), xp.asarray(b)
    kept = xp.power(a, xp.maximum(b, 0).astype(b.dtype))
    negative_rule = xp.where(a == 1, 1, xp.where(a == -1, 1 - 2 * (b % 2), 0)).astype(kept.dtype)
    return xp.where(b < 0, negative_rule, kept)


class ArrayBackend(Backend):
    """Primitives whose NumPy and CuPy forms differ only in the array module `xp`."""

    xp = None       # numpy or cupy, set by the subclass

    def where(self, cond, a, b):
        r = self.xp.where(cond, a, b)
        dtype = getattr(a, "dtype", None)
        if dtype is not None and dtype == getattr(b, "dtype", dtype) and r.dtype != dtype:
            r = r.astype(dtype)         # (CuPy computes bfloat16 in float32 and returns that)
        return r

    # ---- movement ---------------------------------------------------------------------------
    def reshape(self, x, shape):
        return x.reshape(shape)

    def permute(self, x, axes):
        return x.transpose(axes)

    def expand(self, x, shape):
        return self.xp.broadcast_to(x, shape)

    def pad(self, x, widths, value):
        r = self.xp.pad(x, widths, mode="constant", constant_values=value)
        return r if r.dtype == x.dtype else r.astype(x.dtype)      # (as where)

    def concat(self, xs, axis):
        return self.xp.concatenate(xs, axis=axis)

    def fast_unbind(self, x, axis):
        """x's views at each index along axis, that axis dropped (iterating a tensor)."""
        m = x if axis == 0 else self.xp.moveaxis(x, axis, 0)
        if m.ndim > 1:
            return list(m)      # (the array's own iteration: views of each row)
        return [m[i, ...] for i in range(m.shape[0])]       # (0-d views: m[i] would be a scalar)

    def flip(self, x, axes):
        return self.xp.flip(x, axes).copy()      # a copy, as PyTorch's flip (not a view)

    # ---- indexing ---------------------------------------------------------------------------
    def gather(self, x, index, axis):
        return self.xp.take_along_axis(x, index, axis=axis)


def sole_view(view):
    """Whether nothing but `view` holds view.base (NumPy and CuPy point every view at the
    root owner, so another view or the owner itself would hold it too): writes through such a
    view reach no other array."""
    return _base_refs(view) <= _SOLE_VIEW_REFS


def _base_refs(view):
    """References to view.base, counted the same way on every call (this function's own
    references included: what they are differs between Python versions, so _SOLE_VIEW_REFS
    is measured through this very function)."""
    base = view.base
    return sys.getrefcount(base)


class _View:
    __slots__ = ("base",)


def _sole_view_refs():
    v = _View()
    v.base = object()           # held by v alone
    return _base_refs(v)


_SOLE_VIEW_REFS = _sole_view_refs()
