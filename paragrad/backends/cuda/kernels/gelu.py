"""The CUDA backend's gelu fast path (gelu.cu): forward and backward one launch each, half types
read and written directly and computed in float32. Nothing is read on the host: it runs inside
a pg.jit capture."""
from __future__ import annotations

import cupy
import numpy as np

from ..runtime.compile import GRID_BLOCK, KERNEL_SUFFIX as _SUFFIX, grid_stride, kernel
from .row_views import c_contiguous


def gelu(x, approximate):
    """-> y of x's shape and dtype (C-contiguous), or None for a dtype the kernel doesn't take."""
    suffix = _SUFFIX.get(x.dtype.name)
    if suffix is None:
        return None
    x = c_contiguous(x)
    y = cupy.empty(x.shape, x.dtype)
    if x.size:
        kernel("kernels/gelu.cu", "gelu_fwd_" + suffix)(
            grid_stride(x.size), (GRID_BLOCK,), (x, y, np.int64(x.size), np.int32(approximate == "tanh")))
    return y


def gelu_backward(g, x, approximate):
    """-> dx, or None (g and x of one shape and dtype)."""
    suffix = _SUFFIX.get(x.dtype.name)
    if suffix is None or g.dtype != x.dtype or g.shape != x.shape:
        return None
    g, x = c_contiguous(g), c_contiguous(x)
    dx = cupy.empty(x.shape, x.dtype)
    if x.size:
        kernel("kernels/gelu.cu", "gelu_bwd_" + suffix)(
            grid_stride(x.size), (GRID_BLOCK,), (g, x, dx, np.int64(x.size), np.int32(approximate == "tanh")))
    return dx
