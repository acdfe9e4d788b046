"""Indexing: x[key] and x[key] = v, gather/scatter, index_select, nonzero/argwhere,
masked_select, unravel_index.

`x[key]` is built from differentiable pieces: one strided slice for the ints and slices, a
reshape for None and dropped dims, then (for integer/boolean index tensors) one `take` along a
flattened axis. Its gradient therefore needs no special code of its own.
"""
from __future__ import annotations

import math

import numpy as np

from ... import autograd, capture, dtypes as dt
from ...autograd import Node, grad_mode, node_class, record, rename
from ...tensor import Tensor, _wrap, bump_version, rebind
from .._common import buffer_view, check_tensor, check_writable, dim_arg, same_device
from .index_bounds import inherit, known, out_of_range, widen
from .key_names import torch_indexing
from .keys import basic_plan, int_slice, int_slice_bounds, normalize_key
from ..movement.views import AliasBackward0, _unslice, reshape_to, slice_op
from ..autocast_policy import policy


# ---- take / gather / scatter as differentiable ops -------------------------------------------
class IndexSelectBackward0(Node):
    """The gradient of x taken along one axis at an index (index_select, and x[idx] and the
    others built on take_along): g added into zeros at the indexed positions."""
    def backward(self, g):
        (index,) = self.saved
        axis, shape = self.axis, self.shape
        pre, post = shape[:axis], shape[axis + 1:]
        n = index.numel()
        gflat = g.reshape(pre + (n,) + post)
        idx = index._backend.reshape(index._data, (1,) * len(pre) + (n,) + (1,) * len(post))
        idx = index._backend.expand(idx, gflat.shape)
        b = g._backend
        z = b.full(shape, 0, g.dtype, g._device.index)
        return _wrap(b.scatter_add(z, idx, b.contiguous(gflat._data), axis), g.dtype, g._device)


def take_along(x, index, axis, checked=False):
    """x indexed along one axis by an int64 tensor of any shape (numpy.take semantics);
    `checked`: the caller has checked the index bounds."""
    if index.dtype is not dt.int64:
        index = index.to(dt.int64)
    if not (checked or x._backend.checks_indices) and index.numel() and not capture.active():
        size = x.shape[axis]
        bad = out_of_range(index, -size, size - 1)      # (a host sync unless the range is known)
        if bad is not None:
            raise IndexError(f"index {bad} is out of range for dimension {axis} with size {size} "
                             f"(input shape {tuple(x.shape)})")
    try:
        data = x._backend.take(x._data, index._data, axis)
    except IndexError as e:
        raise IndexError(f"index out of range for dimension {axis} with size {x.shape[axis]} "
                         f"(input shape {tuple(x.shape)}): {e}") from None
    out = _wrap(data, x.dtype, x._device)
    if x._requires_grad and grad_mode._enabled:
        node = IndexSelectBackward0()
        node.axis, node.shape, node.saved = axis, x.shape, (index,)
        record(node, (x,), out)
    return out


def _index_tensor(index, op):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index, got {index.dtype}")
    return index


def index_select(input, dim, index):
    """The entries of input at a 1-D int64/int32 index's positions along dim, as torch.index_select."""
    x = input
    check_tensor(x, "index_select")
    index = _index_tensor(index, "index_select")
    if index.ndim > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got shape {tuple(index.shape)}")
    d = dim_arg(dim, x.ndim, "index_select")
    size = x.shape[d] if x.ndim else 1
    # torch refuses a negative index here (x[idx] takes it): checked on every backend, as a
    # take's own check (NumPy's) would wrap it; no host read when the index's range is known
    if index.numel() and not capture.active():
        bad = out_of_range(index, 0, size - 1)
        if bad is not None:
            raise IndexError(f"index_select(): index out of range in self: index {bad} is out of range "
                             f"for dimension {d} with size {size} (input shape {tuple(x.shape)})")
    if x.ndim == 0:
        out = take_along(x.reshape(1), index.reshape(-1), 0, checked=True).reshape(())
        return rename(out, "IndexSelectBackward0")
    return take_along(x, index.reshape(-1), d, checked=True)


class GatherBackward0(Node):
    def backward(self, g):
        (index,) = self.saved
        b = g._backend
        z = b.full(self.shape, 0, g.dtype, g._device.index)
        return _wrap(b.scatter_add(z, index._data, b.contiguous(g._data), self.dim), g.dtype, g._device)


def _check_gather_shapes(op, x, d, index, src=None):
    if index.ndim != x.ndim:
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as input "
                           f"tensor ({index.ndim} vs {x.ndim})")
    for i, (a, b) in enumerate(zip(index.shape, x.shape)):
        if i != d and a > b:
            raise RuntimeError(f"{op}(): Size does not match at dimension {i} expected index "
                               f"{tuple(index.shape)} to be no larger than self {tuple(x.shape)} apart "
                               f"from dimension {d}")
    if src is not None and any(a > b for a, b in zip(index.shape, src.shape)):
        raise RuntimeError(f"{op}(): Expected index {tuple(index.shape)} to be no larger than src "
                           f"{tuple(src.shape)}")
    if index.numel() and not capture.active():      # (no host reads inside pg.jit)
        bad = out_of_range(index, 0, x.shape[d] - 1)   # (a host sync unless the range is known)
        if bad is not None:
            raise RuntimeError(f"{op}(): index {bad} is out of bounds for dimension {d} with size "
                               f"{x.shape[d]}")


def gather(input, dim, index):
    """Values of input picked along dim by index, `out[i][j] = input[index[i][j]][j]` for dim 0,
    as torch.gather."""
    x = input
    check_tensor(x, "gather")
    index = _index_tensor(index, "gather").to(dt.int64)
    d = dim_arg(dim, x.ndim, "gather")
    _check_gather_shapes("gather", x, d, index)
    # torch.gather reads only the index-shaped block of x off `dim`: narrow x to it (a view), so
    # the backend primitive never sees shapes it would broadcast
    stops = tuple(x.shape[i] if i == d else index.shape[i] for i in range(x.ndim))
    if stops != tuple(x.shape):
        from ..movement.views import slice_op
        x = slice_op(x, (0,) * x.ndim, stops, (1,) * x.ndim)
    out = _wrap(x._backend.gather(x._data, index._data, d), x.dtype, x._device)
    if x._requires_grad and grad_mode._enabled:
        node = GatherBackward0()
        node.dim, node.shape, node.saved = d, x.shape, (index,)
        record(node, (x,), out)
    return out


class ScatterBackward0(Node):
    def backward(self, g):
        (index,) = self.saved
        gx = gsrc = None
        if self.next_edges[0] is not None:
            # scatter_add passes g through; scatter overwrote the indexed positions
            gx = g if self.add else scatter(g, self.dim, index, 0.0)
        if len(self.next_edges) > 1 and self.next_edges[1] is not None:
            gsrc = gather(g, self.dim, index)
            if gsrc.shape != self.src_shape:   # src positions outside the index block: zero
                from ..movement.copies import pad
                widths = []
                for a, b in zip(reversed(gsrc.shape), reversed(self.src_shape)):
                    widths += [0, b - a]
                gsrc = pad(gsrc, widths)
        return gx, gsrc


# torch's names for scatter with a value and for scatter_add (ScatterBackward0's formula)
ScatterBackward1 = node_class(ScatterBackward0, "ScatterBackward1")
ScatterAddBackward0 = node_class(ScatterBackward0, "ScatterAddBackward0")


def _clone_buf(t):
    b = t._backend
    return b.copy_(b.empty(tuple(t.shape), t.dtype, t._device.index), t._data)


def _scatter(op, x, dim, index, src, add):
    check_tensor(x, op)
    index = _index_tensor(index, op).to(dt.int64)
    d = dim_arg(dim, x.ndim, op)
    value_src = not isinstance(src, Tensor)
    if value_src:
        src_t = _wrap(x._backend.full(tuple(index.shape), src, x.dtype, x._device.index), x.dtype, x._device)
    else:
        src_t = src
        same_device(op, x, index, src_t)
        if src_t.dtype is not x.dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype ({x.dtype} vs "
                               f"{src_t.dtype})")
    _check_gather_shapes(op, x, d, index, src_t)
    b = x._backend
    srcbuf = src_t._data
    if src_t.shape != index.shape:   # only the leading index-shaped block of src is used
        srcbuf = b.slice(srcbuf, (0,) * src_t.ndim, tuple(index.shape), (1,) * src_t.ndim)
    base = _clone_buf(x)
    (b.scatter_add if add else b.scatter)(base, index._data, srcbuf, d)
    out = _wrap(base, x.dtype, x._device)
    tracked = [x] + ([] if value_src else [src_t])
    if autograd.needs_grad(*tracked):
        node = (ScatterAddBackward0 if add else ScatterBackward1 if value_src else ScatterBackward0)()
        node.dim, node.add, node.saved = d, add, (index,)
        node.src_shape = src_t.shape
        record(node, tracked, out)
    return out


def scatter(input, dim, index, src=None, value=None):
    """A copy of input with src's values (or the scalar value) written at index along dim, as
    torch.scatter. No `reduce` argument: torch's reduce="add"/"multiply" form raises TypeError."""
    x = input
    return _scatter("scatter", x, dim, index, value if src is None else src, add=False)


@policy("scatter_add")
def scatter_add(input, dim, index, src):
    """A copy of input with src's values added at index along dim (repeats add up), as
    torch.scatter_add."""
    x = input
    return _scatter("scatter_add", x, dim, index, src, add=True)


def nonzero(input, as_tuple=False):
    """The indices of the nonzero elements, as an (n, ndim) int64 tensor (one per dim with
    as_tuple), as torch.nonzero."""
    x = input
    check_tensor(x, "nonzero")
    idx = _wrap(x._backend.nonzero(x._data if x.ndim else x._backend.reshape(x._data, (1,))),
                dt.int64, x._device)
    if as_tuple:
        if x.ndim == 0:
            return (idx[:, 0],)
        return tuple(idx[:, i] for i in range(x.ndim))
    return idx if x.ndim else idx[:, :0]


def masked_select(input, mask):
    """The elements of input where mask is True (both broadcast), in a 1-D tensor, as
    torch.masked_select."""
    x = input
    if not isinstance(mask, Tensor) or mask.dtype is not dt.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got "
                           f"{mask.dtype if isinstance(mask, Tensor) else type(mask).__name__}")
    try:
        shape = np.broadcast_shapes(x.shape, mask.shape)
    except ValueError:
        raise RuntimeError(f"masked_select: the shapes of input {list(x.shape)} and mask {list(mask.shape)} "
                           f"can't be broadcast together") from None
    return rename(x.expand(shape)[mask.expand(shape)], "MaskedSelectBackward0", x)


# ---- x[key] -----------------------------------------------------------------------------------
def _plan(x, key):
    """Split a key into a basic strided slice + reshape, and the advanced index tensors."""
    items = normalize_key(x, key)
    n = x.ndim
    starts, stops, steps = [0] * n, list(x.shape), [1] * n
    out_shape, adv = [], []      # adv: (position in the basic result, int64 index tensor)
    d = 0
    for k in items:
        if k is None:
            out_shape.append(1)
        elif isinstance(k, bool):
            from ..creation import tensor
            adv.append((len(out_shape), tensor([0] if k else [], dtype=dt.int64, device=x.device)))
            out_shape.append(1)
        elif isinstance(k, (int, np.integer)):
            size = x.shape[d]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {size}")
            k = int(k) + size if k < 0 else int(k)
            starts[d], stops[d] = k, k + 1
            d += 1
        elif isinstance(k, slice):
            if k.step is not None and k.step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, step = k.indices(x.shape[d])
            stop = max(stop, start)
            starts[d], stops[d], steps[d] = start, stop, step
            out_shape.append(len(range(start, stop, step)))
            d += 1
        elif k.dtype in (dt.bool_, dt.uint8):
            k = k if k.dtype is dt.bool_ else k.bool()
            if tuple(k.shape) != tuple(x.shape[d:d + k.ndim]):
                raise IndexError(f"The shape of the mask {tuple(k.shape)} at index {d} does not match "
                                 f"the shape of the indexed tensor {tuple(x.shape)}")
            if k.ndim == 0:
                adv.append((len(out_shape), nonzero(k.reshape(1))[:, 0]))
                out_shape.append(1)
                continue
            coords = nonzero(k)
            for j in range(k.ndim):
                adv.append((len(out_shape), coords[:, j]))
                out_shape.append(x.shape[d + j])
            d += k.ndim
        else:  # integer index tensor
            adv.append((len(out_shape), k if k.dtype is dt.int64 else k.long()))
            out_shape.append(x.shape[d])
            d += 1
    out_shape.extend(x.shape[d:])
    return tuple(starts), tuple(stops), tuple(steps), tuple(out_shape), adv


def _basic(x, starts, stops, steps, out_shape):
    shape = x._data.shape
    if starts != (0,) * len(shape) or stops != shape or steps != (1,) * len(shape):
        return slice_op(x, starts, stops, steps, out_shape)     # (one node for slice and view)
    return inherit(x if shape == out_shape else reshape_to(x, out_shape), x)


def _advanced(v, adv):
    """Apply advanced indices (positions in v) with NumPy's placement rules."""
    positions = [p for p, _ in adv]
    idx = [t for _, t in adv]
    bshape = np.broadcast_shapes(*(t.shape for t in idx))
    for p, t in adv:   # bounds, with negative indices allowed down to -size
        size = v.shape[p]
        if t.numel() and not capture.active():      # (no host reads inside pg.jit)
            bad = out_of_range(t, -size, size - 1)  # (a host sync unless t's range is known)
            if bad is not None:
                raise IndexError(f"index {bad} is out of bounds for dimension {p} with size {size}")
    if len(adv) == 1:
        return inherit(take_along(v, idx[0], positions[0], checked=True), v)
    sizes = [v.shape[p] for p in positions]
    lin = None
    for t, size, stride in zip(idx, sizes, _strides(sizes)):
        t = t.remainder(size) if size else t  # wrap negatives
        term = t * stride
        lin = term if lin is None else lin + term
    lin = lin.expand(bshape)
    rest = [p for p in range(v.ndim) if p not in positions]
    moved = v.permute(positions + rest).reshape((math.prod(sizes),) + tuple(v.shape[p] for p in rest))
    out = take_along(moved, lin, 0, checked=True)    # (*bshape, *rest)
    adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
    if adjacent and positions[0] != 0:
        nb, first = len(bshape), positions[0]
        order = list(range(nb, nb + first)) + list(range(nb)) + list(range(nb + first, out.ndim))
        out = out.permute(order)
    return out


def _take_rows(x, idx):
    """x[idx] for one integer index tensor: the rows idx names, with _advanced's bounds error
    (a backend that checks indices itself is asked first, and read only when it refuses)."""
    size = x._data.shape[0]
    if x._backend.checks_indices:
        try:
            return take_along(x, idx, 0, checked=True)
        except IndexError:
            pass        # (an index out of range: found and named below, as torch words it)
    if idx._data.size and not capture.active():         # (no host reads inside pg.jit)
        bad = out_of_range(idx, -size, size - 1)        # (a host sync unless idx's range is known)
        if bad is not None:
            raise IndexError(f"index {bad} is out of bounds for dimension 0 with size {size}")
    return take_along(x, idx, 0, checked=True)


def _strides(sizes):
    out, acc = [], 1
    for s in reversed(sizes):
        out.append(acc)
        acc *= s
    return out[::-1]


class BasicViewBackward(Node):
    """x[key] of ints and slices, taken by the backend's indexing: the gradient is g written
    into zeros of x's shape at the same key. The slice plan (starts, stops, steps) is made
    only when the backward itself must be recorded (create_graph), and then by slice_op's
    own adjoint."""
    def backward(self, g):
        if not grad_mode._enabled:
            b = g._backend
            z = b.full(self.shape, 0, g.dtype, g._device.index)
            view = buffer_view(b, z, self.key)
            if view is not None:
                b.copy_(view, g._data)
                return _wrap(z, g.dtype, g._device)
        starts, stops, steps, _ = basic_plan(self.shape, self.key)
        sliced = tuple(len(range(a, e, s)) for a, e, s in zip(starts, stops, steps))
        return _unslice(reshape_to(g, sliced), self.shape, starts, stops, steps)

    def add_into(self, acc, g):
        """g added into acc[key] in place (the engine's own gradient buffer of x's shape)."""
        b = acc._backend
        if acc.dtype is not g.dtype or acc._data.shape != self.shape or g._backend is not b:
            return None
        view = buffer_view(b, acc._data, self.key)
        if view is None or view.shape != g._data.shape:
            return None
        b.binary("add", view, g._data, out=view)
        return (None,)


# BasicViewBackward under the names torch gives the views of a key of ints and slices
_BASIC_VIEWS = {n: node_class(BasicViewBackward, n)
                for n in ("SelectBackward0", "SliceBackward0", "AliasBackward0")}


def getitem(x, key):
    """x[key] with PyTorch's rules: ints and slices are basic (a view) and applied first, then
    index tensors/lists/masks with NumPy's placement of the advanced dims.

    Differs from torch 2.13 in two deprecated corners, where paragrad follows NumPy: a nested
    list such as x[[[0, 1], [1, 2]]] is one index array (torch still reads it as a tuple and
    warns that this will change), and a second '...' raises IndexError."""
    if type(key) is slice and (type(key.start) is Tensor or type(key.stop) is Tensor):
        key = int_slice(key)           # data[i:i + 8] with i a 0-d tensor, the common form
    view = _fast_view(x, key)           # ints and slices, by the backend's own indexing
    if view is None:
        int_key = int_slice_bounds(key)
        if int_key is not None:         # data[i:i + 8] with i a 0-d tensor
            key = int_key
            view = _fast_view(x, key)
    if view is not None:
        out = _wrap(view, x.dtype, x._device)
        out._vc = x._vc                 # (a basic view always shares x's buffer: _shared's case)
        inherit(out, x)
        if x._requires_grad and grad_mode._enabled:
            node = _BASIC_VIEWS[torch_indexing(x._data.shape, key)]()
            node.shape, node.key = x._data.shape, key
            record(node, (x,), out)
        return out
    if type(key) is Tensor and (key.dtype is dt.int64 or key.dtype is dt.int32) and x._data.ndim \
            and key._device is x._device:
        out = inherit(_take_rows(x, key), x)   # x[idx], the batch gather: no general planning
    elif (plan := basic_plan(x._data.shape, key)) is not None:    # ints and slices only
        out = slice_op(x, *plan)        # (a new view even of everything: x[:] is not x, as torch)
    else:
        starts, stops, steps, out_shape, adv = _plan(x, key)
        out = _basic(x, starts, stops, steps, out_shape)
        if adv:
            out = _advanced(out, adv)
        elif out is x:                  # x[...]: a new view (torch's alias), not x itself
            out = reshape_to(x, x._data.shape, AliasBackward0)
    if x._requires_grad and grad_mode._enabled:
        rename(out, torch_indexing(x._data.shape, key), x)
    return out


def setitem(x, key, value):
    """x[key] = value (value broadcast to the indexed shape, cast to x's dtype)."""
    if isinstance(value, Tensor):
        if value._device is not x._device:
            same_device("setitem", x, value)
        if value.dtype is not x.dtype:
            value = value.to(x.dtype)
    elif not isinstance(value, (bool, int, float, np.generic)):     # lists, arrays
        from ..creation import tensor
        value = tensor(value, dtype=x.dtype, device=x.device)
    tracked = grad_mode._enabled and (
        x._requires_grad or (isinstance(value, Tensor) and value._requires_grad))
    if tracked:
        check_writable(x, "setitem")
    key = int_slice_bounds(key) or key
    if not tracked:
        target = _basic_buffer(x, key)
        if target is not None:          # data code's y[i:j] = v, without the general planning
            if isinstance(value, Tensor) and value._data.shape != target.shape:
                _broadcast_check(value, target.shape)
            if target.size:
                before = known(x)
                x._backend.copy_(target, value._data if isinstance(value, Tensor) else value)
                bump_version(x)
                widen(x, before, value)
            return
    starts, stops, steps, out_shape, adv = _plan(x, key)
    if not adv and not tracked:
        with autograd.no_grad():
            target = _basic(x, starts, stops, steps, out_shape)
        if target.numel() == 0:         # y[n:] = v past the end: nothing to write, as torch
            _broadcast_check(value, target.shape)
            return
        if not _shares_memory(target, x):
            raise RuntimeError("setitem: this backend could not produce a view for the index")
        _broadcast_check(value, target.shape)
        buf = value._data if isinstance(value, Tensor) else value
        before = known(x)
        x._backend.copy_(target._data, buf)
        bump_version(x)
        widen(x, before, value)
        return
    # general case: find the flat positions the key addresses, then scatter into them
    from ..creation import arange
    with autograd.no_grad():
        pos = getitem(arange(x.numel(), device=x.device).reshape(x.shape), key)
    _broadcast_check(value, pos.shape)
    if isinstance(value, Tensor):
        vals = value.expand(pos.shape).reshape(-1)
    else:
        vals = _wrap(x._backend.full((pos.numel(),), value, x.dtype, x._device.index), x.dtype, x._device)
    if tracked:
        out = scatter(x.reshape(-1), 0, pos.reshape(-1), vals).reshape(x.shape)
        rebind(x, rename(out, torch_indexing(x._data.shape, key, True, value)))
        return
    b = x._backend
    flat = b.reshape(x._data, (-1,))
    src = b.contiguous(vals._data)
    if _shares_memory_buf(flat, x._data):
        b.scatter(flat, pos.reshape(-1)._data, src, 0)
    else:
        flat = b.reshape(_clone_buf(x), (-1,))
        b.scatter(flat, pos.reshape(-1)._data, src, 0)
        b.copy_(x._data, b.reshape(flat, x.shape))
    bump_version(x)


def _fast_view(x, key):
    """x's buffer indexed by the backend itself (its `basic_view` fast path), or None."""
    return buffer_view(x._backend, x._data, key)


def _basic_buffer(x, key):
    """The view of x's buffer that a key of ints and slices addresses (see keys.basic_plan), or None."""
    view = _fast_view(x, key)
    if view is not None:
        return view
    plan = basic_plan(x._data.shape, key)
    if plan is None:
        return None
    starts, stops, steps, out_shape = plan
    b = x._backend
    view = b.slice(x._data, starts, stops, steps)
    if view.shape != out_shape:         # drop the dims an int picked (size 1: still a view)
        view = b.reshape(view, out_shape)
    return view if view.size == 0 or _shares_memory_buf(view, x._data) else None


def _broadcast_check(value, shape):
    if isinstance(value, Tensor):
        try:
            if np.broadcast_shapes(value.shape, shape) != tuple(shape):
                raise ValueError
        except ValueError:
            raise RuntimeError(f"setitem: shape mismatch: value tensor of shape {tuple(value.shape)} "
                               f"cannot be broadcast to indexing result of shape {tuple(shape)}") from None


def _shares_memory(a, b):
    return _shares_memory_buf(a._data, b._data)


def _shares_memory_buf(a, b):
    fn = getattr(a, "base", None)
    if a is b:
        return True
    try:
        return np.shares_memory(a, b) if isinstance(a, np.ndarray) else fn is not None
    except TypeError:
        return fn is not None


def argwhere(input):
    """The indices of the nonzero elements, one row each (nonzero's (N, ndim) form)."""
    return nonzero(input)


def unravel_index(indices, shape):
    """Coordinates of flat indices into `shape`, one tensor per dim; like torch, indices wrap
    modulo each dim's size (so out-of-range and negative indices wrap, they don't raise)."""
    check_tensor(indices, "unravel_index", "indices")
    if indices.dtype.is_floating_point or indices.dtype is dt.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    out, rest = [], indices.long()
    for size in reversed(shape):
        out.append(rest.remainder(size))
        rest = rest.div(size, rounding_mode="floor")
    return tuple(reversed(out))
