"""What the row-wise fused kernels share: a tensor as a contiguous (rows, cols) matrix, the
kernel's float type, and the last-block ticket counter (softmax, cross_entropy, layer_norm,
optimizer)."""
from __future__ import annotations

import math

import cupy
import numpy as np

from .row_views import c_contiguous

BLOCK = 256
SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
NULL = np.uint64(0)


def rows(x, axis):
    """x as a contiguous (rows, cols) matrix with `axis` last, and how to undo that."""
    if x.ndim == 0:
        return x.reshape(1, 1), lambda y2: y2.reshape(())
    moved = axis != x.ndim - 1
    if moved:
        x = cupy.moveaxis(x, axis, -1)
    shape = x.shape
    x2 = c_contiguous(x).reshape(math.prod(shape[:-1]), shape[-1])

    def back(y2):
        y = y2.reshape(shape)
        return c_contiguous(cupy.moveaxis(y, -1, axis)) if moved else y
    return x2, back


def kernel_dtype(x):
    """The kernel's float type; float16/bfloat16 compute in float32."""
    return x.dtype if x.dtype in SUFFIX else np.dtype(np.float32)


_tickets = {}


def ticket():
    """The counter of the kernels that finish in their last block (last_block.cuh: xent_fwd,
    ln_bwd_params, sum_squares_f32): one per device and stream (launches on one stream run in
    order; the last block resets it to 0)."""
    stream = cupy.cuda.get_current_stream()
    key = (cupy.cuda.runtime.getDevice(), stream.ptr)
    t = _tickets.get(key)
    if t is None:
        t = _tickets[key] = cupy.zeros(1, dtype=np.uint32)
    return t
