"""The MLP chain's GEMMs for batches of at most 64 rows (small_gemm.cu beside this file):
float32, cluster split-K, bias + activation fused in the forward, activation derivative + bias
gradient fused in the data gradient. mlp.py chooses between these and cuBLASLt by timing both
once.
"""
from __future__ import annotations

import cupy

from ..runtime.compile import variant
from ..runtime.multiprocessors import sm_count

MAX_ROWS = 64
_TILE_N, _TILE_K, _MAX_SPLIT, _MAX_STAGES = 32, 32, 8, 7   # as in small_gemm.cu
_ACTS = {None: 0, "relu": 1, "gelu_tanh": 2}
_empty = {}


def supported(x, w):
    """x (M, in) through a layer of weight w (out, in), forward and data gradient: float32,
    M <= 64, and both of w's dims within one cluster's K range (8 blocks x 7 stages x 32)."""
    return (x.dtype == cupy.float32 and w.dtype == cupy.float32 and 0 < x.shape[0] <= MAX_ROWS
            and max(w.shape) <= _MAX_SPLIT * _MAX_STAGES * _TILE_K)


def _function(split, nt, epi, act):
    options = (f"-DSPLIT={split}", f"-DB_NT={int(nt)}", f"-DEPI={epi}", f"-DACT={act}")
    return variant("matmul/small_gemm.cu", "gemm_small", options)


def _split(n, k):
    """-> (blocks per output tile, tiles, K stages). At least enough blocks that none has more
    than 7 stages; more, up to 8 (a portable cluster) and one per stage, while tiles x splits
    fit the SMs once, in powers of two: clusters of 4 and 8 pack the GPCs (measured on H100,
    784x784x64: split 4 11.9-12.3 us, 5 15.1-15.4 us, 7 14.3 us)."""
    tiles = -(-n // _TILE_N)
    stages = -(-k // _TILE_K)
    fill = 1
    while fill * 2 <= min(_MAX_SPLIT, sm_count() // tiles):
        fill *= 2
    return max(-(-stages // _MAX_STAGES), min(stages, fill)), tiles, stages


def _none():
    dev = cupy.cuda.runtime.getDevice()
    z = _empty.get(dev)
    if z is None:
        z = _empty[dev] = cupy.zeros(1, dtype=cupy.float32)
    return z


def _launch(a, w, nt, n, epi, act, vec_in=None, aux_in=None, aux_out=None, vec_out=None):
    m, k = a.shape
    out = cupy.empty((m, n), dtype=cupy.float32)
    split, tiles, stages = _split(n, k)
    per = -(-stages // split)
    z = _none()
    _function(split, nt, epi, _ACTS[act])(
        (tiles, split), (256,),
        (a, w, z if vec_in is None else vec_in, z if aux_in is None else aux_in, out,
         z if aux_out is None else aux_out, z if vec_out is None else vec_out,
         cupy.int32(m), cupy.int32(n), cupy.int32(k), cupy.int32(a.strides[0] // 4),
         cupy.int32(w.strides[0] // 4), cupy.int32(per)))
    return out


def linear_act(x, w, b, act):
    """x (M, in) @ w (out, in)^T + b, then act -> (y, aux): aux is y (ReLU), z (GELU) or None.
    b is required (zeros when the layer has none). Both operands' rows must be contiguous."""
    n = w.shape[0]
    z = cupy.empty((x.shape[0], n), dtype=cupy.float32) if act == "gelu_tanh" else None
    y = _launch(x, w, True, n, 1, act, vec_in=b, aux_out=z)
    return y, (y if act == "relu" else z)


def data_grad(dz, w, act_below=None, aux_below=None):
    """dz (M, out) @ w (out, in). With act_below, the derivative of the activation below
    (from its aux: y for ReLU, z for GELU) is applied and that layer's bias gradient (the
    column sum) is returned too: -> (dx, db or None)."""
    n = w.shape[1]
    if act_below is None:
        return _launch(dz, w, False, n, 0, None), None
    db = cupy.empty(n, dtype=cupy.float32)
    return _launch(dz, w, False, n, 2, act_below, aux_in=aux_below, vec_out=db), db
