"""Indexed updates, composed from differentiable ops: index_add / index_fill / index_copy along
a dim, scatter_reduce (sum, prod, mean, amax, amin, with or without the input's own values),
masked_scatter, put and index_put (torch's `x[indices] = values` with accumulate). Each returns
a new tensor; the in-place forms are the Tensor methods built from these (ops/methods.py)."""
from __future__ import annotations

import numpy as np

from ... import autograd, capture
from ... import dtypes as dt
from ...autograd import Node, record, rename
from ...tensor import Tensor
from .._common import alias, check_tensor, dim_arg, snapshot
from ..creation import arange, positions_along, zeros
from ..elementwise.binary import maximum, minimum, where
from ..inplace import inplace_unary
from ..movement.copies import cat
from ..reduce.sorting import argsort
from .index_bounds import out_of_range, remember
from .subscripts import _check_gather_shapes, _index_tensor, getitem
from ..autocast_policy import policy


_REDUCES = {"sum": "sum", "prod": "prod", "mean": "mean", "amax": "amax", "amin": "amin",
            "max": "amax", "min": "amin"}      # (max/min: the old names, still accepted by torch)


def _scatter_keys(shape, d, index):
    """Each index element's flat position in a contiguous tensor of `shape`."""
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    key = index * strides[d]
    for ax in range(len(shape)):
        if ax != d and index.shape[ax] > 1:
            key = key + positions_along(tuple(index.shape), ax, index.device) * strides[ax]
    return key.reshape(-1)


def _segment_reduce(keys, vals, size, combine):
    """combine() over the values of each key (flat positions < size), differentiably: sort by
    key, a segmented log-step scan, then each segment's last entry scattered to its key.
    -> (reduced (size,), hit (size,) bool)."""
    order = argsort(keys)
    k, v = keys.gather(0, order), vals.gather(0, order)
    m, shift = k.shape[0], 1
    while shift < m:
        same = k.narrow(0, shift, m - shift) == k.narrow(0, 0, m - shift)
        late = v.narrow(0, shift, m - shift)
        v = cat([v.narrow(0, 0, shift), where(same, combine(v.narrow(0, 0, m - shift), late), late)])
        shift *= 2
    with autograd.no_grad():
        ends = cat([k.narrow(0, 1, m - 1) != k.narrow(0, 0, m - 1), k.narrow(0, 0, 1) >= 0])
        dest = where(ends, k, size)                      # the rest go to a spare slot
        hit = zeros(size + 1, dtype=dt.int64, device=keys.device).scatter(0, k, 1).narrow(0, 0, size) > 0
    out = zeros(size + 1, dtype=vals.dtype, device=vals.device).scatter(0, dest, v)
    return out.narrow(0, 0, size), hit


class ScatterReduceBackward0(Node):
    """torch's scatter_reduce amax/amin gradient (its other reductions are composed here):
    shared equally among every element (of self and src) equal to its target's result."""

    def backward(self, g):
        x, src, index, out = self.saved
        d = self.dim
        value = out.gather(d, index)
        self_is = (x == out).to(g.dtype)
        src_is = (src == value).to(g.dtype)
        share = g / self_is.scatter_add(d, index, src_is)
        gx = self_is * share
        if not self.include_self:
            gx = gx.scatter(d, index, 0.0)
        return gx, src_is * share.gather(d, index)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """input with src's elements reduced ("sum", "prod", "mean", "amax", "amin") into the
    positions index names along dim, as scatter; include_self=False leaves input's own
    values at those positions out of the reduction. Integer "mean" rounds down."""
    op = "scatter_reduce"
    check_tensor(input, op)
    check_tensor(src, op, "src")
    index = _index_tensor(index, op).to(dt.int64)
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    reduce = _REDUCES[reduce]
    d = dim_arg(dim, max(input.ndim, 1), op)
    if src.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype ({input.dtype} vs "
                           f"{src.dtype})")
    if input.ndim == 0:
        out = scatter_reduce(input.reshape(1), 0, index.reshape(-1), src.reshape(-1), reduce,
                             include_self=include_self).reshape(())
        return rename(out, "ScatterReduceBackward0")
    _check_gather_shapes(op, input, d, index, src)
    if index.numel() == 0:
        return rename(input.clone(), "ScatterReduceBackward0")
    if tuple(src.shape) != tuple(index.shape):       # only src's index-shaped block is used
        src = getitem(src, tuple(slice(0, s) for s in index.shape))
    if reduce in ("sum", "mean"):
        with autograd.no_grad():
            hit = zeros(tuple(input.shape), dtype=dt.int64, device=input.device).scatter(d, index, 1) > 0
        base = input if include_self else input.masked_fill(hit, 0)
        out = base.scatter_add(d, index, src)
        if reduce == "mean":
            with autograd.no_grad():
                count = input.new_full(tuple(input.shape), 1 if include_self else 0).scatter_add(
                    d, index, src.new_ones(tuple(index.shape)).detach())
                count = count.masked_fill(count == 0, 1)
            out = out / count if input.dtype.is_floating_point else out.floor_divide(count)
        return rename(out, "ScatterReduceBackward0")
    combine = {"prod": lambda a, b: a * b, "amax": maximum, "amin": minimum}[reduce]
    keys = _scatter_keys(tuple(input.shape), d, index)
    extreme = reduce != "prod"
    with autograd.set_grad_enabled(autograd.is_grad_enabled() and not extreme):
        red, hit = _segment_reduce(keys, src.reshape(-1), input.numel(), combine)
        red, hit = red.reshape(input.shape), hit.reshape(input.shape)
        out = where(hit, combine(input, red) if include_self else red, input)
    if extreme and autograd.needs_grad(input, src):
        out = out.detach()
        node = ScatterReduceBackward0()
        node.dim, node.include_self = d, include_self
        node.saved = (snapshot(input), snapshot(src), index, alias(out))
        record(node, (input, src), out)
        return out
    return rename(out, "ScatterReduceBackward0")


def masked_scatter(input, mask, source):
    """input with the positions where mask is True (input and mask broadcast together) filled
    by source's elements in row-major order."""
    check_tensor(input, "masked_scatter")
    check_tensor(source, "masked_scatter", "source")
    if not isinstance(mask, Tensor) or mask.dtype is not dt.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{input.dtype} and {source.dtype}")
    try:
        shape = np.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    except ValueError:
        raise RuntimeError(f"masked_scatter: mask of shape {tuple(mask.shape)} can't be broadcast "
                           f"with input of shape {tuple(input.shape)}") from None
    m = mask.expand(*shape).reshape(-1)
    x = input.expand(*shape).reshape(-1)
    with autograd.no_grad():
        slot = m.long().cumsum(0) - 1            # the source element each True position takes
        if m.numel() and not capture.active() and int(slot[-1]) + 1 > source.numel():
            raise RuntimeError(f"masked_scatter: Number of elements of source ({source.numel()}) < "
                               f"number of ones in mask ({int(slot[-1]) + 1})")
        slot = slot.clamp(min=0)
    out = where(m, source.reshape(-1).gather(0, slot) if source.numel() else x.new_zeros(()), x)
    return rename(out.reshape(shape), "MaskedScatterBackward0")


def put(input, index, source, accumulate=False):
    """input viewed as 1-D with source's elements written (accumulate: added) at index
    (negative indices count from the end)."""
    check_tensor(input, "put")
    check_tensor(source, "put", "source")
    if not isinstance(index, Tensor) or index.dtype is not dt.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{getattr(index, 'dtype', type(index).__name__)}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {input.dtype} and source.dtype = {source.dtype}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, "
                         f"but got source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = input.numel()
    idx = index.reshape(-1)
    if idx.numel() and not capture.active():
        lo, hi = int(idx.min()), int(idx.max())
        if lo < -n or hi >= n:
            raise IndexError(f"out of range: tried to access index {hi if hi >= n else lo} on a "
                             f"tensor of {n} elements.")
    if idx.numel() == 0:
        return rename(input.clone(), "PutBackward0")
    idx = where(idx < 0, idx + n, idx)
    flat = input.reshape(-1)
    vals = source.reshape(-1)
    out = flat.scatter_add(0, idx, vals) if accumulate else flat.scatter(0, idx, vals)
    return rename(out.reshape(input.shape), "PutBackward0")


@policy("index_put")
def index_put(input, indices, values, accumulate=False):
    """input with values written (accumulate: added, repeats adding up) at input[indices],
    indices a tuple of index tensors (long, int or bool), values broadcast to that shape."""
    check_tensor(input, "index_put")
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"index_put(): expected Tensor as element {i} in argument 'indices', "
                            f"but got {type(t).__name__}")
    check_tensor(values, "index_put", "values")
    if values.dtype is not input.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{input.dtype} for the destination and {values.dtype} for the source.")
    with autograd.no_grad():
        pos = getitem(arange(input.numel(), device=input.device).reshape(input.shape), tuple(indices))
    try:
        if np.broadcast_shapes(tuple(values.shape), tuple(pos.shape)) != tuple(pos.shape):
            raise ValueError
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be "
                           f"broadcast to indexing result of shape {list(pos.shape)}") from None
    if pos.numel() == 0:
        return rename(input.clone(), "IndexPutBackward0")
    flat = input.reshape(-1)
    vals = values.expand(*pos.shape).reshape(-1)
    p = pos.reshape(-1)
    out = flat.scatter_add(0, p, vals) if accumulate else flat.scatter(0, p, vals)
    return rename(out.reshape(input.shape), "IndexPutBackward0")


index_put_ = inplace_unary(index_put, "index_put_")


def _index_mask_and_source(input, dim, index, source):
    d = dim_arg(dim, input.ndim, "index op")
    shape = [1] * input.ndim
    shape[d] = index.shape[0]
    idx = index.reshape(shape).expand(*[index.shape[0] if i == d else s for i, s in enumerate(input.shape)])
    return d, idx


def index_add(input, dim, index, source, *, alpha=1):
    """input with alpha * source's slices added at index along dim (repeated indices add up)."""
    d, idx = _index_mask_and_source(input, dim, index, source)
    out = input + (input * 0).detach().scatter_add(d, idx, source * alpha)
    return rename(out, "IndexAddBackward0")


def _check_along(op, input, dim, index, negatives):
    """IndexError naming an index along dim outside [0, size) ([-size, size) where torch takes
    a negative index from the end): torch's check and type for index_fill and index_copy
    (index_add's is scatter_add's RuntimeError). No host read when index's range is known.
    -> the dim's size."""
    d = dim_arg(dim, input.ndim, op)
    size = input.shape[d]
    if index.numel() and not capture.active():
        bad = out_of_range(index, -size if negatives else 0, size - 1)
        if bad is not None:
            raise IndexError(f"{op}(): index {bad} is out of bounds for dimension {d} with size {size}")
    return size


def index_fill(input, dim, index, value):
    """input with the slices at index along dim set to value (a negative index counts from the
    end, as torch's)."""
    from ..creation import zeros
    size = _check_along("index_fill", input, dim, index, negatives=True)
    if size and index.numel():
        index = remember(index.remainder(size), 0, size - 1)
    d, idx = _index_mask_and_source(input, dim, index, None)
    hit = zeros(tuple(input.shape), dtype=dt.int64, device=input.device).scatter(
        d, idx, 1) > 0
    # torch's names: IndexFillBackward0 for a number, IndexFillBackward1 for a tensor
    return rename(input.masked_fill(hit, value), "IndexFillBackward1" if isinstance(value, Tensor)
                  else "IndexFillBackward0")


@policy("index_copy")
def index_copy(input, dim, index, source):
    """input with its slices at index along dim replaced by source's."""
    from ..creation import zeros
    _check_along("index_copy", input, dim, index, negatives=False)
    d, idx = _index_mask_and_source(input, dim, index, source)
    hit = zeros(tuple(input.shape), dtype=dt.int64, device=input.device).scatter(d, idx, 1) > 0
    placed = (input * 0).detach().scatter(d, idx, source)
    return rename(where(hit, placed, input), "IndexCopyBackward0")
