"""Rearranging elements, composed from other differentiable ops: functions that select, move
or accumulate elements (triangles and diagonals, rotations and diagonal embeddings, Vandermonde
matrices, combinations, cumulative scans, repeats and splits (tensor_split, hsplit/vsplit/dsplit),
counting and unique values, small selections). Indexed updates are in indexing/updates.py. Elementwise composites are in
elementwise/math.py."""
from __future__ import annotations

import numpy as np

from ... import autocast_state, dtypes as dt
from ...autograd import rename
from ...tensor import Tensor
from .._common import check_tensor, dim_arg
from ..creation import ones, tensor
from ..elementwise.math import _float, logaddexp
from .copies import cat, pad
from ..indexing.index_bounds import remember
from ..autocast_policy import cast, policy


def _tri_mask(x, diagonal, upper):
    from ..creation import arange
    rows, cols = x.shape[-2], x.shape[-1]
    r = arange(rows, device=x.device).unsqueeze(1)            # (rows, 1)
    c = arange(cols, device=x.device).unsqueeze(0)            # (1, cols)
    return (c - r >= diagonal) if upper else (c - r <= diagonal)


def tril(input, diagonal=0):
    """Elements on and below the diagonal-th diagonal; zeros above."""
    check_tensor(input, "tril")
    if input.ndim < 2:
        raise RuntimeError(f"tril: input tensor must have at least 2 dimensions, got {input.ndim}")
    return rename(input.masked_fill(~_tri_mask(input, diagonal, False), 0), "TrilBackward0")


def triu(input, diagonal=0):
    """Elements on and above the diagonal-th diagonal; zeros below."""
    check_tensor(input, "triu")
    if input.ndim < 2:
        raise RuntimeError(f"triu: input tensor must have at least 2 dimensions, got {input.ndim}")
    return rename(input.masked_fill(~_tri_mask(input, diagonal, True), 0), "TriuBackward0")


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The offset-th diagonal of the (dim1, dim2) planes, as a new last dim."""
    from ..creation import arange, tensor
    check_tensor(input, "diagonal")
    d1, d2 = dim_arg(dim1, input.ndim, "diagonal"), dim_arg(dim2, input.ndim, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    x = input.movedim((d1, d2), (-2, -1))                     # (..., n1, n2)
    n1, n2 = x.shape[-2], x.shape[-1]
    length = max(0, min(n1 - max(-offset, 0), n2 - max(offset, 0)))
    i = arange(length, device=input.device)
    rows, cols = i + max(-offset, 0), i + max(offset, 0)
    flat = x.reshape(*x.shape[:-2], n1 * n2)
    idx = (rows * n2 + cols) if length else tensor([], dtype=dt.int64, device=input.device)
    return rename(flat.index_select(-1, idx) if flat.ndim else flat, "DiagonalBackward0")


def diag(input, diagonal=0):
    """1-D input: a square matrix with it on the diagonal-th diagonal; 2-D: that diagonal."""
    check_tensor(input, "diag")
    if input.ndim == 2:     # (torch's diag is a composite ending in diagonal_copy)
        return rename(_diagonal(input, diagonal), "DiagonalBackward0_copy")
    if input.ndim != 1:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    from ..creation import arange, zeros
    n = input.shape[0] + abs(diagonal)
    out = zeros(n * n, dtype=input.dtype, device=input.device)
    i = arange(input.shape[0], device=input.device)
    pos = (i + max(-diagonal, 0)) * n + i + max(diagonal, 0)
    return rename(out.scatter_add(0, pos, input).reshape(n, n), "DiagEmbedBackward0")


_diagonal = diagonal        # (diag's argument of that name hides the function)


@policy("trace")
def trace(input):
    """The sum of the main diagonal of a 2-D matrix, as torch.trace."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return rename(diagonal(input).sum(), "TraceBackward0")


def _scan(x, dim, combine, identity):
    """Inclusive scan along dim: log2(n) rounds of combining each element with the one `shift`
    places before it (Hillis-Steele); the first `shift` elements combine with `identity`."""
    from .copies import pad
    if x.ndim == 0:
        return x.clone()
    d = dim_arg(dim, x.ndim, "scan")
    n, shift = x.shape[d], 1
    while shift < n:
        widths = [0, 0] * (x.ndim - 1 - d) + [shift, -shift]     # shift along d, dropping the end
        x = combine(x, pad(x, widths, value=identity))
        shift *= 2
    return x


def _scan_input(input, dtype, op):
    check_tensor(input, op)
    if dtype is not None:
        return input.to(dtype)
    if not input.dtype.is_floating_point and input.dtype is not dt.int64:
        return input.to(dt.int64)       # integer and bool inputs accumulate in int64, as PyTorch
    return input


def cumsum(input, dim, *, dtype=None):
    """Running sums along dim."""
    if autocast_state.on and dtype is None:     # paragrad.amp: the dtype this op runs in
        input, = cast("cumsum", input)
    return rename(_scan(_scan_input(input, dtype, "cumsum"), dim, lambda a, b: a + b, 0),
                  "CumsumBackward0", input)


def cumprod(input, dim, *, dtype=None):
    """Running products along dim (exact with zeros and signs: no log/exp)."""
    if autocast_state.on and dtype is None:     # paragrad.amp: the dtype this op runs in
        input, = cast("cumprod", input)
    return rename(_scan(_scan_input(input, dtype, "cumprod"), dim, lambda a, b: a * b, 1),
                  "CumprodBackward0", input)


def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along dim, without overflow."""
    x = _float(input)
    return rename(_scan(x, dim, logaddexp, float("-inf")), "LogcumsumexpBackward0", input)


def tile(input, *dims):
    """repeat with dims padded by leading 1s to the input's rank (and the input by leading size-1
    dims to dims' length), as PyTorch. dims: ints, or one sequence of them (torch.tile(x, (2,
    3)), x.tile(2, 3))."""
    from .views import _sizes
    dims = _sizes(dims, "tile")
    x = input.reshape((1,) * (len(dims) - input.ndim) + tuple(input.shape)) if len(dims) > input.ndim else input
    return x.repeat(*((1,) * (x.ndim - len(dims)) + dims))


def repeat_interleave(input, repeats, dim=None, *, output_size=None):
    """Each element repeated `repeats` times (an int, or a tensor of one count per element)
    along dim (None: over the flattened input)."""
    from ..creation import tensor
    import numpy as np
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else dim_arg(dim, x.ndim, "repeat_interleave")
    if isinstance(repeats, Tensor) and repeats.numel() != 1:
        counts = repeats.cpu().numpy().astype(np.int64)     # a host read: the output size depends on it
        if counts.shape != (x.shape[d],):
            raise RuntimeError(f"repeat_interleave: repeats must have the same size as input along dim, "
                               f"got {tuple(counts.shape)} for size {x.shape[d]}")
        if (counts < 0).any():
            raise RuntimeError("repeat_interleave: repeats can not be negative")
        idx = tensor(np.repeat(np.arange(x.shape[d]), counts), dtype=dt.int64, device=x.device)
        return x.index_select(d, idx)
    r = int(repeats)
    if r < 0:
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    shape = tuple(x.shape)
    expanded = x.unsqueeze(d + 1).expand(*shape[:d + 1], r, *shape[d + 1:])
    out = expanded.view(*shape[:d], shape[d] * r, *shape[d + 1:])     # (torch's ends in a view)
    # torch takes repeats given as a tensor (even of one count) by index_select
    return rename(out, "IndexSelectBackward0") if isinstance(repeats, Tensor) else out


def tensor_split(input, indices_or_sections, dim=0):
    """Views split along dim: into n parts (sizes differing by at most one, the larger first),
    or at the given indices."""
    d = dim_arg(dim, input.ndim, "tensor_split")
    n = input.shape[d]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise RuntimeError(f"tensor_split: number of sections must be larger than 0, got {k}")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        bounds = [sum(sizes[:i]) for i in range(k + 1)]
    else:
        cuts = [min(max(int(i), 0), n) for i in indices_or_sections]
        bounds = [0] + cuts + [n]
    return tuple(input.narrow(d, a, max(b - a, 0)) for a, b in zip(bounds, bounds[1:]))


def bincount(input, weights=None, minlength=0):
    """Counts (or summed weights) of each value of a 1-D non-negative integer tensor."""
    from ..creation import zeros
    if input.ndim != 1 or input.dtype.is_floating_point:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if input.numel() and int(input.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    n = max(int(input.max()) + 1 if input.numel() else 0, minlength)
    src = weights if weights is not None else None
    out = zeros(n, dtype=(weights.dtype if weights is not None else dt.int64), device=input.device)
    if src is None:
        from ..creation import ones
        src = ones(input.shape[0], dtype=dt.int64, device=input.device)
    return out.scatter_add(0, input.long(), src)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (sorted), with the inverse indices and counts if asked (reads the
    values on the host: the output size depends on them). With dim, the distinct slices along
    dim, in lexicographic order, and the inverse index of each slice."""
    import numpy as np
    from ..creation import tensor
    a = input.detach().cpu().numpy()
    if dim is None:
        vals, inv, counts = np.unique(a.reshape(-1), return_inverse=True, return_counts=True)
        inv = inv.reshape(a.shape)
    else:
        d = dim_arg(dim, input.ndim, "unique")
        vals, inv, counts = np.unique(a, return_inverse=True, return_counts=True, axis=d)
        inv = inv.reshape(-1)
    out = [tensor(vals, dtype=input.dtype, device=input.device)]
    if return_inverse:
        out.append(tensor(inv, dtype=dt.int64, device=input.device))
    if return_counts:
        out.append(tensor(counts, dtype=dt.int64, device=input.device))
    return out[0] if len(out) == 1 else tuple(out)


def ravel(input):
    """input flattened to 1-D (a view where its layout allows), as torch.ravel."""
    return input.view(-1)       # (torch's: contiguous(), then a view)


def fliplr(input):
    """input with dim 1 reversed (left-right), for tensors of at least 2 dims, as torch.fliplr."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip(1)


def flipud(input):
    """input with dim 0 reversed (up-down), for tensors of at least 1 dim, as torch.flipud."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip(0)


def select(input, dim, index):
    """The slice at index along dim, that dim removed."""
    d = dim_arg(dim, input.ndim, "select")
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at dimension {d}")
    return rename(input.narrow(d, index % n, 1).squeeze(d), "SelectBackward0")


def take(input, index):
    """input flattened, indexed by index (any shape)."""
    return rename(input.reshape(-1)[index], "TakeBackward0")


def take_along_dim(input, indices, dim=None):
    """gather with broadcasting between input and indices off dim (dim None: flattened). With
    a dim, each index is taken modulo the dim's size, as torch's (so -1 is the last, and an
    index past the end wraps too); dim None checks bounds as gather does."""
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    d = dim_arg(dim, input.ndim, "take_along_dim")
    shape_in, shape_ix = list(input.shape), list(indices.shape)
    target = [max(a, b) for a, b in zip(shape_in, shape_ix)]
    x = input.expand(*[s if i == d else t for i, (s, t) in enumerate(zip(shape_in, target))])
    ix = indices.expand(*[s if i == d else t for i, (s, t) in enumerate(zip(shape_ix, target))])
    size = x.shape[d]
    if size and ix.numel():     # torch wraps every index modulo size here (gather then can't fail)
        ix = remember(ix.remainder(size), 0, size - 1)
    return x.gather(d, ix)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """n-th forward differences along dim (prepend/append joined first)."""
    from .copies import cat
    d = dim_arg(dim, input.ndim, "diff")
    x = cat([t for t in (prepend, input, append) if t is not None], d) if (prepend is not None or append is not None) else input
    for _ in range(n):
        m = x.shape[d]
        later, earlier = x.narrow(d, 1, max(m - 1, 0)), x.narrow(d, 0, max(m - 1, 0))
        x = later != earlier if x.dtype is dt.bool_ else later - earlier     # (bool: xor, as torch)
    return x


@policy("cross")
def cross(input, other, dim=None):
    """The 3-vector cross product along dim (the first size-3 dim when None, as torch.cross)."""
    from .copies import stack
    if dim is None:
        dim = next(i for i, s in enumerate(input.shape) if s == 3)
    d = dim_arg(dim, input.ndim, "cross")
    if input.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {d} must have length 3. Got {input.shape[d]}")
    a = [select(input, d, i) for i in range(3)]
    b = [select(other, d, i) for i in range(3)]
    out = stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]],
                d)
    return rename(out, "LinalgCrossBackward0")


# ---- combining and broadcasting tensors -----------------------------------------------------
def atleast_1d(*tensors):
    """Each tensor with 0 dims reshaped to (1,), as torch.atleast_1d (one tensor given: a
    tensor; several, or a list or tuple of them: a tuple)."""
    return _each(tensors, lambda t: t.reshape(1) if t.ndim == 0 else t)


def atleast_2d(*tensors):
    """Each tensor with fewer than 2 dims given leading size-1 dims, as torch.atleast_2d (one
    tensor or a tuple, as atleast_1d)."""
    return _each(tensors, lambda t: t.reshape(1, 1) if t.ndim == 0 else (t.unsqueeze(0) if t.ndim == 1 else t))


def atleast_3d(*tensors):
    """Each tensor lifted to at least 3 dims ((n,) -> (1, n, 1), (m, n) -> (m, n, 1)), as
    torch.atleast_3d (one tensor or a tuple, as atleast_1d)."""
    def lift(t):
        if t.ndim == 0:
            return t.reshape(1, 1, 1)
        if t.ndim == 1:     # (torch's: two unsqueezes)
            return rename(t.reshape(1, -1, 1), "UnsqueezeBackward0")
        return t.unsqueeze(-1) if t.ndim == 2 else t
    return _each(tensors, lift)


def _each(tensors, lift):
    """lift of each tensor: one tensor given gives one; several, or a list or tuple of them
    (even of one), give a tuple, as torch's atleast_*d."""
    if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)):
        return lift(tensors[0])
    return tuple(lift(t) for t in _flat_args(tensors))


def _flat_args(tensors):
    return list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else list(tensors)


def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape, as torch.broadcast_tensors."""
    import numpy as np
    ts = _flat_args(tensors)
    try:
        shape = np.broadcast_shapes(*(tuple(t.shape) for t in ts))
    except ValueError:
        raise RuntimeError(f"broadcast_tensors: shapes {[list(t.shape) for t in ts]} cannot be broadcast "
                           f"to a single shape") from None
    return tuple(t.expand(*shape) for t in ts)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids of 1-D tensors; indexing 'xy' swaps the first two output dims."""
    ts = _flat_args(tensors)
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    n = len(ts)
    # Cartesian indexing ('xy') as torch's: the grids of the first two inputs swapped (their
    # dims swapped), each grid still an expand of its input
    order = [1, 0] + list(range(2, n)) if indexing == "xy" and n >= 2 else list(range(n))
    shape = [ts[k].numel() for k in order]
    grids = [None] * n
    for at, k in enumerate(order):
        grids[k] = ts[k].reshape(*[-1 if i == at else 1 for i in range(n)]).expand(*shape)
    return tuple(grids)


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D tensors, as rows of an (N, k) tensor, as torch.cartesian_prod."""
    from .copies import stack
    ts = _flat_args(tensors)
    if len(ts) == 1:
        return ts[0]
    return stack([g.reshape(-1) for g in meshgrid(*ts, indexing="ij")], 1)


def block_diag(*tensors):
    """A block-diagonal matrix of the given matrices (0-d and 1-D ones as rows)."""
    from ..creation import zeros
    from .copies import pad
    ts = [t.reshape(1, -1) if t.ndim < 2 else t for t in _flat_args(tensors)]
    rows, cols = sum(t.shape[0] for t in ts), sum(t.shape[1] for t in ts)
    if not ts:
        return zeros(0, 0)
    out, c = [], 0
    for t in ts:        # each block padded left/right to the full width, then stacked
        out.append(pad(t, [c, cols - c - t.shape[1]]))
        c += t.shape[1]
    from .copies import cat
    return rename(cat(out, 0).reshape(rows, cols), "BlockDiagBackward0")


def column_stack(tensors):
    """The tensors joined along dim 1, 0-d and 1-D ones made (n, 1) columns, as torch.column_stack."""
    from .copies import cat, nonempty
    nonempty(tensors, "column_stack")
    return cat([t.reshape(-1, 1) if t.ndim <= 1 else t for t in tensors], 1)


def dstack(tensors):
    """The tensors joined along dim 2 after atleast_3d, as torch.dstack."""
    from .copies import cat, nonempty
    nonempty(tensors, "dstack")
    return cat(list(atleast_3d(*tensors)) if len(tensors) > 1 else [atleast_3d(tensors[0])], 2)


@policy("tensordot")
def tensordot(a, b, dims=2):
    """Sum over the last `dims` dims of a and the first of b (or the given dim lists)."""
    import math
    if isinstance(dims, int):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = [d % a.ndim for d in dims[0]], [d % b.ndim for d in dims[1]]
    ka = [i for i in range(a.ndim) if i not in da]
    kb = [i for i in range(b.ndim) if i not in db]
    pa = a.permute(ka + da).reshape(math.prod(a.shape[i] for i in ka), math.prod(a.shape[i] for i in da))
    pb = b.permute(db + kb).reshape(math.prod(b.shape[i] for i in db), math.prod(b.shape[i] for i in kb))
    return (pa @ pb).reshape(*[a.shape[i] for i in ka], *[b.shape[i] for i in kb])


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None):
    """For each value, the index where it would be inserted in the sorted last dim (left:
    the first position >= value; right: the first > value) — counts of smaller entries."""
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    right = right or side == "right"
    v = values if isinstance(values, Tensor) else sorted_sequence.new_tensor(values)
    if sorted_sequence.ndim == 1:
        hits = (sorted_sequence <= v.unsqueeze(-1)) if right else (sorted_sequence < v.unsqueeze(-1))
    else:
        seq = sorted_sequence.unsqueeze(-2)                        # (..., 1, n)
        hits = (seq <= v.unsqueeze(-1)) if right else (seq < v.unsqueeze(-1))
    out = hits.sum(-1)
    return out.to(dt.int32) if out_int32 else out


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The index of the boundaries bucket each element of input falls in, as torch.bucketize."""
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


@policy("cdist")
def cdist(x1, x2, p=2.0):
    """Pairwise p-norm distances between the rows of x1 (..., P, M) and x2 (..., R, M)."""
    from ..linalg.decompositions import _tname
    from ..linalg.vector_norm import distance
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {_tname(t.dtype)}")
    out = distance(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)          # (..., P, R)
    # torch computes p = 2 by matrix products when either side has over 25 rows, ending in a view
    big = p == 2 and max(x1.shape[-2], x2.shape[-2]) > 25
    return rename(out, "ViewBackward0" if big else "CdistBackward0")


def unfold(input, dimension, size, step):
    """Tensor.unfold: every window of `size` elements taken `step` apart along dimension; the
    windows replace that dim and the window elements go last."""
    from ..creation import arange
    d = dim_arg(dimension, input.ndim, "unfold") if input.ndim else 0
    n = input.shape[d] if input.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if input.ndim == 0:
        return rename(input.reshape(1), "UnfoldBackward0")
    count = (n - size) // step + 1
    idx = (arange(count, device=input.device).unsqueeze(1) * step
           + arange(size, device=input.device).unsqueeze(0)).reshape(-1)     # (count * size,)
    x = input.index_select(d, idx)                                          # windows flattened at d
    shape = list(input.shape)
    x = x.reshape(*shape[:d], count, size, *shape[d + 1:])
    return rename(x.movedim(d + 1, -1), "UnfoldBackward0")


def rot90(input, k=1, dims=(0, 1)):
    """input rotated by 90 degrees k times, from the first towards the second of dims."""
    check_tensor(input, "rot90")
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"rot90: expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"rot90: expected total dims >= 2, but got total dims = {input.ndim}")
    if dims[0] == dims[1] or abs(dims[0] - dims[1]) == input.ndim:
        raise RuntimeError(f"rot90: expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    d0, d1 = (dim_arg(d, input.ndim, "rot90") for d in dims)
    k %= 4
    if k == 1:
        out = input.flip((d1,)).transpose(d0, d1)
    elif k == 2:
        out = input.flip((d0, d1))
    elif k == 3:
        out = input.flip((d0,)).transpose(d0, d1)
    else:
        out = input.clone()
    return rename(out, "Rot90Backward0")


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """The last dim of input put on the offset-th diagonal of new (dim1, dim2) planes of the
    output (which has one dim more); zeros elsewhere."""
    from ..creation import arange
    check_tensor(input, "diag_embed")
    nd = input.ndim + 1
    d1, d2 = dim_arg(dim1, nd, "diag_embed"), dim_arg(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + abs(offset)
    # element i goes to row i + max(-offset, 0): pad so that the row index is the position
    x = pad(input, [max(-offset, 0), max(offset, 0)]) if offset else input   # (..., n)
    r = arange(n, device=input.device).unsqueeze(1)
    c = arange(n, device=input.device).unsqueeze(0)
    off_diag = (c - r) != offset                                              # (n, n)
    out = x.unsqueeze(-1).expand(*x.shape, n).masked_fill(off_diag, 0)       # (..., n, n)
    return rename(out.movedim((-2, -1), (d1, d2)), "DiagEmbedBackward0")


def diagflat(input, offset=0):
    """A square matrix with the flattened input on its offset-th diagonal."""
    check_tensor(input, "diagflat")
    return diag(input.reshape(-1), offset)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of 1-D x: columns x**(N-1), ..., x**0 (increasing: x**0 first).
    Integer and bool inputs give int64, as PyTorch (the powers are a cumprod)."""
    check_tensor(x, "vander")
    if x.ndim != 1:
        raise RuntimeError("vander: x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("vander: N must be non-negative.")
    dtype = dt.promote_types(x.dtype, dt.int64)
    first = ones(x.shape[0], min(n, 1), dtype=dtype, device=x.device)         # (len, 1) or (len, 0)
    if n > 1:
        powers = x.to(dtype).unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1)  # (len, n - 1)
        first = cat([first, powers], 1)
    # (torch's increasing form writes the powers into slices of a new tensor)
    return rename(first, "CopySlices") if increasing else first.flip((1,))


def combinations(input, r=2, with_replacement=False):
    """All length-r combinations of the elements of 1-D input (itertools.combinations order),
    as rows of an (C, r) tensor; with_replacement allows repeats."""
    check_tensor(input, "combinations")
    if input.ndim != 1:
        raise RuntimeError(f"combinations: Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"combinations: Expect a non-negative number, but got {r}")
    if r == 0:
        return input[:0]
    n = input.shape[0]
    # as PyTorch: every r-tuple of positions (n**r of them), kept where strictly (or weakly)
    # increasing; the indices depend only on n and r, so they are built on the host
    grid = np.indices((n,) * r).reshape(r, n ** r)                      # (r, n**r)
    keep = np.all(grid[:-1] <= grid[1:] if with_replacement else grid[:-1] < grid[1:], axis=0)
    idx = tensor(grid[:, keep].T.reshape(-1), dtype=dt.int64, device=input.device)
    return rename(input.index_select(0, idx).reshape(-1, r), "StackBackward0")    # (torch's stacks)


def _split_along(op, input, sections, dim, min_ndim):
    check_tensor(input, op)
    if input.ndim < min_ndim:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_ndim} dimension, but got a "
                           f"tensor with {input.ndim} dimensions!")
    if isinstance(sections, int) and (sections == 0 or input.shape[dim] % sections):
        raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size of the "
                           f"dimension {input.shape[dim]} is not divisible by the split_size {sections}!")
    return tensor_split(input, sections, dim)


def hsplit(input, indices_or_sections):
    """Split along dim 1 (dim 0 of a 1-D tensor); an int must divide that dim evenly."""
    return _split_along("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input, indices_or_sections):
    """input (at least 2-D) split along dim 0 into equal sections or at indices, as torch.vsplit."""
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    """input (at least 3-D) split along dim 2 into equal sections or at indices, as torch.dsplit."""
    return _split_along("dsplit", input, indices_or_sections, 2, 3)
