"""Column sums of a float32 or half-type (n, c) matrix, float32 accumulation and one rounding
(column_sums.cu): the CUDA backend's reduction over the leading axes of a buffer (a Linear
layer's bias gradient), in two launches."""
from __future__ import annotations

import cupy
import numpy as np

from ..runtime.compile import kernel, whole_packs
from ..runtime.multiprocessors import sm_count

_SUFFIX = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def column_sums(x):
    """(n, c) C-contiguous float32/float16/bfloat16 -> (c,) of its dtype, or None where the
    kernel doesn't apply (another dtype, c not a whole number of 16-byte packs, an unaligned
    buffer)."""
    suffix = _SUFFIX.get(x.dtype.name)
    n, c = x.shape
    v = 16 // x.dtype.itemsize      # columns a thread: one 16-byte access
    if suffix is None or n == 0 or c % v or not x._c_contiguous or not whole_packs(x.size, v, x):
        return None
    strips = -(-c // (32 * v))
    chunks = max(1, min(-(-4 * sm_count() // strips), -(-n // 64)))     # about 4 blocks an SM
    chunk = -(-n // chunks)
    chunks = -(-n // chunk)
    partial = cupy.empty((chunks, c), np.float32)
    out = cupy.empty(c, x.dtype)
    kernel("kernels/column_sums.cu", f"column_partials_{suffix}")((strips, chunks), (32, 8), (
        x, partial, np.int64(n), np.int64(c), np.int64(chunk)))
    kernel("kernels/column_sums.cu", f"column_sums_finish_{suffix}")((-(-c // 32),), (32, 8), (
        partial, out, np.int64(c), np.int64(chunks)))
    return out
