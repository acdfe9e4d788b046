"""Channels-last (NHWC) buffers for the kernels that read that layout (cuDNN convolutions,
batch_norm, max_pool2d): a channels-last model's activations go from one to the next without
transposing copies. A buffer keeps its logical shape (N, C, H, W); only its strides differ.
Row-major kernels (elementwise, where, cat, gelu, dropout) run on a channels-last buffer's
(N, H, W, C) memory (`in_memory_order`), so their results keep its layout, as torch's do."""
from __future__ import annotations

import cupy

from ....memory_format import runs_channels_last
from ..fused_chains import flush


def as_nhwc(a):
    """a (N, C, H, W) laid out channels-last: a itself where it is, else a transposing copy."""
    if runs_channels_last(a):
        return a
    return cupy.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def empty(shape, dtype, nhwc):
    """A new (N, C, H, W) buffer, channels-last when nhwc, else row-major."""
    if not nhwc:
        return cupy.empty(shape, dtype)
    n, c, h, w = shape
    return cupy.empty((n, h, w, c), dtype).transpose(0, 3, 1, 2)


def strides(shape, nhwc):
    """A 4-D buffer's strides in elements, channels-last or row-major (what cuDNN is told)."""
    n, c, h, w = shape
    return [h * w * c, 1, w * c, c] if nhwc else [c * h * w, h * w, w, 1]


def runs_nhwc(a):
    """a is a channels-last activation (a cheap test first: most buffers are row-major)."""
    return type(a) is cupy.ndarray and a.ndim == 4 and runs_channels_last(a)


def in_memory_order(fn, op, *args):
    """An elementwise fn(op, *args) over channels-last operands, run on their (N, H, W, C)
    memory: the other operands (same shape, broadcast or scalars) transposed alike, and the
    result transposed back, so it stays channels-last and the row-major kernels take it."""
    def nhwc(v):
        if type(v) is not cupy.ndarray:
            return v
        return v.reshape((1,) * (4 - v.ndim) + v.shape).transpose(0, 2, 3, 1)

    flush()     # (a reshape above may copy an operand: what a pending chain writes is read then)

    def back(r):        # (a kernel may return several buffers, or None to decline)
        if isinstance(r, tuple):
            return tuple(map(back, r))
        return r.transpose(0, 3, 1, 2) if type(r) is cupy.ndarray and r.ndim == 4 else r
    return back(fn(op, *map(nhwc, args)))


def follows_nhwc(a, b):
    """Does a binary op's result follow b's channels-last layout: b runs channels-last and a
    is a number or broadcasts into b (a (C, 1, 1) bias), so that b's strides decide (torch's
    rule: the first operand's strides decide unless it is broadcast)."""
    return runs_nhwc(b) and (type(a) is not cupy.ndarray or (a.ndim <= 4 and a.size < b.size))
