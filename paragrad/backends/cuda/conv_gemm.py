"""A convolution whose output is one pixel per image is one GEMM over the kernel taps that land
on the input; the taps that only ever see padding contribute nothing and are skipped.

This is ResNet's last stage on small images: a 3x3 conv with padding 1 on a 1x1 map uses only
its centre tap, a stride-2 3x3 conv on a 2x2 map four taps. cuDNN runs every tap there. On an
H100 at batch 256, its best float32 plans for the 512-channel 3x3 conv on a 1x1 map took
113 / 119 / 53 us (forward / data gradient / weight gradient) for a 256x512x512 product, so the
cuDNN fast paths hand such cases here first.

Shapes: x (N, C, H, W), w (K, C, kh, kw), padding ((top, bottom), (left, right)), any stride,
dilation 1, groups 1. With a 1x1 output, tap (i, j) reads input pixel (i - top, j - left): the
taps that read real pixels form one window of w, and the pixels they read one window of x.
"""
from __future__ import annotations

import cupy

from . import gemm


def _windows(x_shape, w_shape, stride, padding, dilation, groups):
    """-> (x window, w window), each a pair of slices over the last two dims, or None when this
    isn't a one-pixel-output convolution (or no tap reads the input)."""
    _, _, h, wd = x_shape
    _, _, kh, kw = w_shape
    (pt, pb), (pl, pr) = padding
    if groups != 1 or tuple(dilation) != (1, 1) or 0 in x_shape or 0 in w_shape:
        return None
    if ((h + pt + pb - kh) // stride[0], (wd + pl + pr - kw) // stride[1]) != (0, 0):
        return None
    (i0, i1), (j0, j1) = (max(0, pt), min(kh, pt + h)), (max(0, pl), min(kw, pl + wd))
    if i0 >= i1 or j0 >= j1:
        return None
    return (slice(i0 - pt, i1 - pt), slice(j0 - pl, j1 - pl)), (slice(i0, i1), slice(j0, j1))


def _matrix(a, window):
    """a[:, :, window] (R, C, p, q) as an (R, C*p*q) matrix (a copy only if the window is part)."""
    return cupy.ascontiguousarray(a[(slice(None), slice(None)) + window]).reshape(a.shape[0], -1)


def _unmatrix(m, shape, window):
    """The adjoint of _matrix: m (R, C*p*q) placed in the window of a zero array of `shape`."""
    part = tuple(shape[:2]) + tuple(len(range(*s.indices(n))) for s, n in zip(window, shape[2:]))
    if part == tuple(shape):
        return m.reshape(shape)
    out = cupy.zeros(shape, dtype=m.dtype)
    out[(slice(None), slice(None)) + window] = m.reshape(part)
    return out


def conv2d(x, w, b, stride, padding, dilation, groups):
    """-> y (N, K, 1, 1), or None if the geometry isn't one this module takes."""
    win = _windows(x.shape, w.shape, stride, padding, dilation, groups)
    if win is None:
        return None
    y = gemm.matmul(_matrix(x, win[0]), _matrix(w, win[1]).T)                  # (N, K)
    if b is not None:
        y += b
    return y.reshape(y.shape + (1, 1))


def conv2d_backward(gy, x, w, stride, padding, dilation, groups, need_dx, need_dw):
    """-> (dx, dw) (None where not needed), or None if the geometry isn't one this module takes."""
    win = _windows(x.shape, w.shape, stride, padding, dilation, groups)
    if win is None:
        return None
    g2 = gy.reshape(gy.shape[:2])                                               # (N, K)
    dx = _unmatrix(gemm.matmul(g2, _matrix(w, win[1])), x.shape, win[0]) if need_dx else None
    dw = _unmatrix(gemm.matmul(g2.T, _matrix(x, win[0])), w.shape, win[1]) if need_dw else None
    return dx, dw
