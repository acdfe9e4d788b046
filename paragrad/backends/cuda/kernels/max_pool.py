"""max_pool2d forward and backward as one kernel each (the composite in ops/neural/pool.py runs ~6
kernels per window tap: at 224x224 those taps cost more than PyTorch's whole pooling); over
channels-last buffers, max_pool.cu's kernels take 16 bytes of channels a thread.

Forward: one thread per output element walks its window's in-bounds taps; the first maximum
wins and a NaN always takes over (the last NaN wins), as PyTorch. Backward: one thread per
input element gathers, in a fixed tap order, the output gradients of the windows whose saved
index is this element, summed in double: deterministic, no atomics. Floating types (float16 and
bfloat16 too, a convnet under autocast) and the integer types (forward); other dtypes compose
primitives.
"""
from __future__ import annotations

import cupy
import numpy as np

from ....memory_format import runs_channels_last
from ..runtime.compile import GRID_BLOCK, grid_stride, kernel, whole_packs
from ..runtime.channels_last import as_nhwc
from .row_views import c_contiguous

# C: the channels of a channels-last buffer, whose pixels are C elements apart (a pixel's
# channels lie together); 1 for a row-major one, where each (n, c) plane is one "batch row".
# Either way i runs over the output (or, backward, the input) in memory order.
_GEOMETRY = ("int32 H, int32 W, int32 Ho, int32 Wo, int32 kh, int32 kw, int32 sh, int32 sw, int32 ph, "
             "int32 pw, int32 dh, int32 dw, int32 C")

_forward = cupy.ElementwiseKernel(
    "raw T x, " + _GEOMETRY, "T y, int64 idx",
    """
    const long long pix = i / C;                                    // the output pixel
    const int ow = pix % Wo, oh = (pix / Wo) % Ho;
    const long long plane = (pix / Wo / Ho) * H * W * C + i % C;    // its plane's first element
    const int h0 = oh * sh - ph, w0 = ow * sw - pw;
    T best = x[plane];                  // (replaced by the first in-bounds tap)
    long long at = -1;
    for (int a = 0; a < kh; ++a) {
        const int h = h0 + a * dh;
        if (h < 0 || h >= H) continue;
        for (int b = 0; b < kw; ++b) {
            const int w = w0 + b * dw;
            if (w < 0 || w >= W) continue;
            const T v = x[plane + ((long long)h * W + w) * C];
            if (at < 0 || v > best || isnan((double)v)) { best = v; at = h * W + w; }
        }
    }
    y = best;
    idx = at;
    """, "pg_max_pool2d")

_backward = cupy.ElementwiseKernel(
    "raw T gy, raw int64 idx, " + _GEOMETRY, "T dx",
    """
    const long long pix = i / C;                                    // the input pixel
    const int w = pix % W, h = (pix / W) % H;
    const long long plane = (pix / W / H) * Ho * Wo * C + i % C;    // its plane's first output
    const long long me = (long long)h * W + w;
    double acc = 0.0;
    if (dh == 1 && dw == 1) {               // the windows covering (h, w): two ranges, four divisions
        const int oh0 = h + ph < kh ? 0 : (h + ph - kh) / sh + 1, oh1 = min((h + ph) / sh + 1, Ho);
        const int ow0 = w + pw < kw ? 0 : (w + pw - kw) / sw + 1, ow1 = min((w + pw) / sw + 1, Wo);
        for (int oh = oh0; oh < oh1; ++oh)
            for (int ow = ow0; ow < ow1; ++ow) {
                const long long o = plane + ((long long)oh * Wo + ow) * C;
                if (idx[o] == me) acc += (double)gy[o];
            }
    } else {
        for (int a = 0; a < kh; ++a) {      // the window row whose tap a lands on row h
            const int r = h + ph - a * dh;
            if (r < 0 || r % sh) continue;
            const int oh = r / sh;
            if (oh >= Ho) continue;
            for (int b = 0; b < kw; ++b) {
                const int q = w + pw - b * dw;
                if (q < 0 || q % sw) continue;
                const int ow = q / sw;
                if (ow >= Wo) continue;
                const long long o = plane + ((long long)oh * Wo + ow) * C;
                if (idx[o] == me) acc += (double)gy[o];
            }
        }
    }
    dx = (T)acc;
    """, "pg_max_pool2d_backward")

_FORWARD_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8")
_BACKWARD_DTYPES = ("float32", "float64", "float16", "bfloat16")


_NHWC_SUFFIX = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def _channels_a_thread(nhwc, src, dst):
    """V for max_pool.cu's channels-last kernels (16 bytes of neighbouring channels a thread),
    or 0 where they don't apply: row-major buffers, other dtypes, C not a multiple of V,
    unaligned buffers, or 2^31 elements and more (their indices are 32-bit)."""
    if not nhwc or src.dtype.name not in _NHWC_SUFFIX or max(src.size, dst.size) >= 2 ** 31:
        return 0
    v = 16 // src.itemsize
    return v if src.shape[1] % v == 0 and whole_packs(src.size, v, src, dst) else 0


def _nhwc_kernel(direction, a):
    return kernel("kernels/max_pool.cu", f"max_pool_{direction}_nhwc_{_NHWC_SUFFIX[a.dtype.name]}")


def _window(h, w, ho, wo, c, k, s, p, d):
    return tuple(np.int32(v) for v in (h, w, ho, wo, c, *k, *s, *p, *d))


def _geometry(h, w, ho, wo, k, s, p, d, c):
    return tuple(cupy.int32(v) for v in (h, w, ho, wo, *k, *s, *p, *d, c))


def _memory(a, nhwc):
    """The buffer the kernels walk: a channels-last (N, C, H, W) as its (N, H, W, C) memory."""
    return a.transpose(0, 2, 3, 1) if nhwc else c_contiguous(a)


def _logical(a, nhwc):
    return a.transpose(0, 3, 1, 2) if nhwc else a


def max_pool2d(x, k, s, p, d, ho, wo):
    """x (N, C, H, W) -> (y, idx) (N, C, Ho, Wo) in x's layout (row-major or channels-last),
    idx flat in H*W (int64); None to decline."""
    if x.dtype.name not in _FORWARD_DTYPES or x.size == 0:
        return None
    n, c, h, w = x.shape
    nhwc = runs_channels_last(x)
    shape = (n, ho, wo, c) if nhwc else (n, c, ho, wo)
    y, idx = cupy.empty(shape, dtype=x.dtype), cupy.empty(shape, dtype=cupy.int64)
    v = _channels_a_thread(nhwc, x, y)
    if v:
        _nhwc_kernel("fwd", x)(grid_stride(y.size // v), (GRID_BLOCK,), (
            _memory(x, nhwc), y, idx, np.uint32(y.size // v), *_window(h, w, ho, wo, c, k, s, p, d)))
        return _logical(y, nhwc), _logical(idx, nhwc)
    _forward(_memory(x, nhwc), *_geometry(h, w, ho, wo, k, s, p, d, c if nhwc else 1), y, idx)
    return _logical(y, nhwc), _logical(idx, nhwc)


def max_pool2d_backward(gy, idx, h, w, k, s, p, d):
    """(N, C, Ho, Wo) output gradient and saved indices -> dx (N, C, H, W), channels-last when
    gy is; None to decline."""
    if gy.dtype.name not in _BACKWARD_DTYPES or gy.size == 0:
        return None
    n, c, ho, wo = gy.shape
    nhwc = runs_channels_last(gy)
    dx = cupy.empty((n, h, w, c) if nhwc else (n, c, h, w), dtype=gy.dtype)
    idx = as_nhwc(idx) if nhwc else idx
    v = _channels_a_thread(nhwc, gy, dx)
    if v:
        _nhwc_kernel("bwd", gy)(grid_stride(dx.size // v), (GRID_BLOCK,), (
            _memory(gy, nhwc), _memory(idx, nhwc), dx, np.uint32(dx.size // v), *_window(h, w, ho, wo, c, k, s, p, d)))
        return _logical(dx, nhwc)
    _backward(_memory(gy, nhwc), _memory(idx, nhwc), *_geometry(h, w, ho, wo, k, s, p, d, c if nhwc else 1), dx)
    return _logical(dx, nhwc)
