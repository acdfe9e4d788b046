"""Movement ops that write a new buffer: cat/stack (and hstack/vstack/row_stack), pad, flip,
roll and narrow_copy."""
from __future__ import annotations

import numpy as np

from ... import autocast_state
from ... import dtypes as dt
from ...autograd import Node, grad_mode, record, rename
from ...memory_format import runs_channels_last
from ...tensor import Tensor, _wrap
from .._common import buffer_view, check_tensor, dim_arg, same_device
from ..indexing.index_bounds import inherit, union
from .views import _track, slice_op, split
from ..autocast_policy import cast


# ---- roll ---------------------------------------------------------------------------------------
class RollBackward0(Node):
    def backward(self, g):
        return roll(g, tuple(-s for s in self.shifts), self.dims)


def roll(input, shifts, dims=None):
    """Elements shifted along dims, wrapping around (dims None: over the flattened tensor).
    One node: each shifted dim is one backend kernel where there is one, else two slices of the
    buffer concatenated (a roll of indices keeps their known range)."""
    x = input
    check_tensor(x, "roll")
    if dims is None:
        return rename(roll(x.reshape(-1), shifts, 0).reshape(tuple(x.shape)), "RollBackward0", x)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
    b = x._backend
    buf = x._data
    for s, dim in zip(shifts, dims):
        d = dim_arg(dim, x.ndim, "roll")
        n = buf.shape[d]
        if n == 0 or s % n == 0:
            continue
        s %= n
        fast = b.fast("roll")
        rolled = fast(buf, s, d) if fast is not None else None
        if rolled is not None:
            buf = rolled
            continue
        lo, hi, one = [0] * buf.ndim, list(buf.shape), (1,) * buf.ndim
        tail_lo, head_hi = list(lo), list(hi)
        tail_lo[d] = head_hi[d] = n - s          # the last s along d, then the first n - s
        buf = b.concat([b.slice(buf, tuple(tail_lo), tuple(hi), one),
                        b.slice(buf, tuple(lo), tuple(head_hi), one)], d)
    if buf is x._data:              # nothing moved: still a new tensor, as torch's
        buf = b.copy_(b.empty(buf.shape, x.dtype, x._device.index), buf)
    out = inherit(_wrap(buf, x.dtype, x._device), x)
    if _track(x):
        node = RollBackward0()
        node.shifts, node.dims = shifts, dims
        record(node, (x,), out)
    return out


# ---- joining -----------------------------------------------------------------------------------
class CatBackward0(Node):
    """g split back into the inputs' pieces; where the inputs' dtypes differed (cat promotes),
    each piece is cast back to its input's dtype, as torch's engine does."""
    dtypes = None           # the inputs' dtypes, when they were not all one

    def backward(self, g):
        if not grad_mode._enabled:
            return self._on_buffers(g)
        parts = iter(split(g, [s for s in self.sizes if s is not None], self.dim))
        # skipped legacy 1-D empty inputs still get their (empty) gradient, as in PyTorch
        grads = tuple(next(parts) if s is not None else g.new_zeros(0) for s in self.sizes)
        if self.dtypes is None:
            return grads
        return tuple(x.to(d) for x, d in zip(grads, self.dtypes))

    def _on_buffers(self, g):
        """The same pieces as buffer slices of g (no graph to build: split's checks and view
        bookkeeping would be most of this node's cost)."""
        b, gd, d = g._backend, g._data, self.dim
        shape = gd.shape
        starts, stops, steps = [0] * len(shape), list(shape), (1,) * len(shape)
        lead = (slice(None),) * d
        out, at = [], 0
        for size in self.sizes:
            if size is None:        # a skipped legacy 1-D empty input
                out.append(g.new_zeros(0))
                continue
            piece = buffer_view(b, gd, lead + (slice(at, at + size),))
            if piece is None:
                starts[d], stops[d] = at, at + size
                piece = b.slice(gd, tuple(starts), tuple(stops), steps)
            out.append(_wrap(piece, g.dtype, g._device))
            at += size
        if self.dtypes is None:
            return tuple(out)
        return tuple(x if x.dtype is d else _wrap(b.cast(x._data, d), d, g._device)
                     for x, d in zip(out, self.dtypes))


def _concat(b, bufs, d):
    """The pieces joined along d: channels-last when every piece runs channels-last (torch's
    cat keeps a layout its inputs share), joined in their (N, H, W, C) memory order."""
    if bufs[0].ndim != 4 or not all(runs_channels_last(x) for x in bufs):
        return b.concat(bufs, d)
    nhwc = b.concat([b.permute(x, (0, 2, 3, 1)) for x in bufs], (0, 3, 1, 2)[d])
    return b.permute(nhwc, (0, 3, 1, 2))


def cat(tensors, dim=0):
    """The tensors joined along an existing dim, as torch.cat (also concat, concatenate)."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        tensors, = cast("cat", tensors)
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"cat(): argument 'tensors' must be a tuple or list of Tensors, got "
                        f"{type(tensors).__name__}")
    if not tensors:     # (a ValueError in torch's cat, a RuntimeError in the stacks)
        raise ValueError("cat(): expected a non-empty list of Tensors")
    one_kind = _alike(tensors)
    if not one_kind:
        _all_tensors(tensors, "cat")
    elif [t._data.ndim for t in tensors].count(1) == len(tensors) and not (
            tensors[0]._requires_grad and grad_mode._enabled):
        # 1-D pieces of one kind and no graph (token windows joined): nothing to check past
        # their kind (an empty one adds nothing, torch's legacy skip), no shape tuples built
        dim_arg(dim, 1, "cat")
        return _joined(tensors, [t._data for t in tensors], 0, tensors[0].dtype)
    shapes = [t._data.shape for t in tensors]   # (buffer shapes: tuples, no Size built)
    # PyTorch's legacy rule: 1-D empty tensors are skipped
    keep = [s != (0,) for s in shapes] if (0,) in shapes else None
    parts = tensors
    if keep is not None:
        if True not in keep:
            keep[0] = True
        parts = [t for t, k in zip(tensors, keep) if k]
        shapes = [t._data.shape for t in parts]
    ref = parts[0]
    rs = shapes[0]
    d = dim_arg(dim, len(rs), "cat")
    if shapes.count(rs) != len(shapes):
        _check_cat_shapes(parts, shapes, d)
    one_dtype = one_kind or _all_alike([t.dtype for t in parts])
    if not one_kind and not _all_alike([t._device for t in parts]):
        same_device("cat", *parts)
    dtype = ref.dtype if one_dtype else dt.result_type(*parts)
    bufs = [t._data for t in parts] if one_dtype else [
        t._data if t.dtype is dtype else t._backend.cast(t._data, dtype) for t in parts]
    out = _joined(parts, bufs, d, dtype)
    grad = ref._requires_grad if one_kind else True in [t._requires_grad for t in tensors]
    if grad and grad_mode._enabled:
        node = CatBackward0()
        node.sizes, node.dim = [s[d] for s in shapes], d
        if keep is not None:
            node.sizes = [t._data.shape[d] if k else None for t, k in zip(tensors, keep)]
        if not one_dtype:
            node.dtypes = [t.dtype for t in tensors]
        record(node, tensors, out)
    return out


def _all_tensors(tensors, op):
    """torch's TypeError for a list holding something other than Tensors."""
    if [type(t) for t in tensors].count(Tensor) != len(tensors):
        for t in tensors:
            check_tensor(t, op, "tensors")


def _joined(parts, bufs, d, dtype):
    """The tensor of the parts' buffers joined along d (a roll of known indices stays known)."""
    ref = parts[0]
    out = _wrap(_concat(ref._backend, bufs, d), dtype, ref._device)
    if not dtype.is_floating_point and ref._device.type != "cpu":
        union(out, parts)
    return out


def _alike(tensors):
    """Whether every one is a plain Tensor of the first's dtype, device and requires_grad: the
    usual list (a batch of samples, a layer's pieces), told in one pass (a plain loop: twice as
    fast as building a tuple of the four per tensor)."""
    first = tensors[0]
    if type(first) is not Tensor:
        return False
    dtype, device, grad = first.dtype, first._device, first._requires_grad
    for t in tensors:
        if (type(t) is not Tensor or t.dtype is not dtype or t._device is not device
                or t._requires_grad is not grad):
            return False
    return True


def _all_alike(values):
    """Whether the values are all equal to the first (list.count compares by identity first:
    no __eq__ call for the usual one shared dtype or device object)."""
    return values.count(values[0]) == len(values)


def _check_cat_shapes(parts, shapes, d):
    rs = shapes[0]
    for i, ts in enumerate(shapes):
        if ts != rs and (len(ts) != len(rs) or ts[:d] != rs[:d] or ts[d + 1:] != rs[d + 1:]):
            raise RuntimeError(f"cat: Sizes of tensors must match except in dimension {d}. Expected "
                               f"size {list(rs)} but got size {list(ts)} for tensor "
                               f"number {i} in the list.")


def nonempty(tensors, op):
    """torch's check that stack and its variants got at least one tensor."""
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")


def stack(tensors, dim=0):
    """The tensors (all of one shape) joined along a new dim, as torch.stack."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        tensors, = cast("stack", tensors)
    nonempty(tensors, "stack")
    check_tensor(tensors[0], "stack", "tensors")
    first = tensors[0]
    if _alike(tensors):
        alike, grad = True, first._requires_grad
    else:
        _all_tensors(tensors, "stack")
        alike = _all_alike([t.dtype for t in tensors]) and _all_alike([t._device for t in tensors])
        grad = True in [t._requires_grad for t in tensors]
    shapes = [t._data.shape for t in tensors]   # (buffer shapes: plain tuples, compared without Sizes)
    shape = shapes[0]
    if shapes.count(shape) != len(shapes):
        i = next(i for i, s in enumerate(shapes) if s != shape)
        raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} at "
                           f"entry 0 and {list(shapes[i])} at entry {i}")
    d = dim_arg(dim, len(shape) + 1, "stack")
    if alike and not (grad and grad_mode._enabled):
        # a DataLoader's collate stacks a batch of samples: one concat of the buffers, without
        # a recorded unsqueeze per sample
        b = first._backend
        if d == 0:      # the pieces joined along their first axis, then split it: no per-piece
            # reshape to (1, ...) (a 0-d piece still needs one: nothing to join along)
            bufs = [t._data for t in tensors] if shape else [b.reshape(t._data, (1,)) for t in tensors]
            return _wrap(b.reshape(b.concat(bufs, 0), (len(tensors),) + shape), first.dtype, first._device)
        one = shape[:d] + (1,) + shape[d:]
        return _wrap(b.concat([b.reshape(t._data, one) for t in tensors], d), first.dtype, first._device)
    return rename(cat([t.unsqueeze(d) for t in tensors], d), "StackBackward0")


def hstack(tensors):
    """The tensors joined along dim 1 (dim 0 for 1-D tensors; 0-d ones made 1-D first), as
    torch.hstack."""
    nonempty(tensors, "hstack")
    tensors = [t.reshape(1) if t.ndim == 0 else t for t in tensors]
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    """The tensors joined along dim 0, 0-d and 1-D ones made (1, n) rows, as torch.vstack
    (also row_stack)."""
    nonempty(tensors, "vstack")
    return cat([t.reshape(1, -1) if t.ndim < 2 else t for t in tensors], 0)


# ---- pad and flip ------------------------------------------------------------------------------
class ConstantPadNdBackward0(Node):
    def backward(self, g):
        starts = tuple(b for b, _ in self.widths)
        stops = tuple(b + s for (b, _), s in zip(self.widths, self.shape))
        return slice_op(g, starts, stops, (1,) * g.ndim)


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: `pad` lists (left, right) pairs from the last dim backwards;
    negative amounts crop. Modes: constant, reflect, replicate, circular."""
    x = inp = input
    check_tensor(x, "pad")
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise RuntimeError(f"pad: Padding length must be divisible by 2 and at most twice the "
                           f"number of dimensions of the input ({x.ndim}), got {len(pad)}")
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    if any(b < 0 or a < 0 for b, a in widths):     # crop first, then pad what is positive
        starts = tuple(max(-b, 0) for b, _ in widths)
        stops = tuple(s - max(-a, 0) for (_, a), s in zip(widths, x.shape))
        if any(st > sp for st, sp in zip(starts, stops)):
            raise RuntimeError(f"pad: negative padding {tuple(pad)} removes more than the input "
                               f"shape {tuple(x.shape)}")
        x = slice_op(x, starts, stops, (1,) * x.ndim)
        widths = [(max(b, 0), max(a, 0)) for b, a in widths]
    if mode == "constant":
        out = _wrap(x._backend.pad(x._data, tuple(widths), 0 if value is None else value),
                    x.dtype, x._device)
        if _track(x):
            node = ConstantPadNdBackward0()
            node.widths, node.shape = widths, x.shape
            record(node, (x,), out)
        return out
    if value not in (None, 0):
        raise ValueError(f"pad: padding mode '{mode}' doesn't take in value argument")
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad: unknown padding mode {mode!r}; expected 'constant', "
                                  f"'reflect', 'replicate' or 'circular'")
    if autocast_state.on and mode != "circular":    # torch's reflection_padNd / replication_padNd
        padded = len(pad) // 2
        x, = cast(f"{'reflection' if mode == 'reflect' else 'replication'}_pad{padded}d", x)
    for ax, (b, a) in enumerate(widths):     # gather each padded axis by a host-built index
        if b == 0 and a == 0:
            continue
        n = x.shape[ax]
        idx = np.arange(-b, n + a)
        if mode == "reflect":
            if b >= n or a >= n:
                raise RuntimeError(f"pad: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({b}, {a}) at dimension {ax} of "
                                   f"input {tuple(x.shape)}")
            period = 2 * (n - 1)
            idx = np.abs((idx + period) % period if period else idx * 0)
            idx = np.where(idx >= n, period - idx, idx)
        elif mode == "replicate":
            idx = np.clip(idx, 0, n - 1)
        else:
            if b > n or a > n:
                raise RuntimeError("pad: Padding value causes wrapping around more than once.")
            idx = idx % n
        from ..creation import tensor
        x = x.index_select(ax, tensor(idx, device=x.device))
    # torch's kernel names: ReflectionPad2DBackward0 for (left, right, top, bottom), ...;
    # its circular padding copies into slices of a new tensor
    name = "CopySlices" if mode == "circular" else \
        f"{'Reflection' if mode == 'reflect' else 'Replication'}Pad{len(pad) // 2}DBackward0"
    return rename(x, name, inp)


class FlipBackward0(Node):
    def backward(self, g):
        return flip(g, self.axes)


def flip(input, dims):
    """A copy with the order of elements reversed along dims, as torch.flip."""
    x = input
    dims = dims if isinstance(dims, (tuple, list)) else (dims,)
    axes = tuple(sorted(dim_arg(d, x.ndim, "flip") for d in dims))
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"flip: dims has duplicates, got {tuple(dims)}")
    if x.ndim == 0:     # dim 0 / -1 of a scalar is accepted, and there is nothing to reverse
        axes = ()
    out = _wrap(x._backend.flip(x._data, axes), x.dtype, x._device)
    if _track(x):
        node = FlipBackward0()
        node.axes = axes
        record(node, (x,), out)
    return out


def narrow_copy(input, dim, start, length):
    """narrow() as a new tensor, not a view."""
    check_tensor(input, "narrow_copy")
    return rename(input.narrow(dim, start, length).clone(), "NarrowCopyBackward0")


row_stack = vstack
