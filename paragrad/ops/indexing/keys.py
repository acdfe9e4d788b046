"""Keys: what x[key] receives, put in the forms the indexing code plans with. A key of ints
and slices becomes one strided slice (`basic_plan`); slice bounds given as 0-d tensors are read
as ints first, as torch reads them; a general key becomes a list of items with the ellipsis
expanded and sequences (lists, ranges, tuples inside the key, arrays) turned into index tensors
(`normalize_key`)."""
from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from ...tensor import Tensor


def normalize_key(x, key):
    """-> list of items with Ellipsis expanded, sequences turned into index tensors."""
    from ..creation import tensor
    if not isinstance(key, tuple):
        key = (key,)
    items = []
    for k in key:
        if isinstance(k, (list, np.ndarray, range, tuple)):   # (a sequence inside the key: an index, as torch)
            k = tensor(k if isinstance(k, (list, np.ndarray)) else list(k), device=x.device)
            if k.dtype.is_floating_point and k.numel() == 0:
                k = k.long()
        if isinstance(k, Tensor):
            if k.dtype.is_floating_point:
                raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, "
                                 f"got {k.dtype}")
        elif not (k is None or k is Ellipsis or isinstance(k, (int, slice, np.integer))):
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                             f"Variables are valid indices (got {type(k).__name__})")
        items.append(k)
    consumed = sum(0 if (k is None or k is Ellipsis or isinstance(k, bool)) else
                   (k.ndim if isinstance(k, Tensor) and k.dtype in (dt.bool_, dt.uint8) else 1)
                   for k in items)
    n_ell = sum(1 for k in items if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    if n_ell:
        i = next(i for i, k in enumerate(items) if k is Ellipsis)
        items[i:i + 1] = [slice(None)] * (x.ndim - consumed)
    return items


def int_slice_bounds(key):
    """key with its slices' tensor bounds read as ints, as torch reads them (through
    __index__: a float tensor is refused there), or None if no slice has a tensor bound."""
    if type(key) is slice:
        if isinstance(key.start, Tensor) or isinstance(key.stop, Tensor) or isinstance(key.step, Tensor):
            return int_slice(key)
        return None
    if type(key) is not tuple or not any(type(k) is slice and int_slice(k) is not k for k in key):
        return None
    return tuple(int_slice(k) if type(k) is slice else k for k in key)


def int_slice(k):
    """The slice k with int bounds (k itself where it has no tensor bound)."""
    a, b, c = k.start, k.stop, k.step
    ta, tb, tc = isinstance(a, Tensor), isinstance(b, Tensor), isinstance(c, Tensor)
    if not (ta or tb or tc):
        return k
    return slice(a.__index__() if ta else a, b.__index__() if tb else b, c.__index__() if tc else c)


def basic_plan(shape, key):
    """(starts, stops, steps, out_shape) when `key` is an int, a slice or a tuple of them (at
    most one per dim), else None: everything else, and anything to refuse (an int out of range,
    a non-positive step), takes the general planner, which also gives the errors."""
    items = key if type(key) is tuple else (key,)
    if len(items) > len(shape):
        return None
    starts, stops, steps, out_shape = [], [], [], []
    for d, k in enumerate(items):
        if type(k) is int:
            if not -shape[d] <= k < shape[d]:
                return None
            k += shape[d] if k < 0 else 0
            starts.append(k), stops.append(k + 1), steps.append(1)
        elif type(k) is slice and (k.step is None or k.step > 0):
            start, stop, step = k.indices(shape[d])
            stop = max(stop, start)
            starts.append(start), stops.append(stop), steps.append(step)
            out_shape.append(len(range(start, stop, step)))
        else:
            return None
    n = len(items)
    return (tuple(starts) + (0,) * (len(shape) - n), tuple(stops) + tuple(shape[n:]),
            tuple(steps) + (1,) * (len(shape) - n), tuple(out_shape) + tuple(shape[n:]))
