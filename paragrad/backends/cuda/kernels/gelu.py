"""The CUDA backend's gelu fast path (gelu.cu): forward and backward one launch each, half types
read and written directly and computed in float32, 8 elements a 16-byte access where the size
and addresses allow. Nothing is read on the host: it runs inside a pg.jit capture."""
from __future__ import annotations

import cupy
import numpy as np

from ..runtime.compile import GRID_BLOCK, KERNEL_SUFFIX as _SUFFIX, grid_stride, kernel, whole_packs
from .row_views import c_contiguous

_PACK = 8       # half-type elements per 16-byte access (gelu_*_vec)


def gelu(x, approximate):
    """-> y of x's shape and dtype (C-contiguous), or None for a dtype the kernel doesn't take."""
    suffix = _SUFFIX.get(x.dtype.name)
    if suffix is None:
        return None
    x = c_contiguous(x)
    y = cupy.empty(x.shape, x.dtype)
    if x.size:
        v = _PACK if x.itemsize == 2 and whole_packs(x.size, _PACK, x, y) else 1
        kernel("kernels/gelu.cu", ("gelu_fwd_vec_" if v > 1 else "gelu_fwd_") + suffix)(
            grid_stride(x.size // v), (GRID_BLOCK,), (x, y, np.int64(x.size), np.int32(approximate == "tanh")))
    return y


def gelu_backward(g, x, approximate):
    """-> dx, or None (g and x of one shape and dtype)."""
    suffix = _SUFFIX.get(x.dtype.name)
    if suffix is None or g.dtype != x.dtype or g.shape != x.shape:
        return None
    g, x = c_contiguous(g), c_contiguous(x)
    dx = cupy.empty(x.shape, x.dtype)
    if x.size:
        v = _PACK if x.itemsize == 2 and whole_packs(x.size, _PACK, g, x, dx) else 1
        kernel("kernels/gelu.cu", ("gelu_bwd_vec_" if v > 1 else "gelu_bwd_") + suffix)(
            grid_stride(x.size // v), (GRID_BLOCK,), (g, x, dx, np.int64(x.size), np.int32(approximate == "tanh")))
    return dx
