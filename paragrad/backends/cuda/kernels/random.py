"""Counter-based random numbers (random.cu): a draw of uniform or normal float32/float64
values from a device-side (seed, offset) state, and the launch that advances the offset, so a
captured draw gives new numbers on every replay; and dropout drawn, masked and scaled in one
pass (the fast path of F.dropout), also inside a residual add (F.residual_dropout's)."""
from __future__ import annotations

import math

import cupy
import numpy as np

from ..runtime.compile import GRID_BLOCK, KERNEL_SUFFIX as _SUFFIX, grid_stride, kernel, launch, whole_packs
from .row_views import c_contiguous
from .rows import NULL as _NULL

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


def dropout_backward(g, mask, p, dtype=None):
    """-> dx = g * mask / (1 - p) in `dtype` (default g's; a half type from a float32 g: g
    rounded to it first, as a cast then the backward would), or None."""
    dtype = g.dtype if dtype is None else np.dtype(dtype)
    suffix = _SUFFIX.get(g.dtype.name) if dtype == g.dtype else _CAST_BWD.get((g.dtype.name, dtype.name))
    if suffix is None or g.shape != mask.shape:
        return None
    g = c_contiguous(g)
    dx, n = cupy.empty(g.shape, dtype), g.size
    if n:
        v = _PACK if dx.itemsize == 2 and mask._c_contiguous and whole_packs(n, _PACK, g, mask, dx) else 1
        kernel("kernels/random.cu", ("dropout_bwd_vec_" if v > 1 else "dropout_bwd_") + suffix)(
            grid_stride(n // v), (GRID_BLOCK,), (g, mask, dx, np.int64(n),
                                                 (np.float64 if suffix == "f64" else np.float32)(1.0 / (1.0 - p))))
    return dx


# dropout_bwd_<suffix> of a float32 gradient for a half-type branch
_CAST_BWD = {("float32", "bfloat16"): "f32_bf16", ("float32", "float16"): "f32_f16"}
# residual_dropout_fwd_<suffix> by (residual's dtype, branch's dtype)
_RESIDUAL = {("float32", "float32"): "f32_f32", ("float32", "bfloat16"): "f32_bf16",
             ("float32", "float16"): "f32_f16", ("bfloat16", "bfloat16"): "bf16_bf16",
             ("float16", "float16"): "f16_f16"}


def residual_dropout(res, y, p, gen):
    """-> (res + dropout(y), mask) in res's dtype, one pass; mask as dropout's (uint8), or None
    for p == 0 (then nothing is drawn and gen stays). None for dtypes the kernel doesn't take."""
    suffix = _RESIDUAL.get((res.dtype.name, y.dtype.name))
    if suffix is None or res.shape != y.shape:
        return None
    res, y = c_contiguous(res), c_contiguous(y)
    out, n = cupy.empty(res.shape, res.dtype), res.size
    mask = cupy.empty(res.shape, np.uint8) if p > 0 else None
    v = 16 // res.itemsize
    with cupy.cuda.Device(res.device.id):
        if n:
            vec = whole_packs(n, v, res, y, out, *([mask] if mask is not None else []))
            kernel("kernels/random.cu", ("residual_dropout_fwd_vec_" if vec else "residual_dropout_fwd_") + suffix)(
                grid_stride(n // v if vec else n), (GRID_BLOCK,), (
                    res, y, out, mask if mask is not None else _NULL, np.int64(n),
                    gen if mask is not None else _NULL, np.float32(1.0 - p), np.float32(1.0 / (1.0 - p))))
    if mask is not None:
        advance(gen, n)
    return out, mask
