"""Movement ops: reshape/view, permute/transpose, expand/repeat, squeeze/unsqueeze, slicing,
cat/stack/split/chunk, pad and flip. Outputs are views where the backend's layout allows."""
from __future__ import annotations

import math

import numpy as np

from ... import autograd
from ... import dtypes as dt
from ...autograd import Node, record
from ...tensor import Tensor, _wrap, view_of
from .._common import buffer_view, check_tensor, dim_arg, same_device
from ..indexing.index_bounds import inherit, union


def _sizes(args, op):
    """Accept f(2, 3), f((2, 3)), f([2, 3]) and Size."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    out = []
    for a in args:
        if isinstance(a, Tensor):
            a = int(a.item())
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"{op}(): shape must be a sequence of ints, got {a!r}")
        out.append(int(a))
    return tuple(out)


def _shared(out, x):
    """Views (not copies) share x's version counter, so in-place writes through either are
    seen by backward's saved-tensor check. Either way out holds x's values (index_bounds)."""
    if out._data is x._data or not out._backend.owns_memory(out._data):
        view_of(out, x)
    return inherit(out, x)          # the same values: a known index range holds


def _track(x):
    return x._requires_grad and autograd._grad_enabled


# ---- reshape family ------------------------------------------------------------------------
class ReshapeBackward(Node):
    def backward(self, g):
        return reshape_to(g, self.shape)


def reshape_to(x, shape):
    """reshape with an already valid, fully known shape tuple: the unchecked core that
    reshape and backward formulas share."""
    data = x._data if shape == x._data.shape else x._backend.reshape(x._data, shape)
    out = _shared(_wrap(data, x.dtype, x._device), x)
    if x._requires_grad and autograd._grad_enabled:
        node = ReshapeBackward()
        node.shape = x._data.shape
        record(node, (x,), out)
    return out


def _infer_shape(shape, numel, op, in_shape):
    if shape.count(-1) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"{op}: invalid shape dimension {s}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel} "
                               f"(input shape {tuple(in_shape)})")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel} "
                           f"(input shape {tuple(in_shape)})")
    return shape


def reshape(input, *sizes, shape=None):
    """Same elements in a new shape (-1 inferred), given as sizes or a tuple (or shape=, as
    torch.reshape). A view when the layout allows, as PyTorch; paragrad's `view` is the same
    function (it does not reject non-viewable layouts)."""
    x = input
    if shape is not None:
        if sizes:
            raise TypeError("reshape(): the shape was given both positionally and as shape=")
        sizes = (tuple(shape),)
    shape = sizes
    check_tensor(x, "reshape")
    if len(shape) == 1 and type(shape[0]) is tuple:      # the common reshape((a, b)) call
        shape = shape[0]
    if not (shape == x._data.shape and all(type(s) is int for s in shape)):
        shape = _infer_shape(_sizes(shape, "reshape"), x.numel(), "reshape", x.shape)
    return reshape_to(x, shape)


view = reshape


def view_as(x, other):
    return reshape(x, other.shape)


def reshape_as(x, other):
    return reshape(x, other.shape)


def flatten(input, start_dim=0, end_dim=-1):
    x = input
    if x.ndim == 0:
        return reshape(x, 1)
    s, e = dim_arg(start_dim, x.ndim, "flatten"), dim_arg(end_dim, x.ndim, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = x.shape
    return reshape(x, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


def unflatten(input, dim, sizes):
    x = input
    d = dim_arg(dim, x.ndim, "unflatten")
    sizes = _infer_shape(tuple(sizes), x.shape[d], "unflatten", x.shape)
    return reshape(x, x.shape[:d] + sizes + x.shape[d + 1:])


def unsqueeze(input, dim):
    x = input
    d = dim_arg(dim, x.ndim + 1, "unsqueeze")
    s = x._data.shape       # (a plain tuple; the new shape needs none of reshape's checks)
    return reshape_to(x, s[:d] + (1,) + s[d:])


def squeeze(input, dim=None):
    x = input
    if dim is None:
        axes = [i for i, s in enumerate(x.shape) if s == 1]
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        axes = [dim_arg(d, x.ndim, "squeeze") for d in dims]
        axes = [a for a in axes if x.ndim and x.shape[a] == 1]
    return reshape_to(x, tuple(s for i, s in enumerate(x._data.shape) if i not in axes))


# ---- gradients of broadcasts -------------------------------------------------------------
def sum_to(g, shape):
    """Reduce a broadcast gradient back to an input's shape (differentiable)."""
    gshape, shape = g._data.shape, tuple(shape)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and gshape[i + lead] != 1)
    if axes:
        g = g.sum(dim=axes, keepdim=True)
    return reshape_to(g, shape) if g._data.shape != shape else g


def grad_for(g, t):
    """Gradient g shaped and typed for input t (undoing broadcasting and promotion)."""
    g = sum_to(g, t.shape)
    return g if g.dtype is t.dtype else g.to(t.dtype)


# ---- permutations ----------------------------------------------------------------------------
class PermuteBackward(Node):
    def backward(self, g):
        inverse = [0] * len(self.axes)
        for i, a in enumerate(self.axes):
            inverse[a] = i
        return permute_to(g, tuple(inverse))


def permute(input, *dims):
    x = input
    check_tensor(x, "permute")
    dims = _sizes(dims, "permute")
    if len(dims) != x.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not "
                           f"match the length of the desired ordering of dimensions i.e. input.dim() "
                           f"= {x.ndim} is not equal to len(dims) = {len(dims)}")
    axes = tuple(dim_arg(d, x.ndim, "permute") for d in dims)
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"permute: repeated dim in {dims}")
    return permute_to(x, axes)


def permute_to(x, axes):
    """permute with valid non-negative axes: the unchecked core."""
    out = _shared(_wrap(x._backend.permute(x._data, axes), x.dtype, x._device), x)
    if x._requires_grad and autograd._grad_enabled:
        node = PermuteBackward()
        node.axes = axes
        record(node, (x,), out)
    return out


def transpose(input, dim0, dim1):
    x = input
    check_tensor(x, "transpose")
    n = x.ndim
    if n == 0:
        dim_arg(dim0, 0, "transpose"), dim_arg(dim1, 0, "transpose")
        return reshape(x, ())
    a, b = dim_arg(dim0, n, "transpose"), dim_arg(dim1, n, "transpose")
    axes = list(range(n))
    axes[a], axes[b] = axes[b], axes[a]
    return permute_to(x, tuple(axes))       # (a valid permutation: none of permute's checks)


swapaxes = swapdims = transpose


def t(input):
    x = input
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return transpose(x, 0, -1) if x.ndim == 2 else reshape(x, x.shape)


def T(x):
    return permute(x, tuple(range(x.ndim - 1, -1, -1)))


def mT(x):
    n = x._data.ndim
    if n < 2:
        raise RuntimeError(f"mT: tensor of dimension {n} has no matrix transpose (need >= 2)")
    return permute_to(x, tuple(range(n - 2)) + (n - 1, n - 2))


def movedim(input, source, destination):
    x = input
    src = [dim_arg(d, x.ndim, "movedim") for d in (source if isinstance(source, (tuple, list)) else [source])]
    dst = [dim_arg(d, x.ndim, "movedim") for d in (destination if isinstance(destination, (tuple, list)) else [destination])]
    if len(src) != len(dst):
        raise RuntimeError("movedim: Invalid source or destination dims: source and destination "
                           "must have the same number of dims")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in source {source} or destination {destination}")
    if x.ndim == 0:
        return reshape(x, ())
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(x, order)


# ---- broadcasting ------------------------------------------------------------------------------
class ExpandBackward(Node):
    def backward(self, g):
        return sum_to(g, self.shape)


def expand(x, *sizes):
    check_tensor(x, "expand")
    sizes = _sizes(sizes, "expand")
    if len(sizes) < x.ndim:
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater or "
                           f"equal to the number of dimensions in the tensor ({x.ndim})")
    lead = len(sizes) - x.ndim
    shape = []
    for i, s in enumerate(sizes):
        cur = x.shape[i - lead] if i >= lead else None
        if s == -1:
            if cur is None:
                raise RuntimeError(f"expand: -1 is not allowed in a leading, non-existing dimension "
                                   f"({i})")
            s = cur
        elif cur is not None and cur != s and cur != 1:
            raise RuntimeError(f"expand: The expanded size of the tensor ({s}) must match the "
                               f"existing size ({cur}) at non-singleton dimension {i}.  Target sizes: "
                               f"{list(sizes)}.  Tensor sizes: {list(x.shape)}")
        shape.append(s)
    return expand_to(x, tuple(shape))


def expand_to(x, shape):
    """expand to a valid target shape: the unchecked core."""
    if shape == x._data.shape:
        return reshape_to(x, shape)
    out = _shared(_wrap(x._backend.expand(x._data, shape), x.dtype, x._device), x)
    if x._requires_grad and autograd._grad_enabled:
        node = ExpandBackward()
        node.shape = x._data.shape
        record(node, (x,), out)
    return out


def expand_as(x, other):
    return expand(x, other.shape)


def broadcast_to(input, shape):
    x = input
    return expand(x, shape)


def repeat(x, *sizes):
    """Tile x: out.shape[i] = x.shape[i] * sizes[i] (leading dims added as needed)."""
    sizes = _sizes(sizes, "repeat")
    if len(sizes) < x.ndim:
        raise RuntimeError(f"repeat: Number of dimensions of repeat dims ({len(sizes)}) can not be "
                           f"smaller than number of dimensions of tensor ({x.ndim})")
    shape = (1,) * (len(sizes) - x.ndim) + tuple(x.shape)
    inter = [v for s in shape for v in (1, s)]
    big = [v for r, s in zip(sizes, shape) for v in (r, s)]
    return x.reshape(inter).expand(big).reshape(tuple(r * s for r, s in zip(sizes, shape)))


# ---- roll ---------------------------------------------------------------------------------------
class RollBackward(Node):
    def backward(self, g):
        return roll(g, tuple(-s for s in self.shifts), self.dims)


def roll(input, shifts, dims=None):
    """Elements shifted along dims, wrapping around (dims None: over the flattened tensor).
    One node: each shifted dim is one backend kernel where there is one, else two slices of the
    buffer concatenated (a roll of indices keeps their known range)."""
    x = input
    check_tensor(x, "roll")
    if dims is None:
        return roll(x.reshape(-1), shifts, 0).reshape(tuple(x.shape))
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
        node = RollBackward()
        node.shifts, node.dims = shifts, dims
        record(node, (x,), out)
    return out


# ---- slicing -----------------------------------------------------------------------------------
class SliceBackward(Node):
    def backward(self, g):
        if self.sliced is not None:     # the size-1 dims an integer index dropped, back
            g = reshape_to(g, self.sliced)
        return _unslice(g, self.shape, self.starts, self.stops, self.steps)

    def add_into(self, acc, g):
        """g added into acc at the slice, in place (the engine's own gradient buffer of the
        input's shape): split/chunk/narrow pieces then fill one gradient."""
        b = acc._backend
        if acc.dtype is not g.dtype or acc._data.shape != tuple(self.shape) or g._backend is not b:
            return False
        view = b.slice(acc._data, self.starts, self.stops, self.steps)
        gd = g._data if self.sliced is None else b.reshape(g._data, self.sliced)
        if view.shape != gd.shape:
            return False
        b.binary("add", view, gd, out=view)
        return True


class UnsliceBackward(Node):
    def backward(self, g):
        return slice_op(g, self.starts, self.stops, self.steps)


def _unslice(g, shape, starts, stops, steps):
    """The adjoint of a slice: g written into zeros of `shape` at the slice. Recorded as an op
    of its own (whose gradient is the slice again), so create_graph differentiates through it."""
    b = g._backend
    z = b.full(shape, 0, g.dtype, g._device.index)
    b.copy_(b.slice(z, starts, stops, steps), g._data)
    out = _wrap(z, g.dtype, g._device)
    if _track(g):
        node = UnsliceBackward()
        node.starts, node.stops, node.steps = starts, stops, steps
        record(node, (g,), out)
    return out


def slice_op(x, starts, stops, steps, out_shape=None):
    """Basic strided slice (already normalized: 0 <= start <= stop <= size, step > 0), then
    viewed as `out_shape` where given (x[:, 1]: the sliced (N, 1) as (N,)) in the same node."""
    b = x._backend
    buf = b.slice(x._data, starts, stops, steps)
    sliced = buf.shape
    if out_shape is None or sliced == out_shape:
        sliced = None
    else:       # (only size-1 dims dropped or added: a view on every backend)
        buf = b.reshape(buf, out_shape)
    out = _shared(_wrap(buf, x.dtype, x._device), x)
    if _track(x):
        node = SliceBackward()
        node.shape, node.starts, node.stops, node.steps, node.sliced = x.shape, starts, stops, steps, sliced
        record(node, (x,), out)
    return out


def narrow(input, dim, start, length):
    x = input
    d = dim_arg(dim, x.ndim, "narrow")
    n = x.shape[d]
    if start < 0:
        start += n
    if not (0 <= start <= n) or length < 0 or start + length > n:
        raise RuntimeError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({n}).")
    starts, stops, steps = [0] * x.ndim, list(x.shape), [1] * x.ndim
    starts[d], stops[d] = start, start + length
    return slice_op(x, tuple(starts), tuple(stops), tuple(steps))


def split(x, split_size_or_sections, dim=0):
    d = dim_arg(dim, x.ndim, "split")
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0 and not (size == 0 and n == 0):
            raise RuntimeError(f"split: split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        sections = [size] * (n // size) + ([n % size] if n % size else []) if size else [0]
    else:
        sections = list(split_size_or_sections)
        if sum(sections) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                               f"tensor's size at dimension {d}), but got split_sizes={sections}")
    out, start = [], 0
    for s in sections:
        out.append(narrow(x, d, start, s))
        start += s
    return tuple(out)


def chunk(input, chunks, dim=0):
    x = input
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = dim_arg(dim, x.ndim, "chunk")
    if x.shape[d] == 0:     # PyTorch: `chunks` empty pieces of an empty dim
        return split(x, [0] * chunks, d)
    return split(x, -(-x.shape[d] // chunks), d)


def unbind(input, dim=0):
    x = input
    d = dim_arg(dim, x.ndim, "unbind")
    return tuple(narrow(x, d, i, 1).squeeze(d) for i in range(x.shape[d]))


# ---- joining -----------------------------------------------------------------------------------
class CatBackward(Node):
    def backward(self, g):
        if not autograd._grad_enabled:
            return self._on_buffers(g)
        parts = iter(split(g, [s for s in self.sizes if s is not None], self.dim))
        # skipped legacy 1-D empty inputs still get their (empty) gradient, as in PyTorch
        return tuple(next(parts) if s is not None else g.new_zeros(0) for s in self.sizes)

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
        return tuple(out)


def cat(tensors, dim=0):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"cat(): argument 'tensors' must be a tuple or list of Tensors, got "
                        f"{type(tensors).__name__}")
    if not tensors:     # (a ValueError in torch's cat, a RuntimeError in the stacks)
        raise ValueError("cat(): expected a non-empty list of Tensors")
    # PyTorch's legacy rule: 1-D empty tensors are skipped (buffer shapes: no Size built)
    keep = []
    for t in tensors:
        if type(t) is not Tensor:
            check_tensor(t, "cat", "tensors")
        keep.append(t._data.shape != (0,))
    if False in keep:
        if True not in keep:
            keep[0] = True
        parts = [t for t, k in zip(tensors, keep) if k]
    else:
        parts = tensors
    ref = parts[0]
    rs = ref._data.shape
    d = dim_arg(dim, len(rs), "cat")
    one_dtype = one_device = True
    for i, t in enumerate(parts):
        ts = t._data.shape      # (buffer shapes: tuples, compared without building Sizes)
        if ts != rs and (len(ts) != len(rs) or ts[:d] != rs[:d] or ts[d + 1:] != rs[d + 1:]):
            raise RuntimeError(f"cat: Sizes of tensors must match except in dimension {d}. Expected "
                               f"size {list(ref.shape)} but got size {list(t.shape)} for tensor "
                               f"number {i} in the list.")
        one_dtype = one_dtype and t.dtype is ref.dtype
        one_device = one_device and t._device is ref._device
    if not one_device:
        same_device("cat", *parts)
    dtype = ref.dtype if one_dtype else dt.result_type(*parts)
    bufs = [t._data if t.dtype is dtype else t._backend.cast(t._data, dtype) for t in parts]
    out = _wrap(ref._backend.concat(bufs, d), dtype, ref._device)
    if not dtype.is_floating_point and ref._device.type != "cpu":
        union(out, parts)       # (a roll of known indices stays known)
    if autograd.needs_grad(*tensors):
        node = CatBackward()
        node.sizes, node.dim = [t._data.shape[d] if k else None for t, k in zip(tensors, keep)], d
        record(node, tensors, out)
    return out


def nonempty(tensors, op):
    """torch's check that stack and its variants got at least one tensor."""
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")


def stack(tensors, dim=0):
    nonempty(tensors, "stack")
    check_tensor(tensors[0], "stack", "tensors")
    first = tensors[0]
    shape = first._data.shape       # (buffer shapes: plain tuples, compared without Sizes)
    dtype, dev, alike, grad = first.dtype, first._device, True, False
    for i, t in enumerate(tensors):         # one pass: types, shapes, whether the fast form applies
        if type(t) is not Tensor:
            check_tensor(t, "stack", "tensors")
        if t._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} at "
                               f"entry 0 and {list(t.shape)} at entry {i}")
        alike = alike and t.dtype is dtype and t._device is dev
        grad = grad or t._requires_grad
    d = dim_arg(dim, len(shape) + 1, "stack")
    if alike and not (grad and autograd._grad_enabled):
        # a DataLoader's collate stacks a batch of samples: one concat of the buffers, without
        # a recorded unsqueeze per sample
        b = first._backend
        if d == 0:      # flat buffers joined end to end: a 1-D concat is 3x faster than (1, ...)s
            flat = (math.prod(shape),)
            bufs = [t._data for t in tensors] if len(shape) == 1 else [b.reshape(t._data, flat) for t in tensors]
            return _wrap(b.reshape(b.concat(bufs, 0), (len(tensors),) + shape), first.dtype, first._device)
        one = shape[:d] + (1,) + shape[d:]
        return _wrap(b.concat([b.reshape(t._data, one) for t in tensors], d), first.dtype, first._device)
    return cat([t.unsqueeze(d) for t in tensors], d)


def hstack(tensors):
    nonempty(tensors, "hstack")
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    nonempty(tensors, "vstack")
    return cat([t.reshape(1, -1) if t.ndim < 2 else t for t in tensors], 0)


# ---- pad and flip ------------------------------------------------------------------------------
class PadBackward(Node):
    def backward(self, g):
        starts = tuple(b for b, _ in self.widths)
        stops = tuple(b + s for (b, _), s in zip(self.widths, self.shape))
        return slice_op(g, starts, stops, (1,) * g.ndim)


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: `pad` lists (left, right) pairs from the last dim backwards;
    negative amounts crop. Modes: constant, reflect, replicate, circular."""
    x = input
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
            node = PadBackward()
            node.widths, node.shape = widths, x.shape
            record(node, (x,), out)
        return out
    if value not in (None, 0):
        raise ValueError(f"pad: padding mode '{mode}' doesn't take in value argument")
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"pad: unknown padding mode {mode!r}; expected 'constant', "
                                  f"'reflect', 'replicate' or 'circular'")
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
    return x


class FlipBackward(Node):
    def backward(self, g):
        return flip(g, self.axes)


def flip(input, dims):
    x = input
    dims = dims if isinstance(dims, (tuple, list)) else (dims,)
    axes = tuple(sorted(dim_arg(d, x.ndim, "flip") for d in dims))
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"flip: dims has duplicates, got {tuple(dims)}")
    if x.ndim == 0:     # dim 0 / -1 of a scalar is accepted, and there is nothing to reverse
        axes = ()
    out = _wrap(x._backend.flip(x._data, axes), x.dtype, x._device)
    if _track(x):
        node = FlipBackward()
        node.axes = axes
        record(node, (x,), out)
    return out
