"""Matrix products through cuBLAS (nvmath-python's bindings), which, unlike CuPy's matmul,
may be called while a stream is being captured into a CUDA graph.

cuBLAS is column-major: a row-major (m, k) buffer is, to it, the (k, m) transpose. So
C = A @ B (row-major) is computed as C^T = B^T @ A^T, handing B first. A transposed view
(F-ordered in its last two dims) is passed as-is with the transpose flag instead of copied.
"""
from __future__ import annotations

import math

import cupy
import numpy as np
from nvmath.bindings import cublas

from .. import matmul as flags     # (this package: its allow_tf32 switch)

_R16F, _R16BF, _R32F, _R64F = 2, 14, 0, 1            # cudaDataType_t
_DTYPES = {"float16": _R16F, "bfloat16": _R16BF, "float32": _R32F, "float64": _R64F}
# alpha = 1 and beta = 0 in host memory, per scalar dtype: (the arrays, kept alive; their addresses)
_SCALARS = {t: (np.ones((), t), np.zeros((), t)) for t in (np.float32, np.float64)}
_ONE = {np.dtype(t): one.ctypes.data for t, (one, _) in _SCALARS.items()}
_ZERO = {np.dtype(t): zero.ctypes.data for t, (_, zero) in _SCALARS.items()}
_N, _T = cublas.Operation.N, cublas.Operation.T
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
    if x.ndim == 2 or math.prod(x.shape[:-2]) == 1:     # one matrix shared by the whole batch
        m = x.reshape(r, c) if x.ndim != 2 else x
        s0, s1 = m.strides
        if s1 == isz and s0 >= max(c, 1) * isz:
            return m, _N, s0 // isz, 0
        if s0 == isz and s1 >= max(r, 1) * isz:
            return m, _T, s1 // isz, 0
        m = cupy.ascontiguousarray(m)
        return m, _N, max(c, 1), 0
    full = x if x.shape[:-2] == batch else cupy.broadcast_to(x, batch + (r, c))
    if not full.flags.c_contiguous:
        full = cupy.ascontiguousarray(full)
    return full, _N, max(c, 1), r * c


_compute_types = {}


def _compute_type(dtype, tf32):
    """-> (cudaDataType, cublasComputeType, scalar dtype) for a buffer dtype (cached: this runs
    on every GEMM)."""
    key = (dtype, tf32)
    known = _compute_types.get(key)
    if known is None:
        known = _compute_types[key] = _resolve_compute_type(dtype, tf32)
    return known


def _resolve_compute_type(dtype, tf32):
    name = dtype.name if dtype.name in _DTYPES else ("bfloat16" if "bfloat16" in str(dtype) else None)
    if name is None:
        raise TypeError(f"matmul: cuBLAS path needs a float dtype, got {dtype}")
    if name == "float64":
        return _DTYPES[name], cublas.ComputeType.COMPUTE_64F, np.dtype(np.float64)
    tf32 = name == "float32" and tf32
    return (_DTYPES[name], cublas.ComputeType.COMPUTE_32F_FAST_TF32 if tf32 else cublas.ComputeType.COMPUTE_32F,
            np.dtype(np.float32))


def matmul(a, b, out=None, tf32=None):
    """Batched a @ b for float buffers of one dtype, batch dims broadcast. float32 products
    use TF32 tensor cores when `tf32` says so (None: pg.backends.cuda.matmul.allow_tf32)."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if b.ndim == 2 and a.ndim > 2 and a.flags.c_contiguous and (out is None or out.flags.c_contiguous):
        # (..., m, k) @ (k, n): one GEMM with the batch folded into M (no batched call)
        lead = a.shape[:-1]
        rows = math.prod(lead)
        flat = matmul(a.reshape(rows, k), b, None if out is None else out.reshape(rows, n), tf32)
        return flat.reshape(lead + (n,)) if out is None else out
    batch = a.shape[:-2] if a.shape[:-2] == b.shape[:-2] else tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    if out is None:
        out = cupy.ndarray(batch + (m, n), a.dtype)
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    A, ta, lda, sa = _operand(a, batch)
    B, tb, ldb, sb = _operand(b, batch)
    dtype, compute, scal = _compute_type(a.dtype, flags.allow_tf32 if tf32 is None else tf32)
    cublas.gemm_strided_batched_ex(
        handle(), tb, ta, n, m, k, _ONE[scal],
        B.data.ptr, dtype, ldb, sb, A.data.ptr, dtype, lda, sa,
        _ZERO[scal], out.data.ptr, dtype, n, m * n, math.prod(batch), compute, -1)
    return out


_ones = {}


def column_sums(x):
    """(n, c) float -> (c,): x summed over its rows as a product with a ones vector, in full
    float32 (never TF32; float16/bfloat16 accumulate in float32 and round once). One cuBLAS call costs the host a fraction of a CuPy
    reduction's launch, and a Linear layer's bias gradient is this sum on every step."""
    n = x.shape[0]
    key = (n, x.dtype, cupy.cuda.runtime.getDevice())
    ones = _ones.get(key)
    if ones is None:
        ones = _ones[key] = cupy.ones((1, n), dtype=x.dtype)
    return matmul(ones, x, tf32=False).reshape(x.shape[1])
