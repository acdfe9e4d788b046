"""The CUDA backend's fast paths: row-wise fused kernels (kernels/rows.cu) and multi-tensor
optimizer updates (kernels/optim.cu). Each returns what the op layer's composite would."""
from __future__ import annotations

import math

import cupy
import numpy as np

from ... import capture
from . import memory
from .kernels import c_contiguous, kernel

_BLOCK = 256
_CHUNK = 2048           # must equal CHUNK in kernels/optim.cu: ~8 elements a thread, enough blocks to fill the GPU
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_NULL = np.uint64(0)


def _rows(x, axis):
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


def _kernel_dtype(x):
    """The kernel's float type; float16/bfloat16 compute in float32."""
    return x.dtype if x.dtype in _SUFFIX else np.dtype(np.float32)


def softmax(x, axis, log=False):
    kd = _kernel_dtype(x)
    x2, back = _rows(x.astype(kd, copy=False), axis)
    y2 = cupy.empty_like(x2)
    if x2.size:
        kernel("rows.cu", f"softmax_fwd_{_SUFFIX[kd]}")((x2.shape[0],), (_BLOCK,),
                                                        (x2, y2, np.int64(x2.shape[1]), np.int32(log)))
    return back(y2).astype(x.dtype, copy=False)


def softmax_backward(y, g, axis, log=False):
    kd = _kernel_dtype(y)
    y2, back = _rows(y.astype(kd, copy=False), axis)
    g2, _ = _rows(g.astype(kd, copy=False), axis)
    dx = cupy.empty_like(y2)
    if y2.size:
        kernel("rows.cu", f"softmax_bwd_{_SUFFIX[kd]}")((y2.shape[0],), (_BLOCK,),
                                                        (y2, g2, dx, np.int64(y2.shape[1]), np.int32(log)))
    return back(dx).astype(y.dtype, copy=False)


_tickets = {}


def _ticket():
    """The xent_fwd kernel's last-block counter: one per device and stream (launches on one
    stream run in order; the kernel resets it to 0 when done)."""
    stream = cupy.cuda.get_current_stream()
    key = (cupy.cuda.runtime.getDevice(), stream.ptr)
    t = _tickets.get(key)
    if t is None:
        t = _tickets[key] = cupy.zeros(1, dtype=np.uint32)
    return t


def cross_entropy(x, target, ignore_index, mean):
    """-> (loss (), counted rows () in the kernel dtype, per-row logsumexp (N,)) for logits x
    (N, C): one kernel. The caller checks the targets' bounds (ops/nn.py); a target out of
    bounds gives NaN."""
    kd = _kernel_dtype(x)
    x2 = c_contiguous(x.astype(kd, copy=False))
    t = c_contiguous(target.astype(np.int64, copy=False))
    n, c = x2.shape
    out = cupy.empty(2, dtype=kd)
    lse = cupy.empty(n, dtype=kd)
    if n:
        rows = cupy.empty((2, n), dtype=kd)
        kernel("rows.cu", f"xent_fwd_{_SUFFIX[kd]}")((n,), (_BLOCK,), (
            x2, t, rows, lse, out, _ticket(), np.int64(c), np.int64(ignore_index), np.int32(mean)))
    else:                   # no rows: sum 0, mean 0/0
        out[...] = cupy.array([np.nan if mean else 0.0, 0.0], dtype=kd)
    return out[0].astype(x.dtype, copy=False), out[1], lse


def cross_entropy_backward(x, target, lse, g, count, mean, ignore_index):
    """dx = (softmax(x) - onehot(target)) * valid * (g / max(count, 1) for a mean, else g):
    one kernel; g and count are 0-d device buffers."""
    kd = _kernel_dtype(x)
    x2 = c_contiguous(x.astype(kd, copy=False))
    t = c_contiguous(target.astype(np.int64, copy=False))
    dx = cupy.empty_like(x2)
    if x2.shape[0]:
        kernel("rows.cu", f"xent_bwd_{_SUFFIX[kd]}")((x2.shape[0],), (_BLOCK,), (
            x2, t, lse, g.astype(kd, copy=False).reshape(1), count.astype(kd, copy=False).reshape(1),
            dx, np.int64(x2.shape[1]), np.int64(ignore_index), np.int32(mean)))
    return dx.astype(x.dtype, copy=False)


def layer_norm(x, w, b, n_norm_dims, eps):
    kd = _kernel_dtype(x)
    cols = math.prod(x.shape[x.ndim - n_norm_dims:])
    x2 = c_contiguous(x.astype(kd, copy=False)).reshape(-1, cols)
    rows = x2.shape[0]
    y = cupy.empty_like(x2)
    mean = cupy.empty(rows, dtype=kd)
    rstd = cupy.empty(rows, dtype=kd)
    wk = c_contiguous(w.astype(kd, copy=False)).reshape(-1) if w is not None else None
    bk = c_contiguous(b.astype(kd, copy=False)).reshape(-1) if b is not None else None
    if rows:
        kernel("rows.cu", f"ln_fwd_{_SUFFIX[kd]}")((rows,), (_BLOCK,), (
            x2, wk if wk is not None else _NULL, bk if bk is not None else _NULL, y, mean, rstd,
            np.int64(cols), kd.type(eps)))
    lead = x.shape[:x.ndim - n_norm_dims] + (1,) * n_norm_dims
    return y.reshape(x.shape).astype(x.dtype, copy=False), mean.reshape(lead), rstd.reshape(lead)


def layer_norm_backward(g, x, w, mean, rstd, n_norm_dims, need_dw, need_db):
    kd = _kernel_dtype(x)
    cols = math.prod(x.shape[x.ndim - n_norm_dims:])
    x2 = c_contiguous(x.astype(kd, copy=False)).reshape(-1, cols)        # (rows, cols)
    g2 = c_contiguous(g.astype(kd, copy=False)).reshape(-1, cols)
    rows = x2.shape[0]
    wk = c_contiguous(w.astype(kd, copy=False)).reshape(-1) if w is not None else None
    m1, r1 = mean.astype(kd, copy=False).reshape(-1), rstd.astype(kd, copy=False).reshape(-1)
    dx = cupy.empty_like(x2)
    if rows:
        kernel("rows.cu", f"ln_bwd_{_SUFFIX[kd]}")((rows,), (_BLOCK,), (
            g2, x2, wk if wk is not None else _NULL, m1, r1, dx, np.int64(cols)))
    norm_shape = x.shape[x.ndim - n_norm_dims:]
    dw = db = None
    if need_dw or need_db:
        dw, db = _layer_norm_params_backward(g2, x2, m1, r1, kd)
        dw, db = dw.reshape(norm_shape).astype(x.dtype, copy=False), db.reshape(norm_shape).astype(x.dtype, copy=False)
    return dx.reshape(x.shape).astype(x.dtype, copy=False), (dw if need_dw else None), (db if need_db else None)


_PARAM_BLOCKS = 264     # about two blocks per SM of an H100: chunks of rows until the grid has that many


def _layer_norm_params_backward(g2, x2, m1, r1, kd):
    """(dw, db) (cols,): the column sums of g * xhat and of g over (rows, cols), one launch."""
    rows, cols = x2.shape
    dw, db = cupy.empty(cols, kd), cupy.empty(cols, kd)
    if not rows:
        dw.fill(0)
        db.fill(0)
        return dw, db
    strips = (cols + 31) // 32
    chunks = max(1, min((rows + 31) // 32, _PARAM_BLOCKS // strips))
    chunk = (rows + chunks - 1) // chunks
    chunks = (rows + chunk - 1) // chunk
    part = cupy.empty((2, chunks, cols), kd) if chunks > 1 else _NULL
    kernel("rows.cu", f"ln_bwd_params_{_SUFFIX[kd]}")((strips, chunks), (32, 8), (
        g2, x2, m1, r1, part, dw, db, _ticket(), np.int64(rows), np.int64(cols), np.int64(chunk)))
    return dw, db


# ---- multi-tensor optimizer updates ------------------------------------------------------------
_tables = {}
_SLOTS = 6             # must equal SLOTS in kernels/optim.cu: (w, g, m, v, vmax, step)


def _table(bufs_per_tensor):
    """Device arrays (ptrs, sizes, chunk_tensor, chunk_start) for these tensors, cached by the
    addresses (stable across steps once gradients are reused, as under pg.jit); a table a
    captured graph reads lives as long as the graph."""
    key = tuple(tuple(int(b.data.ptr) if b is not None else 0 for b in bufs) for bufs in bufs_per_tensor)
    t = _tables.get(key)
    if t is None:
        ptrs = np.array(key, dtype=np.uint64).reshape(-1)
        sizes = np.array([bufs[0].size for bufs in bufs_per_tensor], dtype=np.int64)
        ct, cs = [], []
        for i, n in enumerate(sizes):
            for s in range(0, int(n), _CHUNK):
                ct.append(i)
                cs.append(s)
        t = (memory.upload(ptrs), memory.upload(sizes), memory.upload(np.array(ct, np.int32)),
             memory.upload(np.array(cs, np.int64)), len(ct))
        if len(_tables) > 64:
            _tables.clear()
        _tables[key] = t
    return capture.keep(t)


def _fusable(*lists):
    return all(b is None or (b.dtype == np.float32 and b.flags.c_contiguous) for bufs in lists for b in bufs)


def adam_step(ws, gs, ms, vs, vmaxs, steps, *, lr, beta1, beta2, eps, weight_decay,
              decoupled, amsgrad, maximize):
    """All parameters of a group in one launch. steps: float32 0-d device buffers (each
    advanced by one), lr: a float64 0-d device buffer. Returns False (and does nothing) when a
    buffer is not contiguous float32, so the caller composes instead."""
    if not _fusable(ws, gs, ms, vs, vmaxs, steps):
        return False
    ptrs, sizes, ct, cs, nchunks = _table(list(zip(ws, gs, ms, vs, vmaxs, steps)))
    if nchunks:
        kernel("optim.cu", "adam_f32")((nchunks,), (_BLOCK,), (
            ptrs, sizes, ct, cs, np.int32(len(ws)), lr, np.float64(beta1), np.float64(beta2),
            np.float64(eps), np.float64(weight_decay), np.int32(decoupled), np.int32(amsgrad),
            np.int32(maximize), _ticket()))
    return True


def sgd_step(ws, gs, bufs, firsts, *, lr, momentum, dampening, weight_decay, nesterov, maximize):
    """SGD (momentum, dampening, nesterov, weight decay) for a whole group in one launch per
    first/later-step split; lr a float64 0-d device buffer. False when it can't take these
    buffers."""
    if not _fusable(ws, gs, [b for b in bufs if b is not None]):
        return False
    split = {}
    for i, f in enumerate(firsts):
        split.setdefault(bool(f), []).append(i)
    for first, idx in split.items():
        ptrs, sizes, ct, cs, nchunks = _table([(ws[i], gs[i], bufs[i], None, None, None) for i in idx])
        if nchunks:
            kernel("optim.cu", "sgd_f32")((nchunks,), (_BLOCK,), (
                ptrs, sizes, ct, cs, lr, np.float32(momentum), np.float32(1 - dampening),
                np.float32(weight_decay), np.int32(nesterov), np.int32(maximize), np.int32(first)))
    return True
