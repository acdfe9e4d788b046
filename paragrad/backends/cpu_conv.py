"""2-D convolution on NumPy arrays by im2col and GEMMs: the CPU backend's conv2d fast path
(signatures in fast_paths.py), with the per-thread scratch buffers its columns live in.

Layouts follow torch's CPU convolution: x and w come with any strides; the output and the
input gradient lie channels-last when x or w runs channels-last (runs_channels_last), else
row-major, and the weight gradient lies as w does. (torch also reads the strides of size-1
dims where a tensor is both row-major and channels-last; NumPy does not keep those, so such a
tensor counts as row-major here.) An ungrouped conv over many channels builds its columns one
row per output pixel, so its GEMM gives (N*Ho*Wo, C_out): the channels-last output as it is,
copied once into place for row-major; it reads a channels-last output gradient as a view.
"""
from __future__ import annotations

import math
import threading

import numpy as np

from ..memory_format import runs_channels_last


def conv2d(x, w, b, stride, padding, dilation, groups):
    """im2col through one as_strided view of the padded input, copied once, then GEMMs
    (float32 for half types). With many channels (_by_pixel) the columns are one row per
    output pixel, (N*Ho*Wo, K), and one GEMM gives the output channels-last; otherwise
    (G, K, N*Ho*Wo) and one GEMM per group. The columns live in a per-thread scratch buffer
    reused across calls: a fresh allocation of that size costs more in page faults than the
    copy itself."""
    n, cout, ho, wo = _conv_out_shape(x.shape, w.shape, stride, padding, dilation)
    ct = _conv_ct(x.dtype)
    cl = _wants_channels_last(x, w)
    if _by_pixel(x.shape, groups):
        rows = _conv_rows(x, w.shape, stride, padding, dilation, ct)         # (N*L, K)
        y = np.matmul(rows, _weight_rows(w, ct).T)                           # (N*L, Cout)
        if b is not None:
            y += b.astype(ct, copy=False)
        return _from_pixel_major(y.reshape(n, ho, wo, cout), x.dtype, cl)
    cols = _conv_cols(x, w.shape, stride, padding, dilation, groups, ct)    # (G, K, N*L)
    w3 = w.reshape(groups, cout // groups, -1).astype(ct, copy=False)
    y = np.matmul(w3, cols)                                          # (G, Cout/G, N*L)
    if b is not None:
        y += b.reshape(groups, cout // groups, 1).astype(ct, copy=False)
    return _from_channel_major(y.reshape(cout, n, ho, wo), x.dtype, cl)


def _wants_channels_last(x, w):
    return runs_channels_last(x) or runs_channels_last(w)


BY_PIXEL = None     # True / False: every ungrouped conv by pixel / channel-major (the tests' switch)


def _by_pixel(shape, groups):
    """Whether the columns go one row per output pixel (_conv_rows), whose windows copy in
    runs of whole pixels' channels, rather than channel-major, which copies runs of Wo. Chosen
    where it measured faster (forward + backward, batch 64, 2-core CPU): an ungrouped conv over
    at least 16 channels on at most 16x16 pixels, 1.1-1.7x (64 x 64 channels on 7x7 pixels:
    6.7 ms against 10.1; the column copy alone 0.15 ms against 1.5). Not on 1 pixel (10.8 ms
    against 14.0 for 512 channels: the GEMMs' shapes), on large images (64 channels on 32x32:
    170 ms against 163) or few channels (a first layer's 1 or 3)."""
    if groups != 1:
        return False
    if BY_PIXEL is not None:
        return BY_PIXEL
    return shape[1] >= 16 and 1 < shape[2] * shape[3] <= 256


def _from_pixel_major(y, dtype, channels_last):
    """A (N, H, W, C) array as a dense (N, C, H, W) one of dtype: in memory (N, H, W, C)
    when channels_last (no copy when y is already dense and of dtype), else row-major."""
    if channels_last:
        return np.ascontiguousarray(y, dtype=dtype).transpose(0, 3, 1, 2)
    return np.ascontiguousarray(y.transpose(0, 3, 1, 2), dtype=dtype)


def _weight_rows(w, ct):
    """The weights as (Cout, kH*kW*C), columns in _conv_rows' (i, j, c) order."""
    return w.transpose(0, 2, 3, 1).reshape(w.shape[0], -1).astype(ct, copy=False)


def _from_channel_major(y, dtype, channels_last):
    """A (C, N, H, W) array as a new (N, C, H, W) one of dtype, in memory (N, H, W, C) when
    channels_last, else row-major: one copy either way."""
    if channels_last:
        return np.ascontiguousarray(y.transpose(1, 2, 3, 0), dtype=dtype).transpose(0, 3, 1, 2)
    return np.ascontiguousarray(y.transpose(1, 0, 2, 3), dtype=dtype)

def conv2d_backward(g, x, w, stride, padding, dilation, groups, need_dx, need_dw,
                    need_db):
    """dW: one GEMM per group of the output gradient with the recomputed columns; dX:
    input_grad."""
    cout = g.shape[1]
    c, kh, kw = x.shape[1], w.shape[2], w.shape[3]
    ct = _conv_ct(x.dtype)
    g2 = _grad_rows(g, groups, ct)
    dx = dw = db = None
    if need_db:     # float64 sums: the same rounded result from either layout's order
        acc = np.float64 if ct == np.float32 else ct
        db = g2.sum(axis=2, dtype=acc).reshape(cout).astype(x.dtype)
    if need_dw and _by_pixel(x.shape, groups):  # (Cout, N*L) @ (N*L, K): (Cout, kH, kW, C), w channels-last
        rows = _conv_rows(x, w.shape, stride, padding, dilation, ct)
        dw = np.matmul(g2[0], rows).reshape(cout, kh, kw, c).astype(x.dtype, copy=False).transpose(0, 3, 1, 2)
        if not runs_channels_last(w):   # a leaf's gradient lies as the leaf (torch's rule)
            dw = np.ascontiguousarray(dw)
    elif need_dw:
        cols = _conv_cols(x, w.shape, stride, padding, dilation, groups, ct)
        dw = np.matmul(g2, cols.transpose(0, 2, 1)).reshape(w.shape).astype(x.dtype, copy=False)
        if runs_channels_last(w):
            dw = np.ascontiguousarray(dw.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    if need_dx:
        dx = input_grad(g, w, x.shape, x.dtype, stride, padding, dilation, groups, _wants_channels_last(x, w), g2)
    return dx, dw, db


def conv_transpose2d(x, w, stride, padding, dilation, groups, out_hw):
    """conv_transpose2d of x (N, C_in, H, W) with w (C_in, C_out/groups, kH, kW): conv2d's
    input gradient for output gradient x, to an input of size out_hw (no zero insertion)."""
    shape = (x.shape[0], w.shape[1] * groups) + tuple(out_hw)
    return input_grad(x, w, shape, x.dtype, stride, padding, dilation, groups, _wants_channels_last(x, w))


def input_grad(g, w, xshape, dtype, stride, padding, dilation, groups, channels_last, g2=None):
    """dX of a conv2d of an input of shape xshape (and dtype) with weight w, from the output
    gradient g (N, Cout, Ho, Wo); g2 (G, Cout/G, N*Ho*Wo), _grad_rows', if the caller has it.
    Stride 1: a convolution of g with the flipped, transposed weights (unless g has many
    more channels x pixels than the input: a first layer's C_in = 1, 3); otherwise the column
    gradient (one GEMM per group, into the scratch buffer) added back tap by tap through
    strided views of the padded input gradient."""
    n, cout, ho, wo = g.shape
    c, kh, kw = xshape[1], w.shape[2], w.shape[3]
    ct = _conv_ct(dtype)
    if stride == (1, 1) and cout * xshape[2] * xshape[3] <= 2 * c * ho * wo:
        return _conv2d_input_grad_stride1(g, w, padding, dilation, groups, channels_last)
    g2 = _grad_rows(g, groups, ct) if g2 is None else g2
    if _by_pixel(xshape, groups):
        return _input_grad_by_pixel(g2[0], w, xshape, stride, padding, dilation, ct, dtype, channels_last)
    wt = w.reshape(groups, cout // groups, -1).astype(ct, copy=False).transpose(0, 2, 1)
    dcols = _scratch("cols", (groups, wt.shape[1], g2.shape[2]), ct)
    np.matmul(wt, g2, out=dcols)
    dcols = dcols.reshape(c, kh, kw, n, ho, wo)
    (pt, pb), (pl, pr) = padding
    h, wd = xshape[2], xshape[3]
    dxp = np.zeros((c, n, h + pt + pb, wd + pl + pr), ct)       # channel-major, as dcols
    (sh, sw), (dh, dw) = stride, dilation
    for i in range(kh):
        for j in range(kw):
            dxp[:, :, i * dh:i * dh + (ho - 1) * sh + 1:sh, j * dw:j * dw + (wo - 1) * sw + 1:sw] += dcols[:, i, j]
    return _from_channel_major(dxp[:, :, pt:pt + h, pl:pl + wd], dtype, channels_last)


def _grad_rows(g, groups, ct):
    """The output gradient (N, Cout, Ho, Wo) as (G, Cout/G, N*Ho*Wo): a view of a channels-last
    g of the compute dtype, else one copy."""
    n, cout = g.shape[:2]
    if runs_channels_last(g) and g.dtype == ct:
        return g.transpose(0, 2, 3, 1).reshape(-1, groups, cout // groups).transpose(1, 2, 0)
    return np.ascontiguousarray(g.transpose(1, 0, 2, 3), dtype=ct).reshape(groups, cout // groups, -1)


def _input_grad_by_pixel(g2, w, xshape, stride, padding, dilation, ct, dtype, channels_last):
    """dX through the column gradient one row per output pixel, (N*L, Cout) @ (Cout, K),
    added back tap by tap into a channels-last padded input gradient (runs of whole
    pixels' channels, as _conv_rows reads them). g2: (Cout, N*L)."""
    n, c, h, wd = xshape
    kh, kw = w.shape[2], w.shape[3]
    (pt, pb), (pl, pr) = padding
    (sh, sw), (dh, dw) = stride, dilation
    ho, wo = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1, (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    dcols = _scratch("cols", (n * ho * wo, kh * kw * c), ct)
    np.matmul(g2.T, _weight_rows(w, ct), out=dcols)
    dcols = dcols.reshape(n, ho, wo, kh, kw, c)
    dxp = np.zeros((n, h + pt + pb, wd + pl + pr, c), ct)
    for i in range(kh):
        for j in range(kw):
            dxp[:, i * dh:i * dh + (ho - 1) * sh + 1:sh, j * dw:j * dw + (wo - 1) * sw + 1:sw] += dcols[:, :, :, i, j]
    return _from_pixel_major(dxp[:, pt:pt + h, pl:pl + wd], dtype, channels_last)


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


def _conv2d_input_grad_stride1(g, w, padding, dilation, groups, channels_last):
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
    dx = conv2d(g, wf, None, (1, 1), pads, dilation, groups)     # (N, C_in, H, W)
    if channels_last != runs_channels_last(dx):        # (g's layout chose dx's)
        order = (0, 2, 3, 1) if channels_last else (0, 1, 2, 3)
        dx = np.ascontiguousarray(dx.transpose(order)).transpose(np.argsort(order))
    return dx


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


def _conv_rows(x, ws, stride, padding, dilation, ct):
    """The im2col matrix one row per output pixel, (N * Ho * Wo, kH * kW * C), columns in
    (i, j, c) order: x laid out channels-last with its padding in a scratch buffer, then an
    as_strided window view of it copied once."""
    (pt, pb), (pl, pr) = padding
    n, c, h, w = x.shape
    xp = _scratch("pad", (n, h + pt + pb, w + pl + pr, c), x.dtype)
    if pt or pb or pl or pr:
        xp.fill(0)
    xp[:, pt:pt + h, pl:pl + w] = x.transpose(0, 2, 3, 1)
    _, _, ho, wo = _conv_out_shape(x.shape, ws, stride, padding, dilation)
    kh, kw = ws[2], ws[3]
    s_n, s_h, s_w, s_c = xp.strides
    win = np.lib.stride_tricks.as_strided(
        xp, (n, ho, wo, kh, kw, c),
        (s_n, s_h * stride[0], s_w * stride[1], s_h * dilation[0], s_w * dilation[1], s_c),
        writeable=False)                                             # (N, Ho, Wo, kH, kW, C)
    rows = _scratch("cols", win.shape, ct)
    np.copyto(rows, win, casting="unsafe")
    return rows.reshape(n * ho * wo, kh * kw * c)


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
