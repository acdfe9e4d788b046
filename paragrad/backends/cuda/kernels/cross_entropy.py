"""Cross-entropy over (N, C) logits, forward and backward one kernel each
(cross_entropy.cu): the CUDA backend's cross_entropy fast paths."""
from __future__ import annotations

import cupy
import numpy as np

from ....dtypes import bfloat16
from ..runtime.compile import kernel
from .row_views import c_contiguous
from .rows import BLOCK, SUFFIX, kernel_dtype, ticket


# the logits' dtypes the kernels read as they are; others are cast to the kernel dtype first
_READ = {**SUFFIX, np.dtype(np.float16): "f16",
         **({np.dtype(bfloat16.np): "bf16"} if bfloat16.np is not None else {})}


def cross_entropy(x, target, ignore_index, mean, out_dtype=None):
    """-> (loss () in out_dtype (default x's), counted rows () in the kernel dtype, per-row
    logsumexp (N,)) for logits x (N, C): one kernel, computing in float32 for half logits. The
    caller checks the targets' bounds (ops/neural/softmax.py); a target out of bounds gives NaN."""
    kd = kernel_dtype(x)
    x2 = c_contiguous(x if x.dtype in _READ else x.astype(kd))
    t = c_contiguous(target.astype(np.int64, copy=False))
    n, c = x2.shape
    out = cupy.empty(2, dtype=kd)
    lse = cupy.empty(n, dtype=kd)
    if n:
        rows = cupy.empty((2, n), dtype=kd)
        kernel("kernels/cross_entropy.cu", f"xent_fwd_{_READ[x2.dtype]}")((n,), (BLOCK,), (
            x2, t, rows, lse, out, ticket(), np.int64(c), np.int64(ignore_index), np.int32(mean)))
    else:                   # no rows: sum 0, mean 0/0
        out[...] = cupy.array([np.nan if mean else 0.0, 0.0], dtype=kd)
    return out[0].astype(out_dtype or x.dtype, copy=False), out[1], lse


def cross_entropy_backward(x, target, lse, g, count, mean, ignore_index):
    """dx = (softmax(x) - onehot(target)) * valid * (g / max(count, 1) for a mean, else g) in
    x's dtype: one kernel; g and count are 0-d device buffers."""
    kd = kernel_dtype(x)
    x2 = c_contiguous(x if x.dtype in _READ else x.astype(kd))
    t = c_contiguous(target.astype(np.int64, copy=False))
    dx = cupy.empty_like(x2)
    if x2.shape[0]:
        kernel("kernels/cross_entropy.cu", f"xent_bwd_{_READ[x2.dtype]}")((x2.shape[0],), (BLOCK,), (
            x2, t, lse, g.astype(kd, copy=False).reshape(1), count.astype(kd, copy=False).reshape(1),
            dx, np.int64(x2.shape[1]), np.int64(ignore_index), np.int32(mean)))
    return dx.astype(x.dtype, copy=False)
