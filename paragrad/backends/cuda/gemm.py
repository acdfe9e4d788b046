"""Matrix products through cuBLAS (nvmath-python's bindings), which, unlike CuPy's matmul,
may be called while a stream is being captured into a CUDA graph.

cuBLAS is column-major: a row-major (m, k) buffer is, to it, the (k, m) transpose. So
C = A @ B (row-major) is computed as C^T = B^T @ A^T, handing B first. A transposed view
(F-ordered in its last two dims) is passed as-is with the transpose flag instead of copied.
"""
from __future__ import annotations

import cupy
import numpy as np
from nvmath.bindings import cublas

from . import matmul as flags

_R16F, _R16BF, _R32F, _R64F = 2, 14, 0, 1            # cudaDataType_t
_DTYPES = {"float16": _R16F, "bfloat16": _R16BF, "float32": _R32F, "float64": _R64F}
_ONE = {np.dtype(np.float32): np.ones((), np.float32), np.dtype(np.float64): np.ones((), np.float64)}
_ZERO = {np.dtype(np.float32): np.zeros((), np.float32), np.dtype(np.float64): np.zeros((), np.float64)}
_WORKSPACE = 32 << 20
_handles = {}


def handle():
    """One cuBLAS handle per (device, stream), with its own workspace (so that no cudaMalloc
    happens inside a captured region)."""
    dev = cupy.cuda.runtime.getDevice()
    stream = cupy.cuda.get_current_stream().ptr
    key = (dev, stream)
    h = _handles.get(key)
    if h is None:
        h = cublas.create()
        cublas.set_stream(h, stream)
        ws = cupy.empty(_WORKSPACE, dtype=cupy.uint8)
        cublas.set_workspace(h, ws.data.ptr, _WORKSPACE)
        _handles[key] = h = (h, ws)
    return h[0]


def _operand(x, batch):
    """-> (buffer, transpose flag, leading dim, batch stride) for a (..., r, c) operand."""
    r, c = x.shape[-2:]
    isz = x.itemsize
    nb = int(np.prod(x.shape[:-2], dtype=np.int64)) if x.ndim > 2 else 1
    if nb == 1:                                   # one matrix shared by the whole batch
        m = x.reshape(r, c) if x.ndim != 2 else x
        s0, s1 = m.strides
        if s1 == isz and s0 >= max(c, 1) * isz:
            return m, cublas.Operation.N, s0 // isz, 0
        if s0 == isz and s1 >= max(r, 1) * isz:
            return m, cublas.Operation.T, s1 // isz, 0
        m = cupy.ascontiguousarray(m)
        return m, cublas.Operation.N, max(c, 1), 0
    full = cupy.broadcast_to(x, batch + (r, c))
    if not full.flags.c_contiguous:
        full = cupy.ascontiguousarray(full)
    return full, cublas.Operation.N, max(c, 1), r * c


def matmul(a, b, out=None):
    """Batched a @ b for float buffers of one dtype, batch dims broadcast."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    if out is None:
        out = cupy.empty(batch + (m, n), dtype=a.dtype)
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    nbatch = int(np.prod(batch, dtype=np.int64)) if batch else 1
    A, ta, lda, sa = _operand(a, batch)
    B, tb, ldb, sb = _operand(b, batch)
    name = a.dtype.name if a.dtype.name in _DTYPES else ("bfloat16" if "bfloat16" in str(a.dtype) else None)
    if name is None:
        raise TypeError(f"matmul: cuBLAS path needs a float dtype, got {a.dtype}")
    dtype = _DTYPES[name]
    if name == "float64":
        compute, scal = cublas.ComputeType.COMPUTE_64F, np.dtype(np.float64)
    else:
        compute = (cublas.ComputeType.COMPUTE_32F_FAST_TF32 if name == "float32" and flags.allow_tf32
                   else cublas.ComputeType.COMPUTE_32F)
        scal = np.dtype(np.float32)
    cublas.gemm_strided_batched_ex(
        handle(), tb, ta, n, m, k, _ONE[scal].ctypes.data,
        B.data.ptr, dtype, ldb, sb, A.data.ptr, dtype, lda, sa,
        _ZERO[scal].ctypes.data, out.data.ptr, dtype, n, m * n, nbatch, compute, -1)
    return out
