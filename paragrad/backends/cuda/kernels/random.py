"""Counter-based random numbers (random.cu): a draw of uniform or normal float32/float64
values from a device-side (seed, offset) state, and the launch that advances the offset, so a
captured draw gives new numbers on every replay; and dropout drawn, masked and scaled in one
pass (the fast path of F.dropout)."""
from __future__ import annotations

import math

import cupy
import numpy as np

from ..runtime.compile import GRID_BLOCK, KERNEL_SUFFIX as _SUFFIX, grid_stride, kernel, launch, whole_packs
from .row_views import c_contiguous

_PACK = 8       # half-type elements a thread in dropout_*_vec (16 bytes of x, 8 of the mask)


def draw(name, gen, shape, a, b, wide):
    """name 'uniform' (on [a, b)) or 'normal' (mean a, std b) values of shape, float64 if wide
    else float32, from generator state gen, which then advances past them."""
    n = math.prod(shape)
    with cupy.cuda.Device(gen.device.id):
        out = cupy.empty(shape, dtype=np.float64 if wide else np.float32)
        launch(kernel("kernels/random.cu", name + ("64" if wide else "32")), n, out, np.int64(n), gen,
               (np.float64 if wide else np.float32)(a), (np.float64 if wide else np.float32)(b))
    advance(gen, n)
    return out


def advance(gen, n):
    """Move generator state gen past n numbers, on the device (a draw made elsewhere, such as
    cuDNN's attention dropout seeded from gen, must not be repeated by the next draw)."""
    with cupy.cuda.Device(gen.device.id):
        launch(kernel("kernels/random.cu", "advance"), 1, gen, np.int64(n))


def dropout(x, p, gen):
    """-> (y, mask) for 0 < p < 1: x's elements kept with probability 1 - p (the draws a
    uniform draw from gen would give, gen then advanced past them) and scaled by 1 / (1 - p);
    mask (uint8, x's shape) marks the kept ones. None for a dtype the kernel doesn't take."""
    suffix = _SUFFIX.get(x.dtype.name)
    if suffix is None:
        return None
    x = c_contiguous(x)
    y, mask, n = cupy.empty(x.shape, x.dtype), cupy.empty(x.shape, np.uint8), x.size
    scale = (np.float64 if suffix == "f64" else np.float32)(1.0 / (1.0 - p))
    with cupy.cuda.Device(gen.device.id):
        if n:
            v = _PACK if x.itemsize == 2 and whole_packs(n, _PACK, x, y, mask) else 1
            kernel("kernels/random.cu", ("dropout_fwd_vec_" if v > 1 else "dropout_fwd_") + suffix)(
                grid_stride(n // v), (GRID_BLOCK,), (x, y, mask, np.int64(n), gen, np.float32(1.0 - p), scale))
    advance(gen, n)
    return y, mask


def dropout_backward(g, mask, p):
    """-> dx = g * mask / (1 - p), or None."""
    suffix = _SUFFIX.get(g.dtype.name)
    if suffix is None or g.shape != mask.shape:
        return None
    g = c_contiguous(g)
    dx, n = cupy.empty(g.shape, g.dtype), g.size
    if n:
        v = _PACK if g.itemsize == 2 and mask._c_contiguous and whole_packs(n, _PACK, g, mask, dx) else 1
        kernel("kernels/random.cu", ("dropout_bwd_vec_" if v > 1 else "dropout_bwd_") + suffix)(
            grid_stride(n // v), (GRID_BLOCK,), (g, mask, dx, np.int64(n),
                                                 (np.float64 if suffix == "f64" else np.float32)(1.0 / (1.0 - p))))
    return dx
