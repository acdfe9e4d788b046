"""GEMMs with fused epilogues through cuBLASLt (nvmath-python's stateful Matmul): the
forward of linear_act (GEMM + bias + ReLU/GELU in one kernel) and its weight gradient with
the bias gradient fused in (BGRADB).

cuBLASLt runs bias vectors along the result's M dimension, so the forward computes the
transposed product y^T = W @ x^T (M = out_features); its column-major result, transposed back,
is the C-ordered (batch, out) output. One Matmul plan per shape, layout and epilogue is kept
and re-pointed at new operands (reset_operands_unchecked), so planning happens once.
"""
from __future__ import annotations

from typing import NamedTuple

import cupy

from nvmath.linalg.advanced import Matmul, MatmulEpilog as E

from ... import capture
from . import gemm, machine_cache, small_gemm, timing
from .kernels import c_contiguous

_plans = {}
_SUPPORTED = {"float32", "float16", "bfloat16"}

# PyTorch's threshold_backward: 0 where y <= 0 (even for a NaN/inf g), g elsewhere (NaN y included)
relu_grad = cupy.ElementwiseKernel("T g, T y", "T dz", "dz = y <= T(0) ? T(0) : g", "pg_relu_grad")
_gelu_tanh_grad = cupy.ElementwiseKernel(
    "T g, T z", "T dz",
    """double zf = (double)z;
       double t = tanh(0.7978845608028654 * (zf + 0.044715 * zf * zf * zf));
       double d = 0.5 * (1.0 + t) + 0.5 * zf * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * zf * zf);
       dz = (T)((double)g * d);""",
    "pg_gelu_tanh_grad")


def supported(x):
    return x.dtype.name in _SUPPORTED


def _run(epilog, a, b, inputs=None):
    stream = cupy.cuda.get_current_stream()
    geometry = (epilog, a.shape, a.strides, b.shape, b.strides, a.dtype.str,
                tuple(sorted(inputs)) if inputs else ())
    key = geometry + (stream.ptr,)
    mm = _plans.get(key)
    if mm is None:
        mm = Matmul(a, b, stream=stream)
        mm.plan(preferences={"limit": 32}, epilog=epilog, epilog_inputs=inputs, stream=stream)
        best = _fastest_algorithm(mm, geometry + (_alignment(a), _alignment(b)), stream)
        if best is not mm.algorithms[0]:    # plan it alone: execute() then runs it by default
            mm.plan(algorithms=[best], epilog=epilog, epilog_inputs=inputs, stream=stream)
        _plans[key] = mm
    else:
        mm.reset_operands_unchecked(a=a, b=b, epilog_inputs=inputs, stream=stream)
    return mm.execute(stream=stream)


def _alignment(a):
    """The operand pointer's alignment as cuBLASLt's heuristic sees it (up to 256 bytes): it
    decides which algorithms are offered."""
    ptr = a.data.ptr
    return min(256, ptr & -ptr) if ptr else 256


def _fastest_algorithm(mm, key, stream):
    """The fastest of the heuristic's candidates for this plan: for the small GEMMs of small
    models its first pick (often split-K plus a separate epilogue kernel) is rarely the fastest.
    Each candidate is timed once per machine (a few milliseconds in all; nvmath's own autotune
    flushes the L2 cache from the host between runs, seconds per model) and the choice, its
    index among the candidates, kept in the machine cache. Inside a capture nothing can be
    timed: an unknown plan takes the heuristic's first pick."""
    algorithms = mm.algorithms
    name = f"lt {key}"
    known = machine_cache.choices.get(name)
    if known is not None and known[1] == len(algorithms):
        return algorithms[known[0]]
    if capture.active() or len(algorithms) == 1:
        return algorithms[0]
    times = [timing.gpu_time(lambda a=a: mm.execute(algorithm=a, stream=stream)) for a in algorithms]
    best = min(range(len(times)), key=times.__getitem__)
    machine_cache.choices.put(name, [best, len(algorithms)])
    return algorithms[best]


def linear_act(x, w, b, act):
    """-> (y, aux): y = act(x @ w.T + b) over x's last dim; aux is y (relu) or the
    pre-activation (gelu), as the backward needs. float64 (no cuBLASLt epilogue here) runs
    the cuBLAS GEMM and applies bias and activation in place."""
    out_f = w.shape[0]
    lead = x.shape[:-1]
    x2 = c_contiguous(x).reshape(-1, x.shape[-1])
    if not supported(x):
        z = gemm.matmul(x2, w.T)
        if b is not None:
            z += b
        if act == "relu":
            y = cupy.maximum(z, 0, out=z)
            return y.reshape(lead + (out_f,)), y.reshape(lead + (out_f,))
        y = 0.5 * z * (1 + cupy.tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)))
        return y.reshape(lead + (out_f,)), z.reshape(lead + (out_f,))
    if b is None:       # the bias epilogues are the ones supported everywhere: add zeros
        b = _zeros(out_f, x.dtype)
    if act == "relu":
        y = _run(E.RELU_BIAS, w, x2.T, {"bias": b}).T
        return y.reshape(lead + (out_f,)), y.reshape(lead + (out_f,))
    r, aux = _run(E.GELU_AUX_BIAS, w, x2.T, {"bias": b})
    z = aux["gelu_aux"][:out_f]        # cuBLASLt pads the aux rows to an aligned count
    return r.T.reshape(lead + (out_f,)), z.T.reshape(lead + (out_f,))


_zero_cache = {}


def _zeros(n, dtype):
    key = (n, dtype.str, cupy.cuda.runtime.getDevice())
    z = _zero_cache.get(key)
    if z is None:
        z = _zero_cache[key] = cupy.zeros(n, dtype=dtype)
    return z


def linear_act_backward(g, x, w, aux, act, need_dx, need_dw, need_db):
    out_f = w.shape[0]
    g2 = c_contiguous(g).reshape(-1, out_f)
    a2 = c_contiguous(aux).reshape(-1, out_f)
    dz = relu_grad(g2, a2) if act == "relu" else _gelu_tanh_grad(g2, a2)      # (N, out)
    dx = dw = db = None
    if need_dx:
        dx = gemm.matmul(dz, w).reshape(x.shape)                                  # (N, in)
    if need_dw and not supported(x):
        dw = gemm.matmul(dz.T, c_contiguous(x).reshape(-1, x.shape[-1]))
        db = dz.sum(0) if need_db else None
    elif need_dw:
        x2 = c_contiguous(x).reshape(-1, x.shape[-1])
        if need_db:      # dW^T = x^T @ dz with the bias gradient (a column sum of dz) fused in
            r, extra = _run(E.BGRADB, x2.T, dz)
            db = _owned(extra["bgradb"].reshape(out_f))
        else:
            r = _run(None, x2.T, dz)            # no epilogue
        dw = _owned(r.T)                                                           # (out, in), C order
    elif need_db:
        db = dz.sum(0)
    return dx, dw, db


# per activation: the forward epilogue, its aux output's name, the backward epilogue that reads it
_CHAIN = {"relu": (E.RELU_AUX_BIAS, "relu_aux", E.DRELU_BGRAD),
          "gelu_tanh": (E.GELU_AUX_BIAS, "gelu_aux", E.DGELU_BGRAD)}


def mlp(x, layers):
    """A chain of Linear layers, each followed by ReLU, GELU (tanh) or nothing: layers =
    [(w, b, act)], act in (None, "relu", "gelu_tanh"). -> (y, saved) where saved holds each
    layer's input and its activation aux (RELU_AUX_BIAS bitmask, GELU_AUX_BIAS pre-activation,
    both padded by cuBLASLt and kept whole), the inputs of the backward's DRELU/DGELU_BGRAD
    epilogue; for the top layer, whose activation's derivative is elementwise, its output
    (relu) or pre-activation (gelu) as an (N, out) view. None (decline) for unsupported
    dtypes, and for a GELU layer feeding a layer of one output (cuBLASLt has no DGELU GEMM
    with K = 1). Batches of at most 64 rows may run small_gemm's kernels instead (same
    epilogues, y / z as the aux), when timing says they are faster for this chain."""
    if not supported(x) or any(a == "gelu_tanh" and w.shape[0] == 1 for (_, _, a), (w, _, _)
                               in zip(layers, layers[1:])):
        return None
    h = c_contiguous(x).reshape(-1, x.shape[-1])
    small = _small_chain(h, layers)
    h, saved = (_forward_small if small else _forward_lt)(h, layers)
    return h.reshape(x.shape[:-1] + (h.shape[-1],)), _Saved(small, saved)


class _Saved(NamedTuple):
    """What mlp() keeps for mlp_backward: which GEMMs ran (small_gemm's or cuBLASLt's, whose
    activation aux formats differ) and per layer (its input, its activation aux)."""
    small: bool
    layers: list


def _forward_small(h, layers):
    saved = []
    for w, b, act in layers:
        y, aux = small_gemm.linear_act(h, w, b if b is not None else _zeros(w.shape[0], h.dtype), act)
        saved.append((h, aux))
        h = y
    return h, saved


def _forward_lt(h, layers):
    saved = []
    for i, (w, b, act) in enumerate(layers):
        bias = {"bias": b if b is not None else _zeros(w.shape[0], h.dtype)}
        top = i == len(layers) - 1
        if act is None:
            r, aux = _run(E.BIAS, w, h.T, bias), None
        elif top and act == "relu":     # no layer above to fuse dReLU into: keep y for it
            r = _run(E.RELU_BIAS, w, h.T, bias)
            aux = r.T
        else:
            epilog, name, _ = _CHAIN[act]
            r, extra = _run(epilog, w, h.T, bias)
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
    y, saved = (_forward_small if small else _forward_lt)(h, layers)
    needs = [(True, b is not None) for _, b, _ in layers]
    mlp_backward(cupy.ones_like(y), layers, _Saved(small, saved), False, needs)


_side_streams = {}


def _side_stream(main):
    """A second stream for work that may overlap `main` (one per device and main stream)."""
    key = (cupy.cuda.runtime.getDevice(), main.ptr)
    side = _side_streams.get(key)
    if side is None:
        side = _side_streams[key] = cupy.cuda.Stream(non_blocking=True)
    return side


def mlp_backward(g, layers, saved, need_dx, needs):
    """Gradients of mlp(): each layer's weight gradient is one GEMM (with the bias gradient
    fused as BGRADB for the last layer), and the gradient flowing into an activated layer is one
    GEMM whose DRELU_BGRAD / DGELU_BGRAD epilogue applies the activation's derivative and sums
    that layer's bias gradient. -> (dx or None, [(dw or None, db or None) per layer]).

    The weight-gradient GEMMs run on a side stream: only the chain of data-gradient GEMMs is
    on the critical path, and small GEMMs leave most of the GPU idle, so the two overlap (in a
    captured graph they become parallel branches)."""
    main = cupy.cuda.get_current_stream()
    side = _side_stream(main)
    small, saved = saved
    dz = c_contiguous(g).reshape(-1, g.shape[-1])
    top = layers[-1][2]
    if top is not None:     # the top layer's activation: elementwise, from its y (relu) or z (gelu)
        dz = (relu_grad if top == "relu" else _gelu_tanh_grad)(dz, saved[-1][1])
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
        if i > 0 and small:
            dz, db_known = small_gemm.data_grad(dz, w, layers[i - 1][2], saved[i - 1][1])
        elif i > 0:
            below = layers[i - 1][2]
            if below is not None:     # fuse the lower layer's activation derivative and bias grad
                _, name, epilog = _CHAIN[below]
                r, extra = _run(epilog, w.T, dz.T, {name: saved[i - 1][1]})
                dz, db_known = r.T, extra[epilog.name.lower()]
            else:
                dz, db_known = gemm.matmul(dz, w), None
        elif need_dx:
            dx = small_gemm.data_grad(dz, w)[0] if small else gemm.matmul(dz, w)
        side.wait_event(ready)
        read_by_side.append(dz_i)
        with side:
            out[i] = _weight_grads(x_i, dz_i, db_i, need_dw, need_db)
    main.wait_event(side.record())
    return dx, out


def _weight_grads(x, dz, db_known, need_dw, need_db):
    """(dW, db) of one layer from its input x (N, in) and output gradient dz (N, out); db_known
    is its bias gradient if the GEMM below already summed it."""
    if need_db and db_known is None and need_dw:
        r, extra = _run(E.BGRADB, x.T, dz)
        return _owned(r.T), _owned(extra["bgradb"].reshape(-1))
    dw = _owned(_run(None, x.T, dz).T) if need_dw else None
    db = (_owned(db_known.reshape(-1)) if db_known is not None else dz.sum(0)) if need_db else None
    return dw, db


def _owned(a):
    """A view of a fresh GEMM output (nothing else holds it) as an array without a .base, so
    that autograd keeps it as a parameter's .grad instead of copying it (one copy per weight
    and bias per step otherwise)."""
    if a is None or a.base is None:
        return a
    return cupy.ndarray(a.shape, a.dtype, a.data, strides=a.strides)
