"""softmax and log_softmax forward and backward along any axis, one kernel each
(softmax.cu): the CUDA backend's softmax fast paths."""
from __future__ import annotations

import cupy
import numpy as np

from ..runtime.compile import kernel
from .rows import BLOCK, SUFFIX, kernel_dtype, rows


def softmax(x, axis, log=False):
    kd = kernel_dtype(x)
    x2, back = rows(x.astype(kd, copy=False), axis)
    y2 = cupy.empty_like(x2)
    if x2.size:
        kernel("kernels/softmax.cu", f"softmax_fwd_{SUFFIX[kd]}")((x2.shape[0],), (BLOCK,),
                                                        (x2, y2, np.int64(x2.shape[1]), np.int32(log)))
    return back(y2).astype(x.dtype, copy=False)


def softmax_backward(y, g, axis, log=False):
    kd = kernel_dtype(y)
    y2, back = rows(y.astype(kd, copy=False), axis)
    g2, _ = rows(g.astype(kd, copy=False), axis)
    dx = cupy.empty_like(y2)
    if y2.size:
        kernel("kernels/softmax.cu", f"softmax_bwd_{SUFFIX[kd]}")((y2.shape[0],), (BLOCK,),
                                                        (y2, g2, dx, np.int64(y2.shape[1]), np.int32(log)))
    return back(dx).astype(y.dtype, copy=False)
