"""layer_norm forward and backward (layer_norm.cu): the per-row kernels, and the weight and bias
gradients summed by the backward's warps (rows up to 1024 wide) or by one column-sum launch; the
CUDA backend's layer_norm fast paths."""
from __future__ import annotations

import math

import cupy
import numpy as np

from ..runtime.compile import kernel
from ..runtime.multiprocessors import sm_count
from .row_views import c_contiguous
from .rows import BLOCK, NULL, SUFFIX, kernel_dtype, ticket


# rows up to this wide go one warp a row (ln_*_warp), 32 slots a lane at most; float64 to 512
# (the backward's four row-sized arrays in doubles spilled registers at 1024)
_WARP_COLS = {np.dtype(np.float32): 1024, np.dtype(np.float64): 512}
_WARPS = 8             # rows a block in the forward warp kernel


def _per_lane(cols):
    """The warp kernels' elements a lane: the power of two that holds a row of `cols`."""
    n = 1
    while 32 * n < cols:
        n *= 2
    return n


# the half types a float32 norm writes its output in, and reads its gradient in, directly
_HALF_SUFFIX = {"bfloat16": "_bf16", "float16": "_f16"}


def _half_suffix(x, kd, cols, other):
    """'' for the kernels whose y and g are x's (kernel) dtype, '_bf16' / '_f16' for a float32
    x whose output or gradient `other` is that half type (warp rows only), else None."""
    if other is None or other == kd:
        return ""
    if kd != np.float32 or x.dtype != kd or cols > _WARP_COLS[kd]:
        return None
    return _HALF_SUFFIX.get(np.dtype(other).name)


def layer_norm(x, w, b, n_norm_dims, eps, out_dtype=None):
    kd = kernel_dtype(x)
    cols = math.prod(x.shape[x.ndim - n_norm_dims:])
    x2 = c_contiguous(x.astype(kd, copy=False)).reshape(-1, cols)
    rows = x2.shape[0]
    half = _half_suffix(x, kd, cols, out_dtype)
    if half is None:        # a wide row: float32 out, then one cast
        y, mean, rstd = layer_norm(x, w, b, n_norm_dims, eps)
        return y.astype(out_dtype), mean, rstd
    y = cupy.empty(x2.shape, out_dtype if half else kd)
    mean = cupy.empty(rows, dtype=kd)
    rstd = cupy.empty(rows, dtype=kd)
    wk = c_contiguous(w.astype(kd, copy=False)).reshape(-1) if w is not None else None
    bk = c_contiguous(b.astype(kd, copy=False)).reshape(-1) if b is not None else None
    if rows and cols <= _WARP_COLS[kd]:
        kernel("kernels/layer_norm.cu", f"ln_fwd_warp{_per_lane(cols)}_{SUFFIX[kd]}{half}")(
            ((rows + _WARPS - 1) // _WARPS,), (32 * _WARPS,), (
                x2, wk if wk is not None else NULL, bk if bk is not None else NULL, y, mean, rstd,
                np.int64(rows), np.int64(cols), kd.type(eps)))
    elif rows:
        kernel("kernels/layer_norm.cu", f"ln_fwd_{SUFFIX[kd]}")((rows,), (BLOCK,), (
            x2, wk if wk is not None else NULL, bk if bk is not None else NULL, y, mean, rstd,
            np.int64(cols), kd.type(eps)))
    lead = x.shape[:x.ndim - n_norm_dims] + (1,) * n_norm_dims
    return y.reshape(x.shape).astype(out_dtype or x.dtype, copy=False), mean.reshape(lead), rstd.reshape(lead)


def layer_norm_backward(g, x, w, mean, rstd, n_norm_dims, need_dw, need_db, acc=None):
    kd = kernel_dtype(x)
    cols = math.prod(x.shape[x.ndim - n_norm_dims:])
    x2 = c_contiguous(x.astype(kd, copy=False)).reshape(-1, cols)        # (rows, cols)
    half = _half_suffix(x, kd, cols, g.dtype)           # a half g read as it is, or widened here
    g2 = c_contiguous(g if half else g.astype(kd, copy=False)).reshape(-1, cols)
    half = half or ""
    rows = x2.shape[0]
    wk = c_contiguous(w.astype(kd, copy=False)).reshape(-1) if w is not None else None
    m1, r1 = mean.astype(kd, copy=False).reshape(-1), rstd.astype(kd, copy=False).reshape(-1)
    # with acc (x's other gradient) the warp kernel adds dx into it where it can write it as rows
    into = acc is not None and acc.dtype == kd and acc.flags.c_contiguous and cols <= _WARP_COLS[kd]
    dx = acc.reshape(-1, cols) if into else cupy.empty_like(x2)
    norm_shape = x.shape[x.ndim - n_norm_dims:]
    params = need_dw or need_db
    dw = db = None
    if rows and cols <= _WARP_COLS[kd]:
        # with the parameters' gradients: the warps stride over the rows, as many blocks as an SM
        # holds, and each block leaves its partial sums for ln_params_sum; without: a warp a row
        n = _per_lane(cols)
        warps = _bwd_warps(n, kd.itemsize)
        blocks = -(-rows // warps)
        part = NULL
        if params:
            blocks = min(blocks, _BWD_BLOCKS_PER_SM * sm_count())
            part = cupy.empty((2, blocks, cols), kd)
        kernel("kernels/layer_norm.cu", f"ln_bwd_warp{n}_{SUFFIX[kd]}{half}")(
            (blocks,), (32 * warps,), (
                g2, x2, wk if wk is not None else NULL, m1, r1, dx, part, np.int64(rows), np.int64(cols),
                np.int32(into)))
        if params:
            dw, db = cupy.empty(cols, kd), cupy.empty(cols, kd)
            kernel("kernels/layer_norm.cu", f"ln_params_sum_{SUFFIX[kd]}")(((cols + 31) // 32,), (32, 32), (
                part, dw, db, np.int64(blocks), np.int64(cols)))
    else:
        if rows:
            kernel("kernels/layer_norm.cu", f"ln_bwd_{SUFFIX[kd]}")((rows,), (BLOCK,), (
                g2, x2, wk if wk is not None else NULL, m1, r1, dx, np.int64(cols)))
        if params:
            dw, db = _layer_norm_params_backward(g2, x2, m1, r1, kd)
    if params:
        dw, db = dw.reshape(norm_shape).astype(x.dtype, copy=False), db.reshape(norm_shape).astype(x.dtype, copy=False)
    dx = dx.reshape(x.shape).astype(x.dtype, copy=False)
    if acc is not None and not into:
        acc += dx
    return (acc if acc is not None else dx), (dw if need_dw else None), (db if need_db else None)


_BWD_BLOCKS_PER_SM = 4      # ln_bwd_warp's __launch_bounds__: registers and shared memory for 4


def _bwd_warps(n, itemsize):
    """ln_bwd_warp's warps a block for n slots a lane (layer_norm.cu's bwd_warps): 8, fewer where
    the warps' partial sums would pass 32 KiB of shared memory."""
    return min(8, 512 // (n * itemsize))
_PARAM_BLOCKS = 264     # about two blocks per SM of an H100: chunks of rows until the grid has that many


def _layer_norm_params_backward(g2, x2, m1, r1, kd):
    """(dw, db) (cols,): the column sums of g * xhat and of g over (rows, cols), one launch (rows
    wider than a warp's 1024 columns)."""
    rows, cols = x2.shape
    dw, db = cupy.empty(cols, kd), cupy.empty(cols, kd)
    if not rows:
        dw.fill(0)
        db.fill(0)
        return dw, db
    strips = (cols + 31) // 32
    chunks = max(1, min((rows + 31) // 32, _PARAM_BLOCKS // strips))
    chunk = (rows + chunks - 1) // chunks
    chunks = (rows + chunk - 1) // chunk
    part = cupy.empty((2, chunks, cols), kd) if chunks > 1 else NULL
    kernel("kernels/layer_norm.cu", f"ln_bwd_params_{SUFFIX[kd]}")((strips, chunks), (32, 8), (
        g2, x2, m1, r1, part, dw, db, ticket(), np.int64(rows), np.int64(cols), np.int64(chunk)))
    return dw, db
