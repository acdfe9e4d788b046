"""The GEMMs of a narrow layer (narrow.cu beside this file): at most 16 outputs over at most 64
rows, the classifier head on top of mlp.py's chains, where cuBLASLt has only slow kernels for
rows that are not whole 16-byte packs (10 bf16 logits: 20 bytes)."""
from __future__ import annotations

import cupy
import numpy as np

from ..runtime.compile import kernel

MAX_OUT, MAX_ROWS = 16, 64                  # NMAX in narrow.cu; narrow_dw stages 64 rows of dz
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}
_NULL = np.uint64(0)


def _suffix(dtype):
    return _SUFFIX.get(dtype) or ("bf16" if dtype.name == "bfloat16" else None)


def takes(rows, w):
    """Whether rows (M) through w (out, in) run here: float32/bfloat16/float16, out <= 16,
    1 <= M <= 64, and rows of whole 16-byte packs."""
    return (_suffix(w.dtype) is not None and w.shape[0] <= MAX_OUT and 0 < rows <= MAX_ROWS
            and w.shape[1] % (16 // w.dtype.itemsize) == 0)


def _packed(a):
    """a, or a copy of it, C-contiguous and 16-byte aligned: the kernels load 16-byte packs."""
    return a if a.flags.c_contiguous and a.data.ptr % 16 == 0 else a.copy()


def forward(x, w, b):
    """x (M, in) @ w (out, in)^T + b (out,) -> (M, out)."""
    x, w = _packed(x), _packed(w)
    m, k = x.shape
    n = w.shape[0]
    y = cupy.empty((m, n), dtype=x.dtype)
    kernel("matmul/narrow.cu", f"narrow_fwd_{_suffix(x.dtype)}")(
        (m,), (256,), (x, w, b, y, np.int32(m), np.int32(n), np.int32(k)))
    return y


def data_grad(dz, w, relu_y=None):
    """dz (M, out) @ w (out, in) -> (M, in); with relu_y (M, in), the output of the ReLU below
    this layer, that ReLU's derivative applied too (0 where relu_y <= 0, as torch)."""
    w = _packed(w)
    relu_y = None if relu_y is None else _packed(relu_y)
    m, n = dz.shape
    k = w.shape[1]
    dx = cupy.empty((m, k), dtype=dz.dtype)
    threads = m * k // (16 // dz.dtype.itemsize)
    kernel("matmul/narrow.cu", f"narrow_dx_{_suffix(dz.dtype)}")(
        (-(-threads // 256),), (256,),
        (cupy.ascontiguousarray(dz), w, _NULL if relu_y is None else relu_y, dx,
         np.int32(m), np.int32(n), np.int32(k)))
    return dx


def weight_grads(x, dz):
    """-> (dw (out, in), db (out,)) of the layer with input x (M, in) and output gradient dz (M, out)."""
    x = _packed(x)
    m, k = x.shape
    n = dz.shape[1]
    dw = cupy.empty((n, k), dtype=x.dtype)
    db = cupy.empty(n, dtype=x.dtype)
    kernel("matmul/narrow.cu", f"narrow_dw_{_suffix(x.dtype)}")(
        (-(-k // 64),), (256,), (cupy.ascontiguousarray(dz), x, dw, db, np.int32(m), np.int32(n), np.int32(k)))
    return dw, db
