"""Multi-tensor optimizer updates (optimizer.cu): Adam/AdamW and SGD over a whole param group
in one launch, reading lr and the step counts on the device so a captured step replays;
GradScaler's unscale of all gradients with its inf/NaN check; and the sum of squares of all
gradients that clip_grad_norm_ takes the norm of."""
from __future__ import annotations

import cupy
import numpy as np

from .... import capture
from ....memory_format import dense_order
from ..runtime import memory
from ..runtime.compile import kernel
from .chunk_list import chunk_list
from .rows import BLOCK, NULL, ticket

_tables = {}
_SLOTS = 6             # must equal SLOTS in optimizer.cu: (w, g, m, v, vmax, step)


def _table(bufs_per_tensor):
    """Device arrays (ptrs, sizes, chunk_tensor, chunk_start) for these tensors, cached by the
    addresses (stable across steps once gradients are reused, as under pg.jit); a table a
    captured graph reads lives as long as the graph."""
    key = tuple(tuple(int(b.data.ptr) if b is not None else 0 for b in bufs) for bufs in bufs_per_tensor)
    t = _tables.get(key)
    if t is None:
        ptrs = np.array(key, dtype=np.uint64).reshape(-1)
        sizes = np.array([bufs[0].size for bufs in bufs_per_tensor], dtype=np.int64)
        ct, cs = chunk_list(sizes)
        t = (memory.upload(ptrs), memory.upload(sizes), memory.upload(ct), memory.upload(cs), len(ct))
        if len(_tables) > 64:
            _tables.clear()
        _tables[key] = t
    return capture.keep(t)


def _fusable(*lists):
    """Whether the kernels can take these buffers: float32, and each tensor's buffers (one
    from each list; None for an absent one) dense and laid out alike, since the kernels walk
    flat memory: row-major, or a channels-last weight with its gradient and moments."""
    for bufs in zip(*lists):
        first = None
        for b in bufs:
            if b is None:
                continue
            if b.dtype != np.float32:
                return False
            if first is None:
                if not (b._c_contiguous or dense_order(b.shape, [s // 4 for s in b.strides])):
                    return False
                first = b
            elif b.strides != first.strides:
                return False
    return True


def _flag(found_inf):
    """GradScaler's found-inf flag as a kernel argument (a null pointer: no scaler)."""
    return NULL if found_inf is None else found_inf


def adam_step(ws, gs, ms, vs, vmaxs, steps, *, lr, beta1, beta2, eps, weight_decay,
              decoupled, amsgrad, maximize, found_inf=None):
    """All parameters of a group in one launch. steps: float32 0-d device buffers (each
    advanced by one), lr: a float64 0-d device buffer, found_inf: None or a float32 0-d device
    buffer whose nonzero value skips the update (GradScaler). Returns False (and does nothing)
    when the buffers are not what _fusable takes, so the caller composes instead."""
    if not (_fusable(ws, gs, ms, vs, vmaxs) and all(t.dtype == np.float32 for t in steps)):
        return False
    ptrs, sizes, ct, cs, nchunks = _table(list(zip(ws, gs, ms, vs, vmaxs, steps)))
    if nchunks:
        kernel("kernels/optimizer.cu", "adam_f32")((nchunks,), (BLOCK,), (
            ptrs, sizes, ct, cs, lr, np.float64(beta1), np.float64(beta2), np.float64(eps),
            np.float64(weight_decay), np.int32(decoupled), np.int32(amsgrad), np.int32(maximize),
            _flag(found_inf)))
    kernel("kernels/optimizer.cu", "advance_steps")((1,), (BLOCK,), (ptrs, np.int32(len(ws)), _flag(found_inf)))
    return True


def sgd_step(ws, gs, bufs, firsts, *, lr, momentum, dampening, weight_decay, nesterov, maximize,
             found_inf=None):
    """SGD (momentum, dampening, nesterov, weight decay) for a whole group in one launch per
    first/later-step split; lr a float64 0-d device buffer. False when it can't take these
    buffers."""
    if not _fusable(ws, gs, bufs):
        return False
    split = {}
    for i, f in enumerate(firsts):
        split.setdefault(bool(f), []).append(i)
    for first, idx in split.items():
        ptrs, sizes, ct, cs, nchunks = _table([(ws[i], gs[i], bufs[i], None, None, None) for i in idx])
        if nchunks:
            kernel("kernels/optimizer.cu", "sgd_f32")((nchunks,), (BLOCK,), (
                ptrs, sizes, ct, cs, lr, np.float32(momentum), np.float32(1 - dampening),
                np.float32(weight_decay), np.int32(nesterov), np.int32(maximize), np.int32(first),
                _flag(found_inf)))
    return True


def unscale_grads(grads, found_inf, inv_scale):
    """Every gradient times inv_scale (a float32 0-d device buffer) in place, found_inf (float32
    0-d) set to 1 if any element is inf or NaN: one launch for all. False when a gradient is
    not dense float32."""
    if not _fusable(grads):
        return False
    ptrs, sizes, ct, cs, nchunks = _table([(g, None, None, None, None, None) for g in grads])
    if nchunks:
        kernel("kernels/optimizer.cu", "unscale_f32")((nchunks,), (BLOCK,), (
            ptrs, sizes, ct, cs, found_inf, inv_scale))
    return True


def sum_of_squares(bufs):
    """The sum of the squares of every element of bufs, as a float32 0-d buffer, in one launch
    (a GPT's clip_grad_norm_ otherwise launched a square and a sum per parameter, 304 kernels).
    None when a buffer is not dense float32."""
    if not _fusable(bufs):
        return None
    ptrs, sizes, ct, cs, nchunks = _table([(b, None, None, None, None, None) for b in bufs])
    if not nchunks:
        return cupy.zeros((), np.float32)
    out, partial = cupy.empty((), np.float32), cupy.empty(nchunks, np.float32)
    kernel("kernels/optimizer.cu", "sum_squares_f32")((nchunks,), (BLOCK,), (
        ptrs, sizes, ct, cs, partial, out, ticket()))
    return out
