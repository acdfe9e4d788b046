"""A chain of Linear layers as one op (the `mlp` fast path): each layer's activation derivative
and bias gradient fused into the epilogue of the GEMM above it, the weight gradients on a side
stream, and per chain geometry a timed choice between cuBLASLt's GEMMs (cublaslt.py) and
small_gemm's for batches of at most 64 rows. A narrow top layer (a classifier head of at most
16 outputs) over at most 64 rows runs narrow.py's kernels.
"""
from __future__ import annotations

from typing import NamedTuple

import cupy

from nvmath.linalg.advanced import MatmulEpilog as E

from .... import capture
from ..runtime import machine_cache, timing
from ..kernels.row_views import c_contiguous
from . import cublas, narrow, small_gemm
from .cublaslt import gelu_tanh_grad, owned, relu_grad, run, supported, zeros


# per activation: the forward epilogue, its aux output's name, the backward epilogue that reads it
_CHAIN = {"relu": (E.RELU_AUX_BIAS, "relu_aux", E.DRELU),
          "gelu_tanh": (E.GELU_AUX_BIAS, "gelu_aux", E.DGELU)}


def mlp(x, layers):
    """A chain of Linear layers, each followed by ReLU, GELU (tanh) or nothing: layers =
    [(w, b, act)], act in (None, "relu", "gelu_tanh"). -> (y, saved) where saved holds each
    layer's input and its activation aux (RELU_AUX_BIAS bitmask, GELU_AUX_BIAS pre-activation,
    both padded by cuBLASLt and kept whole), the inputs of the backward's DRELU/DGELU
    epilogue; for the top layer, whose activation's derivative is elementwise, its output
    (relu) or pre-activation (gelu) as an (N, out) view. None (decline) for unsupported
    dtypes, and for a GELU layer feeding a layer of one output (cuBLASLt has no DGELU GEMM
    with K = 1). Batches of at most 64 rows may run small_gemm's kernels instead (same
    epilogues, y / z as the aux), when timing says they are faster for this chain."""
    if not supported(x) or any(a == "gelu_tanh" and w.shape[0] == 1 for (_, _, a), (w, _, _)
                               in zip(layers, layers[1:])):
        return None
    h = c_contiguous(x).reshape(-1, x.shape[-1])
    small, narrow_top = _small_chain(h, layers), _narrow_top(h, layers)
    h, saved = (_forward_small if small else _forward_lt)(h, layers, narrow_top)
    return h.reshape(x.shape[:-1] + (h.shape[-1],)), _Saved(small, narrow_top, saved)


class _Saved(NamedTuple):
    """What mlp() keeps for mlp_backward: which GEMMs ran (small_gemm's or cuBLASLt's, whose
    activation aux formats differ; narrow.py's for the top layer or not) and per layer (its
    input, its activation aux)."""
    small: bool
    narrow_top: bool
    layers: list


def _narrow_top(h, layers):
    """Whether the top layer runs narrow.py's kernels: no activation of its own, and a ReLU or
    nothing below it (its data gradient applies the ReLU's derivative from its input)."""
    w, _, act = layers[-1]
    return (act is None and narrow.takes(h.shape[0], w)
            and (len(layers) == 1 or layers[-2][2] in (None, "relu")))


def _bias(w, b, dtype):
    return b if b is not None else zeros(w.shape[0], dtype)


def _forward_small(h, layers, narrow_top):
    saved = []
    for i, (w, b, act) in enumerate(layers):
        if narrow_top and i == len(layers) - 1:
            y, aux = narrow.forward(h, w, _bias(w, b, h.dtype)), None
        else:
            y, aux = small_gemm.linear_act(h, w, _bias(w, b, h.dtype), act)
        saved.append((h, aux))
        h = y
    return h, saved


def _forward_lt(h, layers, narrow_top):
    saved = []
    for i, (w, b, act) in enumerate(layers):
        bias = {"bias": _bias(w, b, h.dtype)}
        top = i == len(layers) - 1
        below_narrow = narrow_top and i == len(layers) - 2
        if narrow_top and top:
            r, aux = narrow.forward(h, w, bias["bias"]).T, None
        elif act is None:
            r, aux = run(E.BIAS, w, h.T, bias), None
        elif (top or below_narrow) and act == "relu":     # no cuBLASLt GEMM above to fuse dReLU into: keep y
            r = run(E.RELU_BIAS, w, h.T, bias)
            aux = r.T
        else:
            epilog, name, _ = _CHAIN[act]
            r, extra = run(epilog, w, h.T, bias)
            aux = extra[name][:w.shape[0]].T if top else extra[name]    # top: (N, out) z
        saved.append((h, aux))
        h = r.T
    return h, saved


_chain_choice = {}


def _small_chain(h, layers):
    """Whether this chain's GEMMs are small_gemm's: decided once per geometry and machine (kept
    in the machine cache) by timing both implementations' forward and backward (inside a
    capture, where nothing can be timed, an undecided chain takes small_gemm's)."""
    if not all(small_gemm.supported(h, w) for w, _, _ in layers):
        return False
    key = (h.shape, tuple((w.shape, b is not None, act) for w, b, act in layers), cupy.cuda.runtime.getDevice())
    choice = _chain_choice.get(key)
    if choice is None:
        name = f"small_gemm chain {key[:2]}"
        choice = machine_cache.choices.get(name)
        if choice is None:
            if capture.active():
                return True
            choice = timing.gpu_time(lambda: _step(h, layers, True)) < timing.gpu_time(
                lambda: _step(h, layers, False))
            machine_cache.choices.put(name, choice)
        _chain_choice[key] = choice
    return choice


def _step(h, layers, small):
    narrow_top = _narrow_top(h, layers)
    y, saved = (_forward_small if small else _forward_lt)(h, layers, narrow_top)
    needs = [(True, b is not None) for _, b, _ in layers]
    mlp_backward(cupy.ones_like(y), layers, _Saved(small, narrow_top, saved), False, needs)


_side_streams = {}


def _side_stream(main):
    """A second stream for work that may overlap `main` (one per device and main stream)."""
    key = (cupy.cuda.runtime.getDevice(), main.ptr)
    side = _side_streams.get(key)
    if side is None:
        side = _side_streams[key] = cupy.cuda.Stream(non_blocking=True)
    return side


def mlp_backward(g, layers, saved, need_dx, needs):
    """Gradients of mlp(): each layer's weight gradient is one GEMM with the bias gradient fused
    in (BGRADB; small_gemm's data gradient sums it already), and the gradient flowing into an
    activated layer is one GEMM whose DRELU / DGELU epilogue applies the activation's
    derivative. -> (dx or None, [(dw or None, db or None) per layer]).

    (cuBLASLt's DRELU_BGRAD, which also sums the bias gradient, ran as a GEMM, a memset and a
    separate epilogue kernel on the critical path for batch-64 bf16 layers: the bf16 MNIST step
    took 4.6 us longer than with DRELU and the bias gradients beside it.)

    The weight-gradient GEMMs run on a side stream: only the chain of data-gradient GEMMs is
    on the critical path, and small GEMMs leave most of the GPU idle, so the two overlap (in a
    captured graph they become parallel branches)."""
    main = cupy.cuda.get_current_stream()
    side = _side_stream(main)
    small, narrow_top, saved = saved
    dz = c_contiguous(g).reshape(-1, g.shape[-1])
    top = layers[-1][2]
    if top is not None:     # the top layer's activation: elementwise, from its y (relu) or z (gelu)
        dz = (relu_grad if top == "relu" else gelu_tanh_grad)(dz, saved[-1][1])
    out = [None] * len(layers)
    read_by_side = []       # buffers the side stream reads: alive until it has joined main again
    db_known = None
    dx = None
    for i in range(len(layers) - 1, -1, -1):
        w, b, _ = layers[i]
        x_i = saved[i][0]
        need_dw, need_db = needs[i]
        ready, dz_i, db_i = main.record(), dz, db_known     # layer i's output gradient (and bias grad)
        # the data gradient is launched before the weight gradient that runs beside it: it is the
        # critical path, and a graph launches the branch created first first (the other order let
        # the weight-gradient GEMM take every SM and stretched a data-gradient kernel 15 -> 28 us)
        narrow_i = narrow_top and i == len(layers) - 1
        if narrow_i and i > 0:      # the ReLU below, if any, has this layer's input as its y
            dz = narrow.data_grad(dz, w, x_i if layers[i - 1][2] == "relu" else None)
        elif narrow_i and need_dx:
            dx = narrow.data_grad(dz, w)
        elif i > 0 and small:
            dz, db_known = small_gemm.data_grad(dz, w, layers[i - 1][2], saved[i - 1][1])
        elif i > 0:
            below = layers[i - 1][2]
            if below is not None:     # fuse the lower layer's activation derivative
                _, name, epilog = _CHAIN[below]
                dz = run(epilog, w.T, dz.T, {name: saved[i - 1][1]}).T
            else:
                dz = cublas.matmul(dz, w)
        elif need_dx:
            dx = small_gemm.data_grad(dz, w)[0] if small else cublas.matmul(dz, w)
        side.wait_event(ready)
        read_by_side.append(dz_i)
        with side:
            if narrow_i:
                dw, db = narrow.weight_grads(x_i, dz_i)
                out[i] = (dw if need_dw else None, db if need_db else None)
            else:
                out[i] = _weight_grads(x_i, dz_i, db_i, need_dw, need_db)
    main.wait_event(side.record())
    return dx, out


def _weight_grads(x, dz, db_known, need_dw, need_db):
    """(dW, db) of one layer from its input x (N, in) and output gradient dz (N, out); db_known
    is its bias gradient if the GEMM below already summed it."""
    if need_db and db_known is None and need_dw:
        r, extra = run(E.BGRADB, x.T, dz)
        return owned(r.T), owned(extra["bgradb"].reshape(-1))
    dw = owned(run(None, x.T, dz).T) if need_dw else None
    db = (owned(db_known.reshape(-1)) if db_known is not None else dz.sum(0)) if need_db else None
    return dw, db
