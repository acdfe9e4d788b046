"""The NumPy backend: every primitive of base.py on ndarrays, plus a few fused fast paths.

In order below: the ufunc tables; helpers the fast paths share (float32 for half dtypes, erf);
CPUBackend, in base.py's order (transfer and creation, random, elementwise, reduce, linear
algebra, movement, indexing, then the fast paths). Beside it: the primitives NumPy and CuPy
share (array.py), row sums and maxima (cpu_reductions.py), the layer_norm, batch_norm,
convolution, max-pooling (forward) and recurrent-cell fast paths' bodies (cpu_layer_norm.py,
cpu_batch_norm.py, cpu_conv.py, cpu_pool.py, cpu_recurrent.py), scatter-add (cpu_scatter.py)
and the malloc tuning (cpu_malloc.py).
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from .. import dtypes as _dtypes

from . import cpu_batch_norm, cpu_conv, cpu_layer_norm, cpu_malloc, cpu_pool, cpu_scatter
from .array import ArrayBackend, int_pow, plain_basic_key
from .cpu_recurrent import RecurrentCells
from .cpu_reductions import ROW_SUM_DTYPES, max_along, ones_for, sum_along
from .quiet_numpy import ERRSTATE, IGNORE, quiet

_UNARY = {
    "neg": np.negative, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "abs": np.abs,
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "log1p": np.log1p,
    "expm1": np.expm1, "reciprocal": np.reciprocal, "floor": np.floor, "ceil": np.ceil,
    "round": np.rint, "trunc": np.trunc, "isnan": np.isnan, "isinf": np.isinf,
    "isfinite": np.isfinite, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
}
_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide, "maximum": np.maximum,
    "minimum": np.minimum, "floordiv": np.floor_divide, "mod": np.remainder,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
}
# integer ops whose Python form is exact (binary's one-element path)
_INT_SCALAR = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}
_BITWISE = {"and": (np.logical_and, np.bitwise_and), "or": (np.logical_or, np.bitwise_or),
            "xor": (np.logical_xor, np.bitwise_xor)}
# half-precision float dtypes, summed with a float32 accumulator (compared as dtypes: the
# .name property of a NumPy dtype is slow enough to show in per-op overhead)
_HALF = tuple(d for d in (np.dtype(np.float16), _dtypes.bfloat16.np) if d is not None)
_BF16 = _dtypes.bfloat16.np


# ---- helpers the fast paths share -------------------------------------------------------------
def _in_float32(fn):
    """Run a fused op on float16/bfloat16 arrays in float32 and round its result (each array
    of a tuple of results) once, as PyTorch's opmath: bfloat16 arrays would otherwise sum in
    bfloat16, and NumPy's float16 GEMM is a loop of its own without BLAS (see matmul)."""
    @functools.wraps(fn)
    def widened(self, *args):
        dtype = args[0].dtype
        if dtype not in _HALF:
            return fn(self, *args)
        wide = [a.astype(np.float32) if isinstance(a, np.ndarray) else a for a in args]
        r = fn(self, *wide)
        if type(r) is not tuple:
            return r.astype(dtype)
        rounded = {}            # (one array returned twice, relu's y and aux, stays one)
        for v in r:
            if isinstance(v, np.ndarray) and id(v) not in rounded:
                rounded[id(v)] = v.astype(dtype)
        return tuple(rounded.get(id(v), v) for v in r)
    return widened


# the ufuncs' reduce itself: np.sum and friends are Python wrappers around it (~1 us a call)
_REDUCE = {"sum": np.add.reduce, "prod": np.multiply.reduce, "max": np.maximum.reduce,
           "min": np.minimum.reduce}

_COLUMN_SUM_ROWS = 4096     # (beyond it, NumPy's pairwise sum keeps float32 error lower)


_erf64 = np.frompyfunc(math.erf, 1, 1)

# erf(x) = x P(x^2) / Q(x^2) on |x| <= 3.92 (beyond, erf rounds to +-1 in float32): a rational
# least-squares fit of erf(x)/x, float32 evaluation within 6 ulp of erf everywhere and
# relatively exact near 0. It replaced Numerical Recipes' erfc, which took 31 NumPy passes where
# this takes 25 in place (1.44 -> 0.8 ms on 393k elements, the GPT's gelu on the CPU) and
# gave erf(1e-8) = 0 (1 - erfc cancels). Selecting a second formula by a mask cost more than it
# saved: masked NumPy copies of random masks took 0.6-0.85 ms.
_ERF_CLAMP = 3.92
_ERF_P = [np.float32(c) for c in (1.1283791, 0.1928127, 0.049629133, 0.003412261, 0.00013607866,
                                  -1.9648062e-06, 2.0608391e-08)]
_ERF_Q = [np.float32(c) for c in (1.0, 0.504208, 0.11205831, 0.013751702, 0.0008897872)]


def _horner(coefficients, u):
    acc = np.full_like(u, coefficients[-1])
    for c in coefficients[-2::-1]:
        acc *= u
        acc += c
    return acc


def _erf(x, out=None):
    """erf without SciPy: exact (math.erf) in float64; the rational fit above otherwise."""
    if x.dtype == np.float64:
        r = np.asarray(_erf64(x), dtype=np.float64)     # (a 0-d input gives a Python float)
    else:
        xc = np.clip(x, -_ERF_CLAMP, _ERF_CLAMP, dtype=np.float32)     # (NaN stays NaN)
        u = xc * xc
        r = _horner(_ERF_P, u)
        r *= xc
        r /= _horner(_ERF_Q, u)
        np.clip(r, -1.0, 1.0, out=r)        # the fit overshoots 1 by 2e-7 near the clamp
    if out is not None:
        out[...] = r
        return out
    return r.astype(x.dtype, copy=False)


_PY_NUMBERS = (int, float)       # (bool is not among them: NumPy would keep it a bool)


def _standard_draw(draw, shape, dtype):
    """A generator's uniform or normal draw, made in float32 when that is the dtype (NumPy
    draws float32 directly, at half the work), else in float64."""
    return draw(shape, dtype=np.float32) if dtype.name == "float32" else draw(shape)


class CPUBackend(RecurrentCells, ArrayBackend):
    """Every primitive that computes is @quiet: inf and nan are values, never NumPy warnings
    (torch raises no warning for exp(1000) or 0/0). Pure movement and indexing need no wrapper."""
    device_type = "cpu"
    checks_indices = True
    # the conv fast paths read any strides (one as_strided im2col view) and lay their results
    # out as torch's CPU kernels do: channels-last for a channels-last input or weight
    takes_channels_last = True
    xp = np

    def __init__(self):
        cpu_malloc.tune()       # buffers of 128 KiB and up reused, not mmapped anew each time

    # ---- transfer / creation -------------------------------------------------------------
    @quiet
    def from_numpy(self, array, dtype, device_index=0):
        return np.array(array, dtype=dtype.to_numpy(), copy=True)

    def to_numpy(self, buf):
        return buf

    def empty(self, shape, dtype, device_index=0):
        return np.empty(shape, dtype=dtype.to_numpy())

    def full(self, shape, value, dtype, device_index=0):
        if (type(value) is int or type(value) is float) and value == 0 and math.copysign(1.0, value) > 0:
            return np.zeros(shape, dtype=dtype.to_numpy())     # zeros(): 0.2 us where np.full takes 0.8
        return self._full(shape, value, dtype)

    @quiet
    def _full(self, shape, value, dtype):
        return np.full(shape, value, dtype=dtype.to_numpy())

    @quiet
    def copy_(self, dst, src):
        np.copyto(dst, src, casting="unsafe")
        return dst

    def from_dlpack(self, producer, device_index=0):
        return np.from_dlpack(producer)

    # ---- random -----------------------------------------------------------------------------
    def generator(self, seed, device_index=0):
        return np.random.Generator(np.random.PCG64(seed))

    def rng_state(self, gen):
        return gen.bit_generator.state

    def set_rng_state(self, gen, state):
        gen.bit_generator.state = state
        return gen

    @quiet
    def uniform(self, gen, shape, low, high, dtype, device_index=0):
        r = _standard_draw(gen.random, shape, dtype)
        if low != 0.0 or high != 1.0:
            r = r * (high - low) + low
        return r.astype(dtype.to_numpy(), copy=False)

    @quiet
    def normal(self, gen, shape, mean, std, dtype, device_index=0):
        r = _standard_draw(gen.standard_normal, shape, dtype)
        if std != 1.0 or mean != 0.0:
            r = r * std + mean
        return r.astype(dtype.to_numpy(), copy=False)

    def bernoulli(self, gen, p, shape, dtype, device_index=0):
        return (gen.random(shape, dtype=np.float32) < p).astype(dtype.to_numpy())

    # ---- elementwise --------------------------------------------------------------------------
    def unary(self, op, x, out=None):
        token = ERRSTATE.set(IGNORE)        # @quiet inlined: the hottest primitives
        try:
            if out is not None and op in _UNARY:   # the optimizers' in-place hot path
                return _UNARY[op](x, out=out)
            # NumPy ufuncs turn 0-d results into NumPy scalars; buffers must stay writable arrays
            return np.asarray(self._unary(op, x, out))
        finally:
            ERRSTATE.reset(token)

    def _unary(self, op, x, out):
        f = _UNARY.get(op)
        if f is not None:
            return f(x, out=out)
        if op == "relu":
            return np.maximum(x, 0, out=out)
        if op == "sign":    # torch: sign(nan) is 0, np.sign gives nan
            r = np.asarray(np.sign(x, out=out))
            if r.dtype.kind == "f":
                np.copyto(r, 0, where=np.isnan(r))
            return r
        if op == "sigmoid":
            # torch's formula, 1/(1+exp(-x)), in place after the first pass; exp(-x) overflows
            # to inf for very negative x (warnings are off here), giving sigmoid's limit 0
            r = np.negative(x, out=np.empty_like(x) if out is None else out)    # (0-d: an array)
            np.exp(r, out=r)
            np.add(r, 1, out=r)
            return np.reciprocal(r, out=r)
        if op == "rsqrt":
            r = np.asarray(np.sqrt(x, out=out))
            return np.reciprocal(r, out=r)
        if op == "erf":
            return _erf(x, out=out)
        if op == "not":
            return np.logical_not(x, out=out) if x.dtype == np.bool_ else np.invert(x, out=out)
        raise ValueError(f"cpu backend: unknown unary op {op!r}")

    def binary(self, op, a, b, out=None):
        if type(b) is int and out is None and type(a) is np.ndarray and not a.ndim and a.dtype.kind in "iu":
            # one integer element op a Python int (i + 8, a 0-d index's arithmetic): Python's
            # exact integers, where a NumPy ufunc's machinery costs three times more on one
            # element; a result outside the dtype takes the ufunc, which wraps it as torch
            f = _INT_SCALAR.get(op)
            if f is not None:
                try:
                    return np.array(f(a.item(), b), a.dtype)
                except OverflowError:
                    pass        # (the ufunc below wraps it)
        token = ERRSTATE.set(IGNORE)
        try:
            f = _BINARY.get(op)
            if f is not None and out is None and type(a) is np.ndarray and (
                    type(b) is np.ndarray or (type(b) in _PY_NUMBERS and a.dtype != _BF16)):
                r = f(a, b)     # tensor op tensor or Python number, the hot path (0-d: a scalar)
                return r if type(r) is np.ndarray else np.asarray(r)
            if out is not None and f is not None:   # the optimizers' in-place hot path
                return f(a, b, out=out)
            if type(b) is float and getattr(a, "dtype", None) == _BF16:
                b = _BF16.type(b)       # NumPy would promote bfloat16 with a Python float to
            elif type(a) is float and getattr(b, "dtype", None) == _BF16:     # float32 (no weak
                a = _BF16.type(a)       # scalars for ml_dtypes); torch casts the scalar first
            return np.asarray(self._binary(op, a, b, out))
        finally:
            ERRSTATE.reset(token)

    def _binary(self, op, a, b, out):
        f = _BINARY.get(op)
        if f is not None:
            return f(a, b, out=out)
        if op == "pow":
            if np.asarray(a).dtype.kind in "iu" and np.asarray(b).dtype.kind in "iu":
                r = int_pow(np, a, b)
                return r if out is None else np.copyto(out, r, casting="unsafe") or out
            return np.power(a, b, out=out)
        if op in _BITWISE:
            logical, bitwise = _BITWISE[op]
            return (logical if np.asarray(a).dtype == np.bool_ else bitwise)(a, b, out=out)
        raise ValueError(f"cpu backend: unknown binary op {op!r}")

    @quiet
    def cast(self, x, dtype):
        return x.astype(dtype.to_numpy())

    def fast_cast_many(self, xs, dtype):
        """The casts in one call: autocast's casts of an op's inputs become one autograd node
        (and their gradients' casts back one call) instead of one each."""
        return [self.cast(x, dtype) for x in xs]

    # ---- reduce -------------------------------------------------------------------------------
    @quiet
    def reduce(self, op, x, axes, keepdims):
        if op == "sum" and x.dtype in _HALF:   # accumulate in float32, as PyTorch
            return np.add.reduce(x, axis=axes, keepdims=keepdims, dtype=np.float32).astype(x.dtype)
        if (op == "sum" and axes == (0,) and x.ndim == 2 and x.dtype in ROW_SUM_DTYPES
                and 0 < x.shape[0] <= _COLUMN_SUM_ROWS):
            # a Linear layer's bias gradient: ones @ x, BLAS's GEMV, 2.5x faster than NumPy's
            # reduction over rows ((32, 64): 2.3 -> 0.9 us), as the CUDA backend's column sums
            r = np.matmul(ones_for(x.shape[0], x.dtype), x)                    # (c,)
            return r[None] if keepdims else r
        r = _REDUCE[op](x, axis=axes, keepdims=keepdims)
        return np.asarray(r, dtype=x.dtype)

    def arg_reduce(self, op, x, axis, keepdims):
        f = np.argmax if op == "argmax" else np.argmin
        return np.asarray(f(x, axis=axis, keepdims=keepdims), dtype=np.int64)

    def data_ptr(self, buf):
        return buf.ctypes.data

    def argsort(self, x, axis, descending):
        if descending:      # a stable descending order: ascending over the reversed axis, reversed
            n = x.shape[axis]
            rev = np.flip(x, axis)
            idx = np.flip(np.argsort(rev, axis=axis, kind="stable"), axis)
            return np.asarray(n - 1 - idx, dtype=np.int64)
        return np.asarray(np.argsort(x, axis=axis, kind="stable"), dtype=np.int64)

    # ---- linear algebra -----------------------------------------------------------------------
    def matmul(self, a, b, out=None):
        token = ERRSTATE.set(IGNORE)
        try:
            if a.dtype in _HALF:
                # a float32 GEMM on float32 copies, rounded once (PyTorch's CPU GEMMs accumulate
                # half inputs in float32 too): NumPy's float16 matmul is a loop of its own
                # without BLAS ((64, 784) @ (784, 784) on 2 cores: 260 ms, 3.8 ms with the
                # copies, 1.3 ms in float32), and ml_dtypes' bfloat16 one returns float32
                res = self.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
                return res if out is None else self.copy_(out, res)
            if a.ndim > 2 and b.ndim > 2 and b.strides[-2] == b.itemsize and b.shape[-1] > 1:
                # a batch of transposed matrices (attention's k^T): OpenBLAS's transposed-B GEMMs
                # ran slower than copying b first ((12, 4, 64, 32) @ (12, 4, 32, 64): 230 -> 174 us)
                b = np.ascontiguousarray(b)
            if a.ndim > 2 and b.ndim == 2 and out is None and a.flags.c_contiguous:
                # (..., n, k) @ (k, m): NumPy loops one GEMM per leading index; as one
                # (N*n, k) @ (k, m) GEMM it is 2-5x faster (a Linear over a sequence)
                rows = math.prod(a.shape[:-1])        # (not -1: a k of 0 leaves it unresolved)
                return np.matmul(a.reshape(rows, a.shape[-1]), b).reshape(a.shape[:-1] + (b.shape[-1],))
            return np.matmul(a, b, out=out)
        finally:
            ERRSTATE.reset(token)

    # ---- movement ------------------------------------------------------------------------------
    def concat(self, xs, axis):
        if axis == 0 and len(xs) > 2 and xs[0].ndim and 0 not in xs[0].shape[1:]:
            # contiguous pieces joined along the first axis are their bytes end to end: one
            # bytearray join is 3x faster than np.concatenate on many small pieces (a batch of
            # 32 token windows: 2.6 against 7.7 us); a strided piece has no flat buffer to join
            try:
                flat = np.frombuffer(bytearray().join(xs), xs[0].dtype)
            except (BufferError, TypeError, ValueError):
                return np.concatenate(xs, axis=0)
            return flat.reshape((-1,) + xs[0].shape[1:])
        return np.concatenate(xs, axis=axis)

    def slice(self, x, starts, stops, steps):
        if not starts:          # a 0-d buffer: x[()] would be a NumPy scalar
            return x.view()
        return x[tuple(slice(a, b, c) for a, b, c in zip(starts, stops, steps))]

    def fast_basic_view(self, x, key):
        """x[key] as NumPy's basic indexing gives it, where that is torch's view: a key of
        in-range ints and slices of ints with positive steps, fewer than x has dims or leaving
        an array. None for anything else (the op layer's planner gives torch's errors)."""
        if not plain_basic_key(key, x.ndim):
            return None
        try:
            v = x[key]
        except IndexError:      # an int out of range
            return None
        return v if type(v) is np.ndarray else None     # (every dim an int: a NumPy scalar)

    def contiguous(self, x):
        return np.ascontiguousarray(x)

    # ---- indexing ------------------------------------------------------------------------------
    def take(self, x, index, axis):
        return np.take(x, index, axis=axis)

    @quiet
    def scatter_add(self, base, index, src, axis):
        return cpu_scatter.scatter_add(base, index, src, axis)

    @quiet
    def scatter(self, base, index, src, axis):
        base[_scatter_coords(index, axis)] = src
        return base

    def nonzero(self, x):
        return np.stack(np.nonzero(x), axis=-1).astype(np.int64).reshape(-1, x.ndim)

    # ---- fast paths -----------------------------------------------------------------------------
    @quiet
    @_in_float32
    def fast_linear_act(self, x, w, b, act):
        """act(x @ w.T + b) with the bias and activation applied in place on the GEMM output.
        aux (what the backward needs) is the output for relu, the pre-activation for gelu.
        Half dtypes: computed in float32, y and aux rounded once."""
        z = np.matmul(x, w.T)
        if b is not None:
            z += b
        if act == "relu":
            return np.maximum(z, 0, out=z), z
        y = z * (1 + np.tanh(0.7978845608028654 * (z + 0.044715 * z * z * z))) * 0.5
        return y.astype(z.dtype, copy=False), z

    @quiet
    @_in_float32
    def fast_linear_act_backward(self, g, x, w, aux, act, need_dx, need_dw, need_db):
        if act == "relu":
            dz = g * (aux > 0)
        else:
            t = np.tanh(0.7978845608028654 * (aux + 0.044715 * aux ** 3))
            dz = g * (0.5 * (1 + t) + 0.5 * aux * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * aux * aux))
            dz = dz.astype(g.dtype, copy=False)
        dz2 = dz.reshape(-1, dz.shape[-1])
        dx = np.matmul(dz, w) if need_dx else None
        dw = np.matmul(dz2.T, x.reshape(-1, x.shape[-1])) if need_dw else None
        db = dz2.sum(0) if need_db else None
        return dx, dw, db

    @quiet
    def fast_embedding_backward(self, idx, g, num_weights):
        """(K,) ids (checked by the forward), (K, D) output gradient -> (V, D) weight gradient."""
        return cpu_scatter.row_sums(idx, g, num_weights)

    @quiet
    def fast_cross_entropy(self, x, target, ignore_index, mean, out_dtype=None):
        """-> (loss () in out_dtype (default x's), counted rows (), per-row logsumexp (N,)) for
        logits x (N, C) and class indices (N,) in bounds (ops/neural/softmax.py checks them), in
        float32 for half dtypes. An ignored row adds nothing, not even a NaN from an infinite logit."""
        kd = np.dtype(np.float32) if x.dtype in _HALF else x.dtype
        xk = x.astype(kd, copy=False)
        valid = target != ignore_index                                      # (N,)
        m = max_along(xk, 1)                                               # (N, 1)
        e = np.subtract(xk, m)                                              # (N, C)
        lse = np.log(sum_along(np.exp(e, out=e), 1)[:, 0]) + m[:, 0]       # (N,)
        picked = xk[np.arange(xk.shape[0]), np.where(valid, target, 0)]     # (N,)
        # (np.add.reduce: ndarray.sum's Python layer costs a microsecond a call)
        total = np.add.reduce(np.where(valid, lse - picked, 0), dtype=kd)
        count = np.asarray(np.add.reduce(valid), dtype=kd)
        return np.asarray(total / count if mean else total,
                          dtype=x.dtype if out_dtype is None else out_dtype.to_numpy()), count, lse

    @quiet
    def fast_cross_entropy_backward(self, x, target, lse, g, count, mean, ignore_index):
        """dx = (softmax(x) - onehot(target)) * valid * (g / max(count, 1) for a mean, else g),
        the softmax read off the forward's logsumexp."""
        kd = lse.dtype
        valid = target != ignore_index                                      # (N,)
        p = np.exp(x.astype(kd, copy=False) - lse[:, None])                 # (N, C)
        p[np.arange(p.shape[0]), np.where(valid, target, 0)] -= 1
        scale = np.asarray(g, kd) / max(count, 1) if mean else np.asarray(g, kd)
        p *= (valid * scale)[:, None]
        return p.astype(x.dtype, copy=False)

    @quiet
    @_in_float32
    def fast_softmax(self, x, axis):
        """Fused softmax: three passes, one temporary."""
        y = x - max_along(x, axis)
        np.exp(y, out=y)
        y /= sum_along(y, axis)
        return y

    @quiet
    @_in_float32
    def fast_softmax_backward(self, y, g, axis):
        """dx = y * (g - sum(g * y)); y is the softmax output."""
        gy = g * y
        gy -= y * sum_along(gy, axis)
        return gy

    @quiet
    @_in_float32
    def fast_log_softmax(self, x, axis):
        y = x - max_along(x, axis)
        y -= np.log(sum_along(np.exp(y), axis))
        return y

    @quiet
    @_in_float32
    def fast_log_softmax_backward(self, y, g, axis):
        """dx = g - exp(y) * sum(g); y is the log-softmax output. One (N, C) buffer, updated in
        place (the same values as the three-temporary form: 4.8 -> 3.6 ms at 350 x 11297)."""
        r = np.exp(y, out=np.empty_like(y))           # (an array even when 0-d)
        r *= sum_along(g, axis)
        return np.subtract(g, r, out=r)

    @quiet
    def fast_residual_dropout(self, res, y, p, rng_state):
        """The mask is bernoulli's draw, so the kept elements are those dropout keeps; the
        branch is dropped and scaled in its own dtype, then added in the residual's."""
        mask = None
        if p > 0:
            mask = self.bernoulli(rng_state, 1.0 - p, y.shape, _dtypes.bool_)
            y = np.multiply(y, mask, dtype=y.dtype)
            y *= y.dtype.type(1.0 / (1.0 - p))
        return np.add(res, y, dtype=res.dtype), mask

    @quiet
    def fast_layer_norm(self, x, w, b, n_norm, eps, out_dtype=None):
        """Rows of the (M, N) view: x - mean is written into the output and normalized in
        place there; the variance is an einsum row dot product (no squared temporary)."""
        y, mean, rstd = cpu_layer_norm.layer_norm(x, w, b, n_norm, eps)
        return (y if out_dtype is None else y.astype(out_dtype.to_numpy(), copy=False)), mean, rstd

    @quiet
    def fast_layer_norm_backward(self, g, x, w, mean, rstd, n_norm, need_dw, need_db, acc=None):
        """One (M, N) temporary (g * w, none without a weight): xhat is computed in dx's
        buffer and turned into dx in place."""
        return cpu_layer_norm.layer_norm_backward(g, x, w, mean, rstd, n_norm, need_dw, need_db, acc)

    @quiet
    def fast_relu_backward(self, g, y):
        """g's bits ANDed with 0 where y <= 0, all ones elsewhere: +0 there even for a NaN g,
        as the composition's masked fill, in a quarter of np.where's time (which branches on
        every element)."""
        ints = np.dtype(f"i{g.dtype.itemsize}")
        keep = (y <= 0).view(np.uint8).astype(ints) - 1         # 0 where y <= 0, else -1
        return (g.view(ints) & keep).view(g.dtype)

    @quiet
    def fast_max_pool2d(self, x, k, s, p, d, ho, wo):
        """The running maximum over strided tap views, arithmetic only (cpu_pool.py)."""
        return cpu_pool.max_pool2d(x, k, s, p, d, ho, wo)

    @quiet
    def fast_batch_norm(self, x, w, b, rm, rv, training, momentum, eps, residual=None, relu=False):
        """Per-channel sums as BLAS products with ones, each term applied in place (cpu_batch_norm.py)."""
        return cpu_batch_norm.batch_norm(x, w, b, rm, rv, training, momentum, eps, residual, relu)

    @quiet
    def fast_batch_norm_backward(self, g, x, w, mean, rstd, training, need_dx, need_dw, need_db):
        """xhat recomputed once, into the buffer that becomes dx (cpu_batch_norm.py)."""
        return cpu_batch_norm.batch_norm_backward(g, x, w, mean, rstd, training, need_dx, need_dw, need_db)

    @quiet
    def fast_conv2d(self, x, w, b, stride, padding, dilation, groups):
        """im2col and one GEMM per group (cpu_conv.py)."""
        return cpu_conv.conv2d(x, w, b, stride, padding, dilation, groups)

    @quiet
    def fast_conv_transpose2d(self, x, w, stride, padding, dilation, groups, out_hw):
        """conv2d's input gradient, columns added back into place (cpu_conv.py)."""
        return cpu_conv.conv_transpose2d(x, w, stride, padding, dilation, groups, out_hw)

    @quiet
    def fast_conv2d_backward(self, g, x, w, stride, padding, dilation, groups, need_dx, need_dw,
                             need_db):
        """GEMMs with the recomputed columns, a convolution for stride 1's dX (cpu_conv.py)."""
        return cpu_conv.conv2d_backward(g, x, w, stride, padding, dilation, groups, need_dx,
                                        need_dw, need_db)

    # decompositions (ops/linalg/decompositions.py; declared in base.py)
    @quiet
    def fast_linalg_inv(self, a):
        return np.linalg.inv(a)

    @quiet
    def fast_linalg_solve(self, a, b):
        return np.linalg.solve(a, b)

    @quiet
    def fast_linalg_det(self, a):
        return np.asarray(np.linalg.det(a))     # (a NumPy scalar for one matrix)

    @quiet
    def fast_linalg_slogdet(self, a):
        return tuple(np.asarray(r) for r in np.linalg.slogdet(a))

    @quiet
    def fast_linalg_cholesky(self, a):
        return np.linalg.cholesky(a)

    @quiet
    def fast_linalg_qr(self, a, mode):
        return (None, np.linalg.qr(a, "r")) if mode == "r" else tuple(np.linalg.qr(a, mode))

    @quiet
    def fast_linalg_eigh(self, a, uplo):
        return tuple(np.linalg.eigh(a, UPLO=uplo))

    @quiet
    def fast_linalg_svd(self, a, full_matrices):
        return tuple(np.linalg.svd(a, full_matrices=full_matrices))


def _into(r, out):
    if out is None:
        return r
    out[...] = r
    return out


def _scatter_coords(index, axis):
    """Full coordinate arrays for torch-style scatter along `axis` (index's other coords are
    its own positions)."""
    coords = list(np.indices(index.shape, sparse=True))
    coords[axis] = index
    return tuple(coords)
