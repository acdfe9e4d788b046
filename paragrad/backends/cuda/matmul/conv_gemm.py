"""A convolution over a map of a few pixels as one dense GEMM.

Flattened, a convolution is a linear map from x (N, C*H*W) to y (N, K*Ho*Wo): y = x @ M, where
M (C*H*W, K*Ho*Wo) holds w[k, c, i, j] at row (c, r, s), column (k, p, q) whenever input pixel
(r, s) is the one tap (i, j) of output pixel (p, q) reads, and zero elsewhere. Taps that only
ever read padding never enter M. When most of M is nonzero, which happens when the map is not
much larger than the kernel, that one GEMM does less arithmetic than the convolution's own
im2col product and runs at cuBLAS's speed:

- ResNet's last stages on small images: a 3x3 conv with padding 1 on a 1x1 map (M is the
  centre tap, 512x512), on a 2x2 map (every pixel pair is some tap: M is dense), a stride-2
  3x3 conv from 2x2 to 1x1 (four taps). On an H100 at batch 256, cuDNN's best float32 plans
  for the 512-channel 1x1-map conv took 113 / 119 / 53 us (forward / data gradient / weight
  gradient), for what is a 256x512x512 product.

The backward is two GEMMs: dx = dy @ M^T, dM = x^T @ dy; dw sums each weight's entries of dM
(one per output pixel that uses it) in a fixed order, so the result is deterministic. M is
gathered from w on each call (index tables are built once per geometry, on the host). float32
only (TF32 under pg.backends.cuda.matmul.allow_tf32, as every float32 GEMM); groups 1,
dilation 1; anything else, or a sparse M, is left to cuDNN.
"""
from __future__ import annotations

import cupy
import numpy as np

from .... import capture
from . import cublas

MIN_DENSITY = 0.5           # M's nonzero fraction below which the GEMM does too much zero work
MAX_ENTRIES = 1 << 22       # table size above which the map is not "a few pixels" (16 MB each)

_gather = cupy.ElementwiseKernel("raw T w, int32 t", "T m", "m = t < 0 ? T(0) : w[t]", "pg_conv_dense_weight")
_gather_sum = cupy.ElementwiseKernel(
    "raw T dm, raw int32 t, int32 uses", "T dw",
    """T s = 0;
       for (int a = 0; a < uses; ++a) { int k = t[i * uses + a]; if (k >= 0) s += dm[k]; }
       dw = s;""",
    "pg_conv_dense_weight_grad")
_tables: dict = {}


def _taps(size, out, k, stride, pad):
    """tap[r, p]: the kernel index with which output p reads input r (-1 if none)."""
    tap = np.arange(size)[:, None] - np.arange(out)[None, :] * stride + pad     # (size, out)
    return np.where((tap >= 0) & (tap < k), tap, -1)


def _index_tables(x_shape, w_shape, stride, padding):
    """-> (t, inv) device int32 tables, or None if M would be too sparse or too large.
    t (C*H*W, K*Ho*Wo): the flat index into w of each entry of M, -1 for a zero.
    inv (K*C*kh*kw, Ho*Wo): the flat index into M of each use of each weight, -1 for none."""
    _, c, h, wd = x_shape
    k, _, kh, kw = w_shape
    (pt, pb), (pl, pr) = padding
    ho, wo = (h + pt + pb - kh) // stride[0] + 1, (wd + pl + pr - kw) // stride[1] + 1
    ti, tj = _taps(h, ho, kh, stride[0], pt), _taps(wd, wo, kw, stride[1], pl)   # (H, Ho), (W, Wo)
    density = (ti >= 0).mean() * (tj >= 0).mean()
    entries = max(h * wd, kh * kw) * c * k * ho * wo                           # M's or inv's
    if density < MIN_DENSITY or entries > MAX_ENTRIES:
        return None
    # t[c, r, s, k, p, q] = ((k*C + c)*kh + ti[r, p])*kw + tj[s, q]
    cc = np.arange(c).reshape(c, 1, 1, 1, 1, 1)
    kk = np.arange(k).reshape(1, 1, 1, k, 1, 1)
    i6, j6 = ti.reshape(1, h, 1, 1, ho, 1), tj.reshape(1, 1, wd, 1, 1, wo)
    t = np.where((i6 >= 0) & (j6 >= 0), ((kk * c + cc) * kh + i6) * kw + j6, -1)
    # inv[k, c, i, j, p, q] = ((c*H + r)*W + s) * (K*Ho*Wo) + (k*Ho + p)*Wo + q, r/s the pixel read
    r = np.arange(ho)[None, :] * stride[0] - pt + np.arange(kh)[:, None]            # (kh, Ho)
    s = np.arange(wo)[None, :] * stride[1] - pl + np.arange(kw)[:, None]            # (kw, Wo)
    r6, s6 = r.reshape(1, 1, kh, 1, ho, 1), s.reshape(1, 1, 1, kw, 1, wo)
    kk, cc = kk.reshape(k, 1, 1, 1, 1, 1), cc.reshape(1, c, 1, 1, 1, 1)
    p6, q6 = np.arange(ho).reshape(1, 1, 1, 1, ho, 1), np.arange(wo).reshape(1, 1, 1, 1, 1, wo)
    pos = ((cc * h + r6) * wd + s6) * (k * ho * wo) + (kk * ho + p6) * wo + q6
    inv = np.where((r6 >= 0) & (r6 < h) & (s6 >= 0) & (s6 < wd), pos, -1)
    return (cupy.asarray(t.reshape(c * h * wd, k * ho * wo), dtype=np.int32),
            cupy.asarray(inv.reshape(k * c * kh * kw, ho * wo), dtype=np.int32))


def _plan(x, w, stride, padding, dilation, groups):
    """The index tables for this geometry (cached), or None where cuDNN should run it."""
    if x.dtype != np.float32 or groups != 1 or tuple(dilation) != (1, 1) or x.size == 0 or w.size == 0:
        return None
    key = (x.shape[1:], w.shape, tuple(stride), padding, cupy.cuda.runtime.getDevice())
    if key not in _tables:
        if capture.active():    # (no host-to-device copy inside a capture; the eager run builds it)
            return None
        _tables[key] = _index_tables(x.shape, w.shape, stride, padding)
    return _tables[key]


def conv2d(x, w, b, stride, padding, dilation, groups):
    """-> y (N, K, Ho, Wo), or None if this geometry is cuDNN's."""
    tables = _plan(x, w, stride, padding, dilation, groups)
    if tables is None:
        return None
    m = _gather(w, tables[0])                                                  # (C*H*W, K*Ho*Wo)
    n, k = x.shape[0], w.shape[0]
    y = cublas.matmul(x.reshape(n, -1), m).reshape(n, k, -1)                    # (N, K, Ho*Wo)
    if b is not None:
        y += b[:, None]
    ho = (x.shape[2] + sum(padding[0]) - w.shape[2]) // stride[0] + 1
    return y.reshape(n, k, ho, -1)


def conv2d_backward(gy, x, w, stride, padding, dilation, groups, need_dx, need_dw):
    """-> (dx, dw) (None where not needed), or None if this geometry is cuDNN's."""
    tables = _plan(x, w, stride, padding, dilation, groups)
    if tables is None:
        return None
    n = x.shape[0]
    g2 = gy.reshape(n, -1)                                                      # (N, K*Ho*Wo)
    dx = dw = None
    if need_dx:
        dx = cublas.matmul(g2, _gather(w, tables[0]).T).reshape(x.shape)          # (N, C*H*W)
    if need_dw:
        dm = cublas.matmul(x.reshape(n, -1).T, g2)                                # (C*H*W, K*Ho*Wo)
        dw = _gather_sum(dm, tables[1], np.int32(tables[1].shape[1]), size=w.size).reshape(w.shape)
    return dx, dw
