"""2-D convolution on NumPy arrays by im2col and GEMMs: the CPU backend's conv2d fast path
(signatures in fast_paths.py), with the per-thread scratch buffers its columns live in.
"""
from __future__ import annotations

import math
import threading

import numpy as np


def conv2d(x, w, b, stride, padding, dilation, groups):
    """im2col through one as_strided view of the padded input, copied once into a
    (groups, K, N*Ho*Wo) column matrix, then one GEMM per group (float32 for half types).
    The columns live in a per-thread scratch buffer reused across calls: a fresh
    allocation of that size costs more in page faults than the copy itself."""
    n, cout, ho, wo = _conv_out_shape(x.shape, w.shape, stride, padding, dilation)
    ct = _conv_ct(x.dtype)
    cols = _conv_cols(x, w.shape, stride, padding, dilation, groups, ct)    # (G, K, N*L)
    y = np.matmul(w.reshape(groups, cout // groups, -1).astype(ct, copy=False), cols)
    if b is not None:                                                # (G, Cout/G, N*L)
        y += b.reshape(groups, cout // groups, 1).astype(ct, copy=False)
    return np.ascontiguousarray(y.reshape(cout, n, ho, wo).transpose(1, 0, 2, 3), dtype=x.dtype)

def conv2d_backward(g, x, w, stride, padding, dilation, groups, need_dx, need_dw,
                    need_db):
    """dW: one GEMM per group of the output gradient with the recomputed columns. dX for
    stride 1: a convolution of the output gradient with the flipped, transposed weights;
    for larger strides the column gradient (one GEMM per group, into the scratch buffer)
    is added back tap by tap through strided views of the padded input gradient."""
    n, cout, ho, wo = g.shape
    c, kh, kw = x.shape[1], w.shape[2], w.shape[3]
    ct = _conv_ct(x.dtype)
    g2 = np.ascontiguousarray(g.transpose(1, 0, 2, 3), dtype=ct).reshape(groups, cout // groups, -1)
    dx = dw = db = None
    if need_db:
        db = g.sum(axis=(0, 2, 3), dtype=ct).astype(x.dtype)
    if need_dw:
        cols = _conv_cols(x, w.shape, stride, padding, dilation, groups, ct)
        dw = np.matmul(g2, cols.transpose(0, 2, 1)).reshape(w.shape).astype(x.dtype, copy=False)
    # the convolution form reads an im2col of g: worth it unless g has many more
    # channels x pixels than the input (a first layer's C_in = 1, 3)
    if need_dx and stride == (1, 1) and cout * x.shape[2] * x.shape[3] <= 2 * c * ho * wo:
        dx = _conv2d_input_grad_stride1(g, w, padding, dilation, groups)
    elif need_dx:
        wt = w.reshape(groups, cout // groups, -1).astype(ct, copy=False).transpose(0, 2, 1)
        dcols = _scratch("cols", (groups, wt.shape[1], g2.shape[2]), ct)
        np.matmul(wt, g2, out=dcols)
        dcols = dcols.reshape(c, kh, kw, n, ho, wo)
        (pt, pb), (pl, pr) = padding
        h, wd = x.shape[2], x.shape[3]
        dxp = np.zeros((c, n, h + pt + pb, wd + pl + pr), ct)       # channel-major, as dcols
        (sh, sw), (dh, dw_) = stride, dilation
        for i in range(kh):
            for j in range(kw):
                dxp[:, :, i * dh:i * dh + (ho - 1) * sh + 1:sh,
                    j * dw_:j * dw_ + (wo - 1) * sw + 1:sw] += dcols[:, i, j]
        dx = np.ascontiguousarray(dxp[:, :, pt:pt + h, pl:pl + wd].transpose(1, 0, 2, 3),
                                  dtype=x.dtype)
    return dx, dw, db


_scratch_space = threading.local()
_SCRATCH_MAX = 256 << 20


def _scratch(name, shape, dtype):
    """A per-thread reusable buffer for temporaries that never leave a fast path (a result
    must not alias it). Grows to the largest request up to _SCRATCH_MAX and stays allocated;
    larger requests get a buffer of their own."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes > _SCRATCH_MAX:
        return np.empty(shape, dtype)
    buf = getattr(_scratch_space, name, None)
    if buf is None or buf.nbytes < nbytes:
        buf = np.empty(max(nbytes, 1), np.uint8)
        setattr(_scratch_space, name, buf)
    return buf[:nbytes].view(dtype).reshape(shape)


def _conv2d_input_grad_stride1(g, w, padding, dilation, groups):
    """dX of a stride-1 convolution = g convolved with the weights flipped in space and with
    in/out channels swapped per group, padded by dilation * (k - 1) - padding each side
    (cropped where that is negative)."""
    cout, cg, kh, kw = w.shape
    cog = cout // groups
    wf = w.reshape(groups, cog, cg, kh, kw).transpose(0, 2, 1, 3, 4)[..., ::-1, ::-1]
    wf = np.ascontiguousarray(wf).reshape(groups * cg, cog, kh, kw)
    pads = [(dilation[a] * (k - 1) - padding[a][0], dilation[a] * (k - 1) - padding[a][1])
            for a, k in ((0, kh), (1, kw))]
    crop = tuple(slice(max(-lo, 0), g.shape[2 + a] - max(-hi, 0)) for a, (lo, hi) in enumerate(pads))
    if crop != (slice(0, g.shape[2]), slice(0, g.shape[3])):
        g = np.ascontiguousarray(g[:, :, crop[0], crop[1]])
    pads = tuple((max(lo, 0), max(hi, 0)) for lo, hi in pads)
    return conv2d(g, wf, None, (1, 1), pads, dilation, groups)   # (N, C_in, H, W)


def _conv_ct(dtype):
    """Compute dtype of the conv fast path: float32 for half precision (as PyTorch's CPU
    kernels accumulate), else the input's own."""
    return np.dtype(np.float32) if dtype.kind == "f" and dtype.itemsize < 4 or \
        dtype.name == "bfloat16" else dtype


def _conv_out_shape(xs, ws, stride, padding, dilation):
    h = xs[2] + padding[0][0] + padding[0][1]
    w = xs[3] + padding[1][0] + padding[1][1]
    ho = (h - dilation[0] * (ws[2] - 1) - 1) // stride[0] + 1
    wo = (w - dilation[1] * (ws[3] - 1) - 1) // stride[1] + 1
    return xs[0], ws[0], ho, wo


def _conv_cols(x, ws, stride, padding, dilation, groups, ct):
    """The im2col matrix (groups, C/groups * kH * kW, N * Ho * Wo), rows in the weight's
    (c, i, j) order: an as_strided window view of the padded input, copied once."""
    (pt, pb), (pl, pr) = padding
    if pt or pb or pl or pr:
        n, c, h, w = x.shape
        xp = _scratch("pad", (n, c, h + pt + pb, w + pl + pr), x.dtype)
        xp.fill(0)
        xp[:, :, pt:pt + h, pl:pl + w] = x
        x = xp
    n, _, ho, wo = _conv_out_shape(x.shape, ws, stride, ((0, 0), (0, 0)), dilation)
    c, kh, kw = x.shape[1], ws[2], ws[3]
    s_n, s_c, s_h, s_w = x.strides
    win = np.lib.stride_tricks.as_strided(
        x, (c, kh, kw, n, ho, wo),
        (s_c, s_h * dilation[0], s_w * dilation[1], s_n, s_h * stride[0], s_w * stride[1]),
        writeable=False)                                             # (C, kH, kW, N, Ho, Wo)
    cols = _scratch("cols", win.shape, ct)
    np.copyto(cols, win, casting="unsafe")
    return cols.reshape(groups, (c // groups) * kh * kw, n * ho * wo)
