"""Raw launches of kernels/indexing.cu: the embedding's row gather and its gradient's
scatter-add, and roll, each one launch where CuPy's take, scatter_add and slicing with
concatenate spend far more host time (normalizing indices, building coordinate arrays)."""
from __future__ import annotations

import math

import cupy
import numpy as np

from ..runtime.compile import GRID_BLOCK, compiled, grid_stride

_WORDS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
_ATOMIC = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_INT64 = np.dtype(np.int64)


def take_rows(x, idx):
    """x[idx] along axis 0 for a C-contiguous x (V, ...) and C-contiguous int64 indices of any
    shape -> (*idx.shape, ...); None for other operands (the caller takes CuPy's path)."""
    word = _WORDS.get(x.itemsize)
    if (word is None or type(idx) is not cupy.ndarray or not x.ndim or not x._c_contiguous
            or idx.dtype != _INT64 or not idx._c_contiguous):
        return None             # (a host index array, too, goes to CuPy's take)
    v = x.shape[0]
    k, d = idx.size, (x.size // v if v else 0)
    out = cupy.empty(idx.shape + x.shape[1:], x.dtype)
    if k * d:
        compiled("kernels/indexing.cu", f"gather_rows<{word}>")(grid_stride(k * d), (GRID_BLOCK,), (
            x, idx, out, np.int64(k), np.int64(d), np.int64(v)))
    return out


def row_sums(idx, g, num_rows):
    """dw (num_rows, D): the rows of g (K, D) summed per id of idx (K,), zeros where no id
    points; float32/float64 only (None otherwise: no atomic add of that width)."""
    ctype = _ATOMIC.get(g.dtype)
    if (ctype is None or type(idx) is not cupy.ndarray or idx.dtype != _INT64 or not idx._c_contiguous
            or not g._c_contiguous):
        return None
    k, d = g.shape
    dw = cupy.empty((num_rows, d), g.dtype)
    if dw.nbytes:
        dw.data.memset_async(0, dw.nbytes)
    if k * d:
        compiled("kernels/indexing.cu", f"scatter_add_rows<{ctype}>")(grid_stride(k * d), (GRID_BLOCK,), (
            idx, g, dw, np.int64(k), np.int64(d), np.int64(num_rows)))
    return dw


def roll(x, shift, axis):
    """x rolled by shift (0 < shift < x.shape[axis]) along axis, as a new C-contiguous buffer;
    None where x isn't C-contiguous."""
    word = _WORDS.get(x.itemsize)
    if word is None or not x._c_contiguous:
        return None
    n = x.shape[axis]
    inner = x.size // (math.prod(x.shape[:axis]) * n) if x.size else 1
    out = cupy.empty(x.shape, x.dtype)
    if x.size:
        compiled("kernels/indexing.cu", f"roll<{word}>")(grid_stride(x.size), (GRID_BLOCK,), (
            x, out, np.int64(x.size), np.int64(n), np.int64(inner), np.int64(shift)))
    return out
