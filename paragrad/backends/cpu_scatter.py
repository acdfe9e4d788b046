"""Scatter-add on NumPy arrays (the CPU backend's `scatter_add`) without `np.add.at` over a
tuple of coordinate arrays, NumPy's slow general path (~400 us for an embedding gradient of
512 indices into 27x64, where torch's whole embedding forward+backward takes ~85 us).

- slices: the index is constant along every axis but `axis` (an embedding's or index_add's
  index, expanded with stride 0), slices of 8 or more elements, and either few targets or many
  sources per target. The K source slices are summed per target: for few float targets by one
  GEMM, a one-hot (n, K) matrix times the (K, R) source; else by a stable sort of the indices
  and a sum over each run of equal ones (np.add.reduceat, or one reduction per long run).
- elements: any other index. Each element's offset in base's flat buffer is computed, and
  `np.add.at` with that one 1-D index takes NumPy's fast loop (every paragrad dtype but the
  half ones and bool): the same additions in the same order as the tuple form, so float32,
  float64 and integer results are the old ones bit for bit.

Sums over slices are exact up to float rounding in another order (the GEMM's blocks, a run's
sum added to base once), and a -0. in base may become +0. where the GEMM adds only -0. to it.
float16/bfloat16 accumulate in float32 and round once, as torch's scatter_add (torch's
index_add, index_put and embedding backward add in the half dtype: a run past 2048 float16
ones differs). bool adds are logical or; integers wrap.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes

_HALF = tuple(d for d in (np.dtype(np.float16), _dtypes.bfloat16.np) if d is not None)
# the one-hot GEMM does n multiply-adds per source element, reduceat a sort and a gather: the
# GEMM wins up to about this many targets (measured on a 2-core AMD EPYC, float32)
GEMM_MAX_TARGETS = 64
# OpenBLAS runs a GEMM of n*K*R >= 2**20 on several threads, which on a busy 2-core machine
# stalled 371 of 1000 calls for 1-64 ms (none below): larger ones take reduceat
GEMM_MAX_WORK = 1 << 20
# reduceat adds one source slice at a time (~100-200 ns each): it beats the elements' flat
# index only for slices of at least this many elements, in runs of at least RUN_MIN
# (K >= RUN_MIN * n: many sources per target)
REDUCEAT_MIN_ROW = 8
RUN_MIN = 8
# np.add.reduceat costs ~0.5-1.5 ns an element, more for wide slices; a Python loop of one
# reduction per run ~2 us a run and ~0.2 ns an element: the loop wins from this many elements
# per run (1.6M elements into 65 rows of 384: 0.34 ms against 1.9 ms)
LOOP_MIN_PER_RUN = 4000


def scatter_add(base, index, src, axis):
    """base[index[i][j]][j] += src[i][j] (axis 0), in place; duplicates accumulate; negative
    indices wrap, out-of-range ones raise IndexError (as np.add.at). index and src have one
    shape, no larger than base's off `axis`. Returns base."""
    if index.size == 0:
        return base
    if base.ndim == 0:
        scatter_add(base.reshape(1), index.reshape(1), src.reshape(1), 0)
        return base
    if base.ndim == 1:      # its own flat index: np.add.at wraps and checks it
        _add_elements(base, index, src, 0)
        return base
    n = base.shape[axis]
    # the block of base the index covers (torch's index may be smaller off `axis`): a view
    block = base
    if index.shape != base.shape:
        block = base[tuple(slice(None) if k == axis else slice(0, s) for k, s in enumerate(index.shape))]
    rows = _row_index(index, axis)
    if rows is None:
        _add_elements(block, _checked(index, n, axis), src, axis)
        return base
    rows = _checked(rows, n, axis)                        # (K,)
    k, width = rows.shape[0], index.size // rows.shape[0]
    many = k >= RUN_MIN * n or _gemm_fits(base, n, index.size)
    if base.dtype != np.bool_ and width >= REDUCEAT_MIN_ROW and many:
        if axis:                                          # targets first: (n, ...), a view
            block, src = np.moveaxis(block, axis, 0), np.moveaxis(src, axis, 0)
        _add_rows(block, rows, src.reshape(k, width))
    else:
        view = [1] * index.ndim
        view[axis] = k
        _add_elements(block, np.broadcast_to(rows.reshape(view), index.shape), src, axis)
    return base


def _gemm_fits(base, n, size):
    return base.dtype.kind == "f" and n <= GEMM_MAX_TARGETS and n * size < GEMM_MAX_WORK


def _row_index(index, axis):
    """The (K,) indices if index is the same along every axis but `axis`, else None."""
    for k in range(index.ndim):
        if k != axis and index.strides[k] and index.shape[k] > 1:
            return None
    return index[(0,) * axis + (slice(None),) + (0,) * (index.ndim - axis - 1)]


def _checked(idx, n, axis):
    """idx with negative entries wrapped, or IndexError for one outside [-n, n)."""
    lo, hi = int(idx.min()), int(idx.max())
    if hi >= n or lo < -n:
        bad = hi if hi >= n else lo
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
    if lo < 0:
        idx = np.where(idx < 0, idx + n, idx)
    return idx


def _add_rows(out, rows, s):
    """out[rows[k]] += s[k] for an (n, ...) out, (K,) rows in [0, n) and a (K, R) s."""
    n, k = out.shape[0], rows.shape[0]
    wide = np.dtype(np.float32) if out.dtype in _HALF else out.dtype
    if _gemm_fits(out, n, s.size):
        sums = _onehot_sums(rows, s, n, wide)
        if sums is not None:
            hit = np.zeros(n, np.bool_)
            hit[rows] = True
            targets = None if hit.all() else np.flatnonzero(hit)   # others keep a -0.
            _add_into(out, targets, sums if targets is None else sums[targets])
            return
    order = np.argsort(rows, kind="stable")               # equal targets keep source order
    ranked = rows[order]
    starts = np.flatnonzero(np.concatenate(([True], ranked[1:] != ranked[:-1])))     # (U,)
    runs = s.take(order, axis=0).astype(wide, copy=False)  # (K, R), grouped by target
    if s.size >= LOOP_MIN_PER_RUN * len(starts):
        # few long runs: a reduction per run streams its rows at memory speed
        sums = np.empty((len(starts), s.shape[1]), wide)
        for i, (a, b) in enumerate(zip(starts.tolist(), starts[1:].tolist() + [k])):
            np.add.reduce(runs[a:b], axis=0, dtype=wide, out=sums[i])
    else:
        sums = np.add.reduceat(runs, starts, axis=0, dtype=wide)    # (U, R)
    _add_into(out, ranked[starts], sums)                  # (integers wrap in their dtype)


def _onehot_sums(rows, s, n, wide):
    """(n, R) sums of s's (K, R) rows per target in rows (K,), as one GEMM of a one-hot (n, K)
    matrix; None where a non-finite source would spill (0 * inf is nan in every other
    target's sum)."""
    k = rows.shape[0]
    onehot = np.zeros((n, k), wide)
    onehot[rows, np.arange(k)] = 1                        # (n, K)
    sums = onehot @ np.ascontiguousarray(s, wide)         # (n, R); (BLAS wants no stride 0)
    return sums if np.isfinite(sums).all() else None


def row_sums(rows, s, n):
    """A fresh (n, R) array: out[rows[k]] += s[k] into zeros, for (K,) rows in [0, n) and a
    (K, R) s (an embedding's weight gradient). Rows no index hits are +0., as torch's."""
    if _gemm_fits(s, n, s.size) and s.dtype not in _HALF:
        sums = _onehot_sums(rows, s, n, s.dtype)
        if sums is not None:
            sums += 0.0             # 0 + sum, as torch adds into zeros: a -0. sum becomes +0.
            return sums
    out = np.zeros((n,) + s.shape[1:], s.dtype)
    return scatter_add(out, np.broadcast_to(rows.reshape(-1, 1), s.shape), s, 0)


def _add_into(out, targets, sums):
    """out[targets] += sums (targets distinct; None for all of out), rounding a float32 sum
    into a half-precision out once."""
    sums = sums.reshape(((out.shape[0] if targets is None else len(targets)),) + out.shape[1:])
    key = Ellipsis if targets is None else targets
    if sums.dtype == out.dtype:
        out[key] += sums
    else:
        out[key] = (out[key].astype(sums.dtype) + sums).astype(out.dtype)


def _add_elements(block, idx, src, axis):
    """block[..., idx[i, j], ...] += src[i, j] with torch's scatter coordinates (every axis
    but `axis` is the element's own position), through flat offsets into a C-ordered block."""
    shape = block.shape
    strides = [int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape))]
    offsets = None                                        # index's shape, 1 along `axis`
    for k, size in enumerate(shape):
        if k != axis and size > 1:
            step = (np.arange(size) * strides[k]).reshape((size,) + (1,) * (len(shape) - k - 1))
            offsets = step if offsets is None else offsets + step
    # one new array at most, updated in place: each large temporary freed costs this VM its
    # pages again at the next call (glibc hands them back), ~1 ms for 2 MB
    flat_index = idx.astype(np.intp, copy=False)
    if strides[axis] != 1:
        flat_index = flat_index * strides[axis]
        if offsets is not None:
            flat_index += offsets
    elif offsets is not None:
        flat_index = flat_index + offsets
    flat_index = flat_index.reshape(-1)                   # (N,)
    if block.dtype in _HALF:
        acc = block.astype(np.float32)                    # C-ordered, wide
    elif block.flags.c_contiguous:
        acc = block                                       # base itself (or a view of it)
    else:
        acc = np.ascontiguousarray(block)
    flat = acc.reshape(-1)
    values = src.reshape(-1)
    if block.dtype == np.bool_:                           # adding bools is logical or
        flat[flat_index[values]] = True
    else:
        np.add.at(flat, flat_index, values.astype(flat.dtype, copy=False))
    if acc is not block:
        block[...] = acc
