"""The CUDA backend's batch_norm fast path (batch_norm.cu): the forward in two launches
(statistics with the running-statistics update, then the normalization) and the backward in two
(per-channel sums, then dx), where the composite in ops/neural/batch_norm.py launches about fifteen.
Nothing here reads a device value on the host, so it all runs inside a pg.jit capture.

The input is C-contiguous (N, C, *), viewed as (N, C, HW), or a channels-last (N, C, H, W),
viewed as (N * H * W, C) (HW = 1 in the kernels' terms: no transposing copies). float16/bfloat16 inputs are read and
written in their own dtype and computed in float32 (the kernels' storage type; no float32 copies
of the activations); mean and rstd come back as (1, C, 1, ...) in the compute dtype, the
composite's layout, so either backward can read either forward's."""
from __future__ import annotations

import functools
import math

import cupy
import numpy as np

from ..runtime import memory
from ....memory_format import runs_channels_last
from ..runtime import channels_last
from ..runtime.compile import GRID_BLOCK, KERNEL_SUFFIX as _SUFFIX, grid_stride, kernel, whole_packs
from ..runtime.multiprocessors import sm_count
from .row_views import c_contiguous

_BLOCK = 256
_MIN_SHARE = 4096        # fewest elements a reduction block takes (16 a thread); fewer is overhead
_MAX_SPLITS = 1024
_LIMIT = 2 ** 31         # the kernels index with 32-bit unsigned ints (and divide below 2^31)
_MAX_C = 65535           # channels run along gridDim.y
_HALF = ("float16", "bfloat16")
_NULL = np.uint64(0)


def _kernel_dtype(x):
    """The kernels' float type for x, or None for a dtype they don't take."""
    if x.dtype.name in _HALF:
        return np.dtype(np.float32)
    return x.dtype if x.dtype.name in _SUFFIX else None


def _fits(x):
    return (_kernel_dtype(x) is not None and 0 < x.size < _LIMIT and x.ndim >= 2
            and x.shape[1] <= _MAX_C)


def _divider(d):
    """(magic, shift) with n // d == (umulhi(n, magic) + n) >> shift for 0 <= n < 2**31 and
    1 <= d < 2**31 (Granlund and Montgomery's method, as PyTorch's IntDivider): the kernels'
    channel-of-element arithmetic without a hardware divide."""
    shift = (d - 1).bit_length()                 # the least s with 2**s >= d
    magic = (1 << 32) * ((1 << shift) - d) // d + 1
    return np.uint32(magic), np.uint32(shift)


@functools.lru_cache(maxsize=256)
def _geom(c, hw):
    """The kernels' six geometry arguments: C, its divider, HW, its divider."""
    return (np.uint32(c), *_divider(c), np.uint32(hw), *_divider(hw))


def _splits(m, c):
    """Blocks per channel for a reduction over its m elements: 32 blocks per SM in all (64
    channels alone would leave most of an H100 idle; several waves of blocks keep the last,
    partial wave short), but none with fewer than _MIN_SHARE elements."""
    want = -(-32 * sm_count() // c)
    return max(1, min(want, -(-m // _MIN_SHARE), _MAX_SPLITS))


def _nhwc_partials(kind, sfx, m, c, *bufs):
    """The per-(channel, split) partial sums of a channels-last (M, C) input ('stats': of x;
    'bwd': of g and g * (x - mean)) -> (splits, partial). Where 16 bytes of channels a thread
    fit (C a multiple of V, at most 256 V): blocks of 256 threads over every channel, about 4
    an SM, each over at least 64 rows. Else blocks of 32 channels x 8 row strides; about 32
    blocks per SM in all, each over at least 64 rows."""
    arrays = bufs[:2] if kind == "bwd" else bufs[:1]
    v = 16 // arrays[0].itemsize if arrays[0].dtype.name != "float64" else 1
    if v > 1 and c % v == 0 and c <= _BLOCK * v and whole_packs(m * c, v, *arrays):
        splits = max(1, min(4 * sm_count(), -(-m // 64), _MAX_SPLITS))
        partial = cupy.empty(2 * c * splits, dtype=np.float64)
        kernel("kernels/batch_norm.cu", f"bn_nhwc_{kind}_partials_vec_{sfx}")((splits,), (_BLOCK,), (
            *bufs, partial, np.uint32(c), np.uint32(m)))
        return splits, partial
    tiles = -(-c // 32)
    splits = max(1, min(-(-32 * sm_count() // tiles), -(-m // 64), _MAX_SPLITS))
    partial = cupy.empty(2 * c * splits, dtype=np.float64)
    kernel("kernels/batch_norm.cu", f"bn_nhwc_{kind}_partials_{sfx}")((splits, tiles), (32, 8), (
        *bufs, partial, np.uint32(c), np.uint32(m)))
    return splits, partial


_tickets: dict = {}
_retired: list = []


def _tickets_for(c):
    """Per-channel last-block counters for the current device and stream, all 0 between
    launches (each reduction resets the ones it used); launches on one stream run in order, so
    they share them. An outgrown buffer is retired, never freed: a captured graph may use it."""
    key = (cupy.cuda.runtime.getDevice(), cupy.cuda.get_current_stream().ptr)
    t = _tickets.get(key)
    if t is None or t.size < c:
        if t is not None:
            _retired.append(t)
        size = max(1024, 1 << (c - 1).bit_length())
        t = _tickets[key] = memory.upload(np.zeros(size, dtype=np.uint32))  # (safe in a capture)
    return t


def _ptr(a):
    return _NULL if a is None else a


def _pack(nhwc, c, n, *arrays):
    """Elements a thread for the elementwise kernels: 16 bytes of neighbouring channels
    (bn_*_nhwc) for a channels-last input whose C and buffers allow it, else 1."""
    if not nhwc or arrays[0].dtype.name == "float64":
        return 1
    v = 16 // arrays[0].itemsize
    return v if c % v == 0 and whole_packs(n, v, *arrays) else 1


def _flat(a, kd):
    """a as a C-contiguous 1-D buffer of kd (a itself when it already is one)."""
    return None if a is None else c_contiguous(a.astype(kd, copy=False)).reshape(-1)


def _dims(x, nhwc):
    """(C, M = N * HW) and the geometry arguments. A channels-last input is (N * HW, C) in
    memory: the kernels' (N, C, HW) layout with N * HW rows of HW = 1."""
    c, hw = x.shape[1], math.prod(x.shape[2:])
    return c, x.shape[0] * hw, _geom(c, 1 if nhwc else hw)


def batch_norm(x, w, b, rm, rv, training, momentum, eps, residual=None, relu=False):
    """-> (y, mean, rstd), or None to decline. In training with rm/rv given, updates them in
    place: r = r * (1 - momentum) + stat * momentum, with the unbiased batch variance; a running
    buffer that isn't contiguous of the compute dtype is updated through a working copy. y is
    relu(normalized + residual) where asked, in the same pass."""
    if not _fits(x) or (training and x.size // x.shape[1] < 2):
        return None
    kd = _kernel_dtype(x)
    sfx = _SUFFIX[x.dtype.name]
    nhwc = runs_channels_last(x)
    c, m, geom = _dims(x, nhwc)
    xk = x if nhwc else c_contiguous(x)
    mean, rstd = cupy.empty(c, dtype=kd), cupy.empty(c, dtype=kd)
    if training:
        work = [None, None] if rm is None else [
            r if r.dtype == kd and r.flags.c_contiguous else c_contiguous(r.astype(kd))
            for r in (rm, rv)]
        scalars = (kd.type(eps), kd.type(momentum), kd.type(1.0 - momentum), kd.type(m / (m - 1)))
        if nhwc:
            splits, partial = _nhwc_partials("stats", sfx, m, c, xk)
            kernel("kernels/batch_norm.cu", f"bn_nhwc_stats_finish_{sfx}")((c,), (_BLOCK,), (
                xk, partial, np.uint32(splits), mean, rstd, _ptr(work[0]), _ptr(work[1]), np.uint32(c),
                np.uint32(m), *scalars))
        else:
            splits = _splits(m, c)
            partial = cupy.empty(2 * c * splits, dtype=np.float64)
            kernel("kernels/batch_norm.cu", f"bn_stats_{sfx}")((splits, c), (_BLOCK,), (
                xk, partial, _tickets_for(c), mean, rstd, _ptr(work[0]), _ptr(work[1]), *geom,
                np.uint32(m), *scalars))
        if rm is not None:
            for r, wk in zip((rm, rv), work):
                if wk is not r:
                    cupy.copyto(r, wk, casting="unsafe")
    else:                       # copies: the running buffers change in place later
        kernel("kernels/batch_norm.cu", f"bn_eval_stats_{sfx}")((-(-c // _BLOCK),), (_BLOCK,), (
            _flat(rm, kd), _flat(rv, kd), mean, rstd, np.uint32(c), kd.type(eps)))
    y = channels_last.empty(x.shape, x.dtype, True) if nhwc else cupy.empty_like(xk)
    if residual is not None:        # (read in x's layout and dtype)
        residual = residual.astype(x.dtype, copy=False)
        residual = channels_last.as_nhwc(residual) if nhwc else c_contiguous(residual)
    args = (xk, mean, rstd, _ptr(_flat(w, kd)), _ptr(_flat(b, kd)), _ptr(residual), np.int32(relu), y,
            np.uint32(x.size))
    v = _pack(nhwc, c, x.size, xk, y, *([] if residual is None else [residual]))
    if v > 1:
        kernel("kernels/batch_norm.cu", f"bn_apply_nhwc_{sfx}")(grid_stride(x.size // v), (GRID_BLOCK,), (
            *args, np.uint32(c)))
    else:
        kernel("kernels/batch_norm.cu", f"bn_apply_{sfx}")((-(-x.size // _BLOCK),), (_BLOCK,), (*args, *geom))
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y, mean.reshape(shape), rstd.reshape(shape)


def batch_norm_backward(g, x, w, mean, rstd, training, need_dx, need_dw, need_db):
    """-> (dx, dw, db), each None unless needed, or None to decline. Training:
    dx = w * rstd * (g - mean(g) - xhat * mean(g * xhat)); eval: dx = w * rstd * g;
    dw = sum of g * xhat, db = sum of g (per channel), in the compute dtype."""
    if not _fits(x):
        return None
    kd = _kernel_dtype(x)
    sfx = _SUFFIX[x.dtype.name]
    nhwc = runs_channels_last(x)
    c, m, geom = _dims(x, nhwc)
    xk = x if nhwc else c_contiguous(x)
    g = g.astype(x.dtype, copy=False)
    gk = channels_last.as_nhwc(g) if nhwc else c_contiguous(g)
    m1, r1 = _flat(mean, kd), _flat(rstd, kd)
    dw = cupy.empty(c, dtype=kd) if need_dw else None
    db = cupy.empty(c, dtype=kd) if need_db else None
    coef = cupy.empty(2 * c, dtype=kd) if training and need_dx else None    # (mean(g), mean(g*xhat))
    if dw is not None or db is not None or coef is not None:
        if nhwc:
            splits, partial = _nhwc_partials("bwd", sfx, m, c, gk, xk, m1)
            kernel("kernels/batch_norm.cu", f"bn_nhwc_bwd_finish_{sfx}")((c,), (_BLOCK,), (
                partial, np.uint32(splits), r1, _ptr(dw), _ptr(db), _ptr(coef), np.uint32(c), np.uint32(m)))
        else:
            splits = _splits(m, c)
            partial = cupy.empty(2 * c * splits, dtype=np.float64)
            kernel("kernels/batch_norm.cu", f"bn_bwd_reduce_{sfx}")((splits, c), (_BLOCK,), (
                gk, xk, m1, r1, partial, _tickets_for(c), _ptr(dw), _ptr(db), _ptr(coef), *geom,
                np.uint32(m)))
    dx = None
    if need_dx:
        dx = channels_last.empty(x.shape, x.dtype, True) if nhwc else cupy.empty_like(xk)
        args = (gk, xk, m1, r1, _ptr(_flat(w, kd)), _ptr(coef), dx, np.uint32(x.size))
        v = _pack(nhwc, c, x.size, gk, xk, dx)
        if v > 1:
            kernel("kernels/batch_norm.cu", f"bn_bwd_dx_nhwc_{sfx}")(grid_stride(x.size // v), (GRID_BLOCK,), (
                *args, np.uint32(c)))
        else:
            kernel("kernels/batch_norm.cu", f"bn_bwd_dx_{sfx}")((-(-x.size // _BLOCK),), (_BLOCK,), (*args, *geom))
    return dx, dw, db
