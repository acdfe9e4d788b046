"""Movement ops whose outputs are views where the backend's layout allows: reshape/view,
permute/transpose, expand/repeat, squeeze/unsqueeze, slicing and split/chunk/unbind; and the
gradient of a broadcast (sum_to). The ops that copy into a new buffer are in copies.py."""
from __future__ import annotations

import math

import numpy as np

from ...autograd import Node, grad_mode, node_class, record, rename
from ...tensor import _wrap, _wrap_views, Size, Tensor, view_of
from .._common import check_tensor, dim_arg
from ..indexing.index_bounds import inherit, known, remember


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
    return x._requires_grad and grad_mode._enabled


# ---- reshape family ------------------------------------------------------------------------
class ViewBackward0(Node):
    """The gradient of every op that only changes the shape: g reshaped back."""
    def backward(self, g):
        return reshape_to(g, self.shape)


# the names torch gives the other ops that only change the shape (ViewBackward0's formula)
AliasBackward0 = node_class(ViewBackward0, "AliasBackward0")        # x[...], the same shape
UnsqueezeBackward0 = node_class(ViewBackward0, "UnsqueezeBackward0")
# squeeze(), squeeze(dim), squeeze(dims)
SQUEEZE_NODES = tuple(node_class(ViewBackward0, f"SqueezeBackward{i}") for i in range(3))


def reshape_to(x, shape, node_cls=ViewBackward0):
    """reshape with an already valid, fully known shape tuple: the unchecked core that
    reshape and backward formulas share; its node is a `node_cls`."""
    data = x._data if shape == x._data.shape else x._backend.reshape(x._data, shape)
    out = _shared(_wrap(data, x.dtype, x._device), x)
    if x._requires_grad and grad_mode._enabled:
        node = node_cls()
        node.shape = x._data.shape
        record(node, (x,), out)
    return out


def _viewable(buf, shape):
    """Whether a buffer laid out as `buf` can be viewed as `shape` without a copy: torch's
    computeStride (byte strides serve as well as element ones)."""
    old, strides = buf.shape, buf.strides
    if not old or 0 in old:
        return True
    view_d, base = len(shape) - 1, strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[d]
        if d == 0 or (old[d - 1] != 1 and strides[d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or shape[view_d] == 1):
                view_numel *= shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if d > 0:
                base, tensor_numel, view_numel = strides[d - 1], 1, 1
    return view_d == -1


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
    shape = _resolved(shape, x)
    out = reshape_to(x, shape)
    if out.grad_fn is not None and not x._data.flags.c_contiguous:
        # torch's reshape views a contiguous tensor (ViewBackward0, above), aliases a strided
        # one it can view, and copies one it can't
        rename(out, "ReshapeAliasBackward0" if _viewable(x._data, shape) else "UnsafeViewBackward0", x)
    return out


def view(input, *sizes):
    """x.view(shape): reshape, named ViewBackward0 whatever the layout, as torch's view (which
    refuses a layout it can't view, where paragrad's copies, as reshape)."""
    x = input
    check_tensor(x, "view")
    shape = sizes[0] if len(sizes) == 1 and type(sizes[0]) is tuple else sizes
    return reshape_to(x, _resolved(shape, x))


def _resolved(shape, x):
    """reshape's sizes as a tuple of ints with -1 inferred; the usual call (plain ints that
    hold x's elements) without the general parsing and checks."""
    if all(type(s) is int and s >= 0 for s in shape) and math.prod(shape) == x._data.size:
        return tuple(shape)
    return _infer_shape(_sizes(shape, "reshape"), x.numel(), "reshape", x.shape)


def view_as(x, other):
    return view(x, other.shape)


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
    return view(x, x.shape[:d] + sizes + x.shape[d + 1:])


def unsqueeze(input, dim):
    x = input
    d = dim_arg(dim, x.ndim + 1, "unsqueeze")
    s = x._data.shape       # (a plain tuple; the new shape needs none of reshape's checks)
    return reshape_to(x, s[:d] + (1,) + s[d:], UnsqueezeBackward0)


def squeeze(input, dim=None):
    x = input
    if dim is None:
        axes, form = [i for i, s in enumerate(x.shape) if s == 1], 0
    else:
        form = 2 if isinstance(dim, (tuple, list)) else 1
        dims = dim if form == 2 else (dim,)
        axes = [dim_arg(d, x.ndim, "squeeze") for d in dims]
        axes = [a for a in axes if x.ndim and x.shape[a] == 1]
    return reshape_to(x, tuple(s for i, s in enumerate(x._data.shape) if i not in axes),
                      SQUEEZE_NODES[form])


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
    # (the buffer's shape: no Size built, in a call every backward formula makes per input)
    g = sum_to(g, t._data.shape if isinstance(t, Tensor) else t.shape)
    return g if g.dtype is t.dtype else g.to(t.dtype)


# ---- permutations ----------------------------------------------------------------------------
class PermuteBackward0(Node):
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


# torch's names for its other permutations (PermuteBackward0's formula)
TransposeBackward0 = node_class(PermuteBackward0, "TransposeBackward0")
TBackward0 = node_class(PermuteBackward0, "TBackward0")


def permute_to(x, axes, node_cls=PermuteBackward0):
    """permute with valid non-negative axes: the unchecked core; its node is a `node_cls`."""
    out = _shared(_wrap(x._backend.permute(x._data, axes), x.dtype, x._device), x)
    if x._requires_grad and grad_mode._enabled:
        node = node_cls()
        node.axes = axes
        record(node, (x,), out)
    return out


def transpose(input, dim0, dim1):
    x = input
    check_tensor(x, "transpose")
    n = x.ndim
    if n == 0:
        dim_arg(dim0, 0, "transpose"), dim_arg(dim1, 0, "transpose")
        return permute_to(x, (), TransposeBackward0)
    a, b = dim_arg(dim0, n, "transpose"), dim_arg(dim1, n, "transpose")
    axes = list(range(n))
    axes[a], axes[b] = axes[b], axes[a]
    return permute_to(x, tuple(axes), TransposeBackward0)   # (a valid permutation: no checks)


swapaxes = swapdims = transpose


def t(input):
    x = input
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return permute_to(x, (1, 0) if x.ndim == 2 else tuple(range(x.ndim)), TBackward0)


def T(x):
    return permute(x, tuple(range(x.ndim - 1, -1, -1)))


def mT(x):
    n = x._data.ndim
    if n < 2:
        raise RuntimeError(f"mT: tensor of dimension {n} has no matrix transpose (need >= 2)")
    return permute_to(x, tuple(range(n - 2)) + (n - 1, n - 2), TransposeBackward0)


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
        return reshape_to(x, (), AliasBackward0)
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(x, order)


# ---- broadcasting ------------------------------------------------------------------------------
class ExpandBackward0(Node):
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
    if shape == x._data.shape:     # (a writable view, as torch's: a broadcast one is read-only)
        return reshape_to(x, shape, node_class(ViewBackward0, "ExpandBackward0"))
    out = _shared(_wrap(x._backend.expand(x._data, shape), x.dtype, x._device), x)
    if x._requires_grad and grad_mode._enabled:
        node = ExpandBackward0()
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
    out = x.reshape(inter).expand(big).reshape(tuple(r * s for r, s in zip(sizes, shape)))
    return rename(out, "RepeatBackward0", x)


# ---- slicing -----------------------------------------------------------------------------------
class SliceBackward0(Node):
    def backward(self, g):
        if self.sliced is not None:     # the size-1 dims an integer index dropped, back
            g = reshape_to(g, self.sliced)
        return _unslice(g, self.shape, self.starts, self.stops, self.steps)

    def add_into(self, acc, g):
        """g added into acc at the slice, in place (the engine's own gradient buffer of the
        input's shape): split/chunk/narrow pieces then fill one gradient."""
        b = acc._backend
        if acc.dtype is not g.dtype or acc._data.shape != tuple(self.shape) or g._backend is not b:
            return None
        view = b.slice(acc._data, self.starts, self.stops, self.steps)
        gd = g._data if self.sliced is None else b.reshape(g._data, self.sliced)
        if view.shape != gd.shape:
            return None
        b.binary("add", view, gd, out=view)
        return (None,)


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
        node = SliceBackward0()
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
        # an empty dim still splits into one empty piece, as torch's
        sections = [size] * (n // size) + ([n % size] if n % size else []) if n else [0]
    else:
        sections = list(split_size_or_sections)
        if sum(sections) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                               f"tensor's size at dimension {d}), but got split_sizes={sections}")
    if not _track(x):
        return tuple(_pieces(x, d, sections))
    node_cls = SplitBackward0 if isinstance(split_size_or_sections, int) else \
        SplitWithSizesBackward0
    if len(sections) == 1:              # one piece: a slice, under split's name
        return (rename(narrow(x, d, 0, n), node_cls.__name__),)
    grad_mode._enabled = False          # (the pieces record one node together, below)
    try:
        out = _pieces(x, d, sections)
    finally:
        grad_mode._enabled = True
    node = node_cls()                   # their gradients are joined at once
    node.shape, node.dim, node.sections = tuple(x._data.shape), d, sections
    _record_pieces(node, x, out)
    return tuple(out)


def _record_pieces(node, x, out):
    """One node for all of x's pieces `out`: piece i is its output i."""
    record(node, (x,), out[0])
    for i, piece in enumerate(out[1:], 1):
        piece.grad_fn, piece._output_nr, piece._requires_grad = node, i, True
    node.n_outputs = len(out)


def _pieces(x, d, sections):
    out, start = [], 0
    for s in sections:
        out.append(narrow(x, d, start, s))
        start += s
    return out


class SplitBackward0(Node):
    """split/chunk's pieces as one node (torch's name for it; SplitWithSizesBackward0 for split
    into given sizes): their gradients arrive together and are joined in one pass, with no
    zero-filled buffer per piece and no adds.
    Gradients that are already consecutive views of one buffer of x's shape are that buffer,
    nothing copied (cuDNN's attention writes dq, dk and dv into one (B, T, 3C) buffer when q,
    k and v were split from one projection, as a GPT's are)."""
    multi_view = True       # its outputs may not be modified in place (torch's rule; ops/inplace.py)

    def backward(self, *grads):
        ref = next(g for g in grads if g is not None)
        b, dtype, dev = ref._backend, ref.dtype, ref._device
        if grad_mode._enabled:          # double backward: the pieces placed by recorded ops
            total = None
            for g, (starts, stops) in zip(grads, self._ranges()):
                if g is not None:
                    g = _unslice(g, self.shape, starts, stops, (1,) * len(self.shape))
                    total = g if total is None else total + g
            return total
        if None not in grads:
            fast = b.fast("joined_view")
            whole = fast([g._data for g in grads], self.dim) if fast is not None else None
            if whole is not None and tuple(whole.shape) == self.shape:
                return _wrap(whole, dtype, dev)
        out = b.empty(self.shape, dtype, dev.index)
        for g, (starts, stops) in zip(grads, self._ranges()):
            view = b.slice(out, starts, stops, (1,) * len(self.shape))
            b.copy_(view, g._data if g is not None else b.full(view.shape, 0, dtype, dev.index))
        return _wrap(out, dtype, dev)

    def _ranges(self):
        """Each piece's (starts, stops) in x."""
        start = 0
        for size in self.sections:
            starts, stops = [0] * len(self.shape), list(self.shape)
            starts[self.dim], stops[self.dim] = start, start + size
            yield tuple(starts), tuple(stops)
            start += size


SplitWithSizesBackward0 = node_class(SplitBackward0, "SplitWithSizesBackward0")


def chunk(input, chunks, dim=0):
    x = input
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = dim_arg(dim, x.ndim, "chunk")
    if x.shape[d] == 0:     # PyTorch: `chunks` empty pieces of an empty dim
        return split(x, [0] * chunks, d)
    return split(x, -(-x.shape[d] // chunks), d)


def unbind(input, dim=0):
    """x's slices along dim, without that dim: views of x, one node for all of them (so
    iterating a tensor, which unbinds it, costs one wrap per element)."""
    x = input
    d = dim_arg(dim, x.ndim, "unbind")
    b, buf = x._backend, x._data
    fast = b.fast("unbind")
    bufs = fast(buf, d) if fast is not None else [_squeezed_slice(b, buf, d, i)
                                                    for i in range(buf.shape[d])]
    out = tuple(_wrap_views(bufs, x))  # (views: x's version counter and values, as _shared)
    bounds = known(x)
    if bounds is not None:
        for piece in out:
            remember(piece, *bounds)
    if _track(x) and out:
        node = UnbindBackward0()
        node.shape, node.dim, node.sections = tuple(buf.shape), d, [1] * len(out)
        _record_pieces(node, x, out)
    return out


def _squeezed_slice(b, buf, d, i):
    """buf's index i along d, that dim dropped: a slice and a reshape (both views)."""
    shape = buf.shape
    starts = (0,) * d + (i,) + (0,) * (len(shape) - d - 1)
    view = b.slice(buf, starts, shape[:d] + (i + 1,) + shape[d + 1:], (1,) * len(shape))
    return b.reshape(view, shape[:d] + shape[d + 1:])


class UnbindBackward0(SplitBackward0):
    """unbind's pieces as one node: split's into pieces of one, each gradient given back its dim."""

    def backward(self, *grads):
        return super().backward(*[None if g is None else g.unsqueeze(self.dim) for g in grads])


def sum_to_size(self, *size):
    """Sum this tensor down to `size`, which must broadcast to its shape."""
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    try:
        expandable = np.broadcast_shapes(size, tuple(self.shape)) == tuple(self.shape)
    except ValueError:
        expandable = False
    if not expandable:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}.")
    return sum_to(self, size)


def broadcast_shapes(*shapes):
    """The shape tensors of these shapes broadcast to (ints count as 1-D shapes)."""
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    try:
        return Size(np.broadcast_shapes(*shapes))
    except ValueError:
        raise RuntimeError(f"broadcast_shapes: shapes {[list(s) for s in shapes]} cannot be broadcast "
                           f"to a single shape") from None


from .view_docs import DOCS as _DOCS  # noqa: E402  (the public ops' docstrings, one line each)
for _name, _doc in _DOCS.items():
    globals()[_name].__doc__ = _doc
