"""GEMMs with fused epilogues through cuBLASLt (nvmath-python's stateful Matmul): the
forward of linear_act (GEMM + bias + ReLU/GELU in one kernel) and its weight gradient with
the bias gradient fused in (BGRADB); `run` is the planned GEMM mlp.py's chains use too.

cuBLASLt runs bias vectors along the result's M dimension, so the forward computes the
transposed product y^T = W @ x^T (M = out_features); its column-major result, transposed back,
is the C-ordered (batch, out) output. One Matmul plan per shape, layout and epilogue is kept
and re-pointed at new operands (reset_operands_unchecked), so planning happens once.
"""
from __future__ import annotations

import cupy

from nvmath.linalg.advanced import Matmul, MatmulEpilog as E

from .... import capture
from ..runtime import machine_cache, timing
from ..kernels.row_views import c_contiguous
from . import cublas

_plans = {}
_SUPPORTED = {"float32", "float16", "bfloat16"}

# PyTorch's threshold_backward: 0 where y <= 0 (even for a NaN/inf g), g elsewhere (NaN y included)
relu_grad = cupy.ElementwiseKernel("T g, T y", "T dz", "dz = y <= T(0) ? T(0) : g", "pg_relu_grad")
gelu_tanh_grad = cupy.ElementwiseKernel(
    "T g, T z", "T dz",
    """double zf = (double)z;
       double t = tanh(0.7978845608028654 * (zf + 0.044715 * zf * zf * zf));
       double d = 0.5 * (1.0 + t) + 0.5 * zf * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * zf * zf);
       dz = (T)((double)g * d);""",
    "pggelu_tanh_grad")


def supported(x):
    return x.dtype.name in _SUPPORTED


def run(epilog, a, b, inputs=None):
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


def linear_bias(x, w, b):
    """y = x @ w.T + b, the bias in the GEMM's epilogue, for float16/bfloat16 x (a separate
    bias add rereads and rewrites the whole output: 0.29 ms of a GPT step's 9.2); None for
    float32, whose small-batch GEMMs have kernels of their own, and float64."""
    if x.dtype.itemsize != 2 or not supported(x):
        return None
    out_f = w.shape[0]
    x2 = c_contiguous(x).reshape(-1, x.shape[-1])
    return run(E.BIAS, w, x2.T, {"bias": b}).T.reshape(x.shape[:-1] + (out_f,))


def linear_act(x, w, b, act):
    """-> (y, aux): y = act(x @ w.T + b) over x's last dim; aux is y (relu) or the
    pre-activation (gelu), as the backward needs. float64 (no cuBLASLt epilogue here) runs
    the cuBLAS GEMM and applies bias and activation in place."""
    out_f = w.shape[0]
    lead = x.shape[:-1]
    x2 = c_contiguous(x).reshape(-1, x.shape[-1])
    if not supported(x):
        z = cublas.matmul(x2, w.T)
        if b is not None:
            z += b
        if act == "relu":
            y = cupy.maximum(z, 0, out=z)
            return y.reshape(lead + (out_f,)), y.reshape(lead + (out_f,))
        y = 0.5 * z * (1 + cupy.tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)))
        return y.reshape(lead + (out_f,)), z.reshape(lead + (out_f,))
    if b is None:       # the bias epilogues are the ones supported everywhere: add zeros
        b = zeros(out_f, x.dtype)
    if act == "relu":
        y = run(E.RELU_BIAS, w, x2.T, {"bias": b}).T
        return y.reshape(lead + (out_f,)), y.reshape(lead + (out_f,))
    r, aux = run(E.GELU_AUX_BIAS, w, x2.T, {"bias": b})
    z = aux["gelu_aux"][:out_f]        # cuBLASLt pads the aux rows to an aligned count
    return r.T.reshape(lead + (out_f,)), z.T.reshape(lead + (out_f,))


_zero_cache = {}


def zeros(n, dtype):
    key = (n, dtype.str, cupy.cuda.runtime.getDevice())
    z = _zero_cache.get(key)
    if z is None:
        z = _zero_cache[key] = cupy.zeros(n, dtype=dtype)
    return z


def linear_act_backward(g, x, w, aux, act, need_dx, need_dw, need_db):
    out_f = w.shape[0]
    g2 = c_contiguous(g).reshape(-1, out_f)
    a2 = c_contiguous(aux).reshape(-1, out_f)
    dz = relu_grad(g2, a2) if act == "relu" else gelu_tanh_grad(g2, a2)      # (N, out)
    dx = dw = db = None
    if need_dx:
        dx = cublas.matmul(dz, w).reshape(x.shape)                                  # (N, in)
    if need_dw and not supported(x):
        dw = cublas.matmul(dz.T, c_contiguous(x).reshape(-1, x.shape[-1]))
        db = dz.sum(0) if need_db else None
    elif need_dw:
        x2 = c_contiguous(x).reshape(-1, x.shape[-1])
        if need_db:      # dW^T = x^T @ dz with the bias gradient (a column sum of dz) fused in
            r, extra = run(E.BGRADB, x2.T, dz)
            db = owned(extra["bgradb"].reshape(out_f))
        else:
            r = run(None, x2.T, dz)            # no epilogue
        dw = owned(r.T)                                                           # (out, in), C order
    elif need_db:
        db = dz.sum(0)
    return dx, dw, db


def owned(a):
    """A view of a fresh GEMM output (nothing else holds it) as an array without a .base, so
    that autograd keeps it as a parameter's .grad instead of copying it (one copy per weight
    and bias per step otherwise)."""
    if a is None or a.base is None:
        return a
    return cupy.ndarray(a.shape, a.dtype, a.data, strides=a.strides)
