"""max_pool2d forward and backward as one kernel each (the composite in ops/neural/pool.py runs ~6
kernels per window tap: at 224x224 those taps cost more than PyTorch's whole pooling).

Forward: one thread per output element walks its window's in-bounds taps; the first maximum
wins and a NaN always takes over (the last NaN wins), as PyTorch. Backward: one thread per
input element gathers, in a fixed tap order, the output gradients of the windows whose saved
index is this element, summed in double: deterministic, no atomics. Floating types (float16 and
bfloat16 too, a convnet under autocast) and the integer types (forward); other dtypes compose
primitives.
"""
from __future__ import annotations

import cupy

from ..runtime.compile import c_contiguous

_GEOMETRY = "int32 H, int32 W, int32 Ho, int32 Wo, int32 kh, int32 kw, int32 sh, int32 sw, int32 ph, int32 pw, int32 dh, int32 dw"

_forward = cupy.ElementwiseKernel(
    "raw T x, " + _GEOMETRY, "T y, int64 idx",
    """
    const int ow = i % Wo, oh = (i / Wo) % Ho;
    const long long plane = (long long)(i / Wo / Ho) * H * W;      // (n, c)'s first element
    const int h0 = oh * sh - ph, w0 = ow * sw - pw;
    T best = x[plane];                  // (replaced by the first in-bounds tap)
    long long at = -1;
    for (int a = 0; a < kh; ++a) {
        const int h = h0 + a * dh;
        if (h < 0 || h >= H) continue;
        for (int b = 0; b < kw; ++b) {
            const int w = w0 + b * dw;
            if (w < 0 || w >= W) continue;
            const T v = x[plane + h * W + w];
            if (at < 0 || v > best || isnan((double)v)) { best = v; at = h * W + w; }
        }
    }
    y = best;
    idx = at;
    """, "pg_max_pool2d")

_backward = cupy.ElementwiseKernel(
    "raw T gy, raw int64 idx, " + _GEOMETRY, "T dx",
    """
    const int w = i % W, h = (i / W) % H;
    const long long plane = (long long)(i / W / H) * Ho * Wo;       // (n, c)'s first output
    const long long me = (long long)h * W + w;
    double acc = 0.0;
    if (dh == 1 && dw == 1) {               // the windows covering (h, w): two ranges, four divisions
        const int oh0 = h + ph < kh ? 0 : (h + ph - kh) / sh + 1, oh1 = min((h + ph) / sh + 1, Ho);
        const int ow0 = w + pw < kw ? 0 : (w + pw - kw) / sw + 1, ow1 = min((w + pw) / sw + 1, Wo);
        for (int oh = oh0; oh < oh1; ++oh)
            for (int ow = ow0; ow < ow1; ++ow) {
                const long long o = plane + (long long)oh * Wo + ow;
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
                const long long o = plane + (long long)oh * Wo + ow;
                if (idx[o] == me) acc += (double)gy[o];
            }
        }
    }
    dx = (T)acc;
    """, "pg_max_pool2d_backward")

_FORWARD_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8")
_BACKWARD_DTYPES = ("float32", "float64", "float16", "bfloat16")


def _geometry(h, w, ho, wo, k, s, p, d):
    return tuple(cupy.int32(v) for v in (h, w, ho, wo, *k, *s, *p, *d))


def max_pool2d(x, k, s, p, d, ho, wo):
    """x (N, C, H, W) -> (y, idx) (N, C, Ho, Wo), idx flat in H*W (int64); None to decline."""
    if x.dtype.name not in _FORWARD_DTYPES or x.size == 0:
        return None
    n, c, h, w = x.shape
    y = cupy.empty((n, c, ho, wo), dtype=x.dtype)
    idx = cupy.empty((n, c, ho, wo), dtype=cupy.int64)
    _forward(c_contiguous(x), *_geometry(h, w, ho, wo, k, s, p, d), y, idx)
    return y, idx


def max_pool2d_backward(gy, idx, h, w, k, s, p, d):
    """(N, C, Ho, Wo) output gradient and saved indices -> dx (N, C, H, W); None to decline."""
    if gy.dtype.name not in _BACKWARD_DTYPES or gy.size == 0:
        return None
    n, c, ho, wo = gy.shape
    dx = cupy.empty((n, c, h, w), dtype=gy.dtype)
    _backward(c_contiguous(gy), c_contiguous(idx), *_geometry(h, w, ho, wo, k, s, p, d), dx)
    return dx
