"""Channels-last (NHWC) buffers for the kernels that read that layout (cuDNN convolutions,
batch_norm, max_pool2d): a channels-last model's activations go from one to the next without
transposing copies. A buffer keeps its logical shape (N, C, H, W); only its strides differ."""
from __future__ import annotations

import cupy

from ....memory_format import runs_channels_last


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
