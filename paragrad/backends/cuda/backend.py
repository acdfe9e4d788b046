"""The CUDA backend: every primitive of base.py on CuPy arrays.

GEMMs go through cuBLAS (matmul/cublas.py), random numbers through a counter-based NVRTC
kernel (kernels/random.py); everything else is CuPy's ufuncs, reductions and indexing. The
primitives CuPy and NumPy share live in ../array.py.
"""
from __future__ import annotations

import math

import cupy
import cupyx
import cupyx.scipy.special
import numpy as np

from ... import capture
from ...dtypes import bfloat16 as _bf16

from ..array import ArrayBackend, int_pow, plain_basic_key, sole_view
from ..quiet_numpy import quiet
from . import cudnn_frontend, cudnn_rnn, fused_chains
from .kernels import (batch_norm, column_sums, cross_entropy, elementwise, gelu, indexing, join, layer_norm,
                      max_pool, optimizer, random, recurrent, softmax)
from .matmul import cublas, cublaslt, mlp
from .runtime import graphs, memory
from .runtime.channels_last import follows_nhwc, in_memory_order, runs_nhwc
from .kernels.row_views import c_contiguous, copy_rows

_UNARY = {
    "neg": cupy.negative, "exp": cupy.exp, "log": cupy.log, "sqrt": cupy.sqrt, "abs": cupy.abs,
    "sin": cupy.sin, "cos": cupy.cos, "tanh": cupy.tanh, "log1p": cupy.log1p, "expm1": cupy.expm1,
    "reciprocal": cupy.reciprocal, "floor": cupy.floor, "ceil": cupy.ceil, "round": cupy.rint,
    "trunc": cupy.trunc, "isnan": cupy.isnan, "isinf": cupy.isinf, "isfinite": cupy.isfinite,
    "asin": cupy.arcsin, "acos": cupy.arccos, "atan": cupy.arctan, "asinh": cupy.arcsinh,
    "acosh": cupy.arccosh, "atanh": cupy.arctanh,
}
_BINARY = {
    "add": cupy.add, "sub": cupy.subtract, "mul": cupy.multiply, "div": cupy.true_divide,
    "pow": cupy.power, "maximum": cupy.maximum, "minimum": cupy.minimum,
    "floordiv": cupy.floor_divide, "mod": cupy.remainder, "eq": cupy.equal, "ne": cupy.not_equal,
    "lt": cupy.less, "le": cupy.less_equal, "gt": cupy.greater, "ge": cupy.greater_equal,
}
_BITWISE = {"and": (cupy.logical_and, cupy.bitwise_and), "or": (cupy.logical_or, cupy.bitwise_or),
            "xor": (cupy.logical_xor, cupy.bitwise_xor)}
# half-precision float dtypes, summed with a float32 accumulator (compared as dtypes: the
# .name property of a NumPy dtype is slow enough to show in per-op overhead)
_HALF = tuple(d for d in (np.dtype(np.float16), _bf16.np) if d is not None)
_COLUMN_SUM_DTYPES = (np.dtype(np.float32),) + _HALF     # column_sums.cu
_PY_NUMBERS = (int, float, bool)


def _joined_shape(xs, axis):
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return tuple(shape)


def _relu_grad(g, y):
    """One launch: 16 bytes an access where it can (bf16 activations), else CuPy's kernel."""
    dx = elementwise.activation_grad("relu", g, y)
    return dx if dx is not None else cublaslt.relu_grad(g, y)


def _rounded_back(r, dtype):
    """A float16/bfloat16 op's result in its own dtype: CuPy computes some of them wider and
    returns the wider dtype (erf of float16 in float64; bfloat16 with a Python float in
    float32, having no weak scalars for it); rounding once matches torch's opmath."""
    return r.astype(dtype) if r.dtype != dtype and r.dtype.kind == "f" else r
# atomic adds in the buffer's own dtype; float16 is left out (its atomics add in half precision:
# 4096 ones would stop at 2048) to accumulate in float32 and round once, as torch's scatter_add
_SCATTER_ADD_DTYPES = tuple(np.dtype(t) for t in (np.int32, np.int64, np.float32, np.float64,
                                                   np.uint32, np.uint64))
# sums over the rows of at most this many rows run as one cuBLAS product (cublas.column_sums);
# longer columns keep CuPy's reduction tree, whose rounding error grows more slowly
_GEMM_SUM_ROWS = 4096
_GEMM_SUM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_REDUCE = {"sum": cupy.sum, "prod": cupy.prod, "max": cupy.max, "min": cupy.min}

_sigmoid = cupy.ElementwiseKernel(
    "T x", "T y", "y = x >= 0 ? T(1) / (T(1) + exp(-x)) : exp(x) / (T(1) + exp(x))", "pg_sigmoid")
_rsqrt = cupy.ElementwiseKernel("T x", "T y", "y = rsqrt(x)", "pg_rsqrt")
_sign = cupy.ElementwiseKernel(   # torch: sign(nan) = 0
    "T x", "T y", "y = x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0))", "pg_sign")
_relu = cupy.ElementwiseKernel("T x", "T y", "y = x < T(0) ? T(0) : x", "pg_relu")   # NaN stays NaN, as torch


def _dt(dtype):
    return dtype.to_numpy()


class CUDABackend(ArrayBackend):
    device_type = "cuda"
    xp = cupy
    takes_channels_last = True      # NHWC convolutions, batch_norm and max_pool2d

    def __init__(self):
        if cupy.cuda.runtime.getDeviceCount() == 0:
            raise ImportError("no CUDA device is visible")
        memory.install()

    def describe(self):
        props = cupy.cuda.runtime.getDeviceProperties(0)
        drv = cupy.cuda.runtime.driverGetVersion()
        rt = cupy.cuda.runtime.runtimeGetVersion()
        return (f"{props['name'].decode()}, {cupy.cuda.runtime.getDeviceCount()} device(s), "
                f"driver CUDA {drv // 1000}.{drv % 1000 // 10}, runtime {rt // 1000}.{rt % 1000 // 10}, "
                f"cupy {cupy.__version__}")

    @staticmethod
    def _on(device_index):
        return cupy.cuda.Device(device_index or 0)

    # ---- transfer / creation -----------------------------------------------------------------
    def from_numpy(self, array, dtype, device_index=0):
        with self._on(device_index):
            return memory.upload(np.asarray(array).astype(_dt(dtype), copy=False))

    def to_numpy(self, buf):
        capture.forbid_sync("copying a CUDA tensor to the host")
        return cupy.asnumpy(buf)

    def empty(self, shape, dtype, device_index=0):
        with self._on(device_index):
            return cupy.empty(shape, dtype=_dt(dtype))

    @quiet      # the fill value becomes a NumPy scalar of dtype on the host: 1e30 -> inf silently
    def full(self, shape, value, dtype, device_index=0):
        with self._on(device_index):
            y = elementwise.full(shape, value, _dt(dtype))
            return y if y is not None else cupy.full(shape, value, dtype=_dt(dtype))

    def copy_(self, dst, src):
        if isinstance(src, np.ndarray):
            src = memory.upload(src)
        if (type(src) is cupy.ndarray and src.dtype == dst.dtype and src.shape == dst.shape
                and src._c_contiguous and dst._c_contiguous):
            n, s, d = dst.nbytes, src.data.ptr, dst.data.ptr
            if s + n <= d or d + n <= s:    # (not overlapping) a memcpy: a third of copyto's host time
                dst.data.copy_from_device_async(src.data, n)
                return dst
        if type(src) is cupy.ndarray and copy_rows(dst, src):
            return dst
        cupy.copyto(dst, src, casting="unsafe")
        return dst

    def from_dlpack(self, producer, device_index=0):
        with self._on(device_index):        # (CuPy passes its current stream to the producer)
            return cupy.from_dlpack(producer)

    def data_ptr(self, buf):
        return buf.data.ptr

    def owns_memory(self, buf):
        # a view that alone holds its base is as private as an owner: a reshape of a fresh
        # result (a bias gradient's column sums, a folded GEMM's output) becomes a leaf's
        # .grad as it is, where a copy per parameter and step was made before
        return buf.base is None or sole_view(buf)

    def synchronize(self, device_index=0):
        with self._on(device_index):
            cupy.cuda.get_current_stream().synchronize()

    def launch_pending(self):
        fused_chains.flush()

    # ---- random ------------------------------------------------------------------------------
    def generator(self, seed, device_index=0):
        with self._on(device_index):
            return cupy.asarray(np.array([seed % 2**64, 0], dtype=np.uint64))

    def rng_state(self, gen):
        seed, offset = (int(v) for v in cupy.asnumpy(gen))
        return {"seed": seed, "offset": offset}

    def set_rng_state(self, gen, state):
        gen[...] = cupy.asarray(np.array([state["seed"], state["offset"]], dtype=np.uint64))
        return gen

    def _draw(self, name, gen, shape, a, b, dtype):
        out = random.draw(name, gen, shape, a, b, dtype.name == "float64")
        return out if out.dtype == _dt(dtype) else out.astype(_dt(dtype))

    def uniform(self, gen, shape, low, high, dtype, device_index=0):
        return self._draw("uniform", gen, shape, low, high, dtype)

    def normal(self, gen, shape, mean, std, dtype, device_index=0):
        return self._draw("normal", gen, shape, mean, std, dtype)

    def bernoulli(self, gen, p, shape, dtype, device_index=0):
        from ...dtypes import float32
        u = self._draw("uniform", gen, shape, 0.0, 1.0, float32)
        return (u < p).astype(_dt(dtype))

    # ---- elementwise -------------------------------------------------------------------------
    def unary(self, op, x, out=None):
        if out is None and runs_nhwc(x):
            return in_memory_order(self.unary, op, x)
        y = elementwise.unary(op, x, out)
        if y is not None:
            return y
        if out is None and x.dtype in _HALF:
            return _rounded_back(self._unary(op, x, None), x.dtype)
        return self._unary(op, x, out)

    def _unary(self, op, x, out):
        f = _UNARY.get(op)
        if f is not None:
            return f(x, out=out)
        if op == "relu":
            return _relu(x, out) if out is not None else _relu(x)
        if op == "sigmoid":
            return _sigmoid(x, out) if out is not None else _sigmoid(x)
        if op == "rsqrt":
            return _rsqrt(x, out) if out is not None else _rsqrt(x)
        if op == "sign":
            if x.dtype == np.bool_:
                return x.copy() if out is None else cupy.copyto(out, x) or out
            return _sign(x, out) if out is not None else _sign(x)
        if op == "erf":
            return cupyx.scipy.special.erf(x, out=out) if out is not None else cupyx.scipy.special.erf(x)
        if op == "not":
            return cupy.logical_not(x, out=out) if x.dtype == np.bool_ else cupy.invert(x, out=out)
        raise ValueError(f"cuda backend: unknown unary op {op!r}")

    def where(self, cond, a, b):
        if any(runs_nhwc(v) for v in (cond, a, b)) and \
                all(type(v) is not cupy.ndarray or v.ndim <= 4 for v in (cond, a, b)):
            return in_memory_order(lambda _, c, a, b: ArrayBackend.where(self, c, a, b), None,
                                    cond, a, b)
        return super().where(cond, a, b)

    def binary(self, op, a, b, out=None):
        if out is None and ((runs_nhwc(a) and (type(b) is not cupy.ndarray or b.ndim <= 4))
                            or follows_nhwc(a, b)):
            return in_memory_order(self.binary, op, a, b)
        c = elementwise.binary(op, a, b, out)
        if c is None:
            c = elementwise.binary_strided(op, a, b, out)
        if c is not None:
            return c
        if out is None and type(b) in _PY_NUMBERS and getattr(a, "dtype", None) in _HALF:
            return _rounded_back(self._binary(op, a, b, None), a.dtype)
        if out is None and type(a) in _PY_NUMBERS and getattr(b, "dtype", None) in _HALF:
            return _rounded_back(self._binary(op, a, b, None), b.dtype)
        return self._binary(op, a, b, out)

    def _binary(self, op, a, b, out):
        f = _BINARY.get(op)
        if f is not None:
            if op == "pow" and cupy.asarray(a).dtype.kind in "iu" and cupy.asarray(b).dtype.kind in "iu":
                r = int_pow(cupy, a, b)
                return r if out is None else cupy.copyto(out, r, casting="unsafe") or out
            return f(a, b, out=out)
        if op in _BITWISE:
            logical, bitwise = _BITWISE[op]
            return (logical if a.dtype == np.bool_ else bitwise)(a, b, out=out)
        raise ValueError(f"cuda backend: unknown binary op {op!r}")

    def cast(self, x, dtype):
        target = _dt(dtype)
        if runs_nhwc(x):       # (a channels-last conv weight under autocast, or its gradient)
            y = elementwise.cast(x.transpose(0, 2, 3, 1), target)
            y = None if y is None else y.transpose(0, 3, 1, 2)
        else:
            y = elementwise.cast(x, target)
        if y is not None:
            return y
        if x.dtype.kind == "f" and target.kind == "u":   # wrap around like the CPU, not saturate
            x = x.astype(np.int64)
        return x.astype(target)

    def fast_cast_many(self, xs, dtype):
        return elementwise.cast_many(xs, _dt(dtype))

    # ---- reduce ------------------------------------------------------------------------------
    def reduce(self, op, x, axes, keepdims):
        k = len(axes)
        if (op == "sum" and x.dtype in _COLUMN_SUM_DTYPES and axes == tuple(range(k)) and 0 < k < x.ndim
                and x.size and x._c_contiguous):
            # over the leading axes (a Linear layer's bias gradient): column_sums.cu's two
            # launches, float32 accumulation, one rounding (CuPy's column reduction of a half
            # buffer ran at a tenth of the memory bandwidth, of a float32 one at a fifth)
            rest = x.shape[k:]
            x2 = x.reshape(-1, math.prod(rest))
            sums = column_sums.column_sums(x2)
            if sums is None and x.dtype in _HALF:       # a product with a ones vector instead
                sums = cublas.column_sums(x2)
            if sums is not None:
                return sums.reshape((1,) * k + rest if keepdims else rest)
        if op == "sum" and x.dtype in _HALF:   # accumulate in float32
            return cupy.sum(x, axis=axes, keepdims=keepdims, dtype=np.float32).astype(x.dtype)
        if (op == "sum" and axes == (0,) and x.ndim == 2 and not keepdims and x.dtype in _GEMM_SUM_DTYPES
                and 0 < x.shape[0] <= _GEMM_SUM_ROWS and x.shape[1]):
            return cublas.column_sums(x)      # a Linear layer's bias gradient
        return cupy.asarray(_REDUCE[op](x, axis=axes, keepdims=keepdims), dtype=x.dtype)

    def arg_reduce(self, op, x, axis, keepdims):
        f = cupy.argmax if op == "argmax" else cupy.argmin
        r = f(x, axis=axis)
        if keepdims:
            r = cupy.expand_dims(r, axis)
        return r.astype(np.int64, copy=False)

    def concat(self, xs, axis):
        if axis == 0 and len(xs) > 2:       # a batch of windows, a stack of samples
            out = join.join_rows(xs)
            if out is not None:
                return out
        if len(xs) > 1 and capture.active():
            # CuPy joins more than 8 small arrays in one kernel that reads a table of their
            # addresses uploaded from the host, and a capture forbids uploads (clip_grad_norm_
            # stacks one norm per parameter): copy each into its slice instead
            out = cupy.empty(_joined_shape(xs, axis), cupy.result_type(*xs))
            at = 0
            for x in xs:
                out[(slice(None),) * axis + (slice(at, at + x.shape[axis]),)] = x
                at += x.shape[axis]
            return out
        return cupy.concatenate(xs, axis=axis)

    def argsort(self, x, axis, descending):
        if x.dtype == _bf16.np:    # CuPy sorts no bfloat16; float32 holds every value exactly
            x = x.astype(np.float32)
        if descending:      # stable descending: ascending over the reversed axis, reversed back
            n = x.shape[axis]
            idx = cupy.flip(cupy.argsort(cupy.flip(x, axis), axis=axis), axis)
            return (n - 1 - idx).astype(np.int64, copy=False)
        return cupy.argsort(x, axis=axis).astype(np.int64, copy=False)

    # ---- linear algebra ----------------------------------------------------------------------
    def matmul(self, a, b, out=None):
        if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
            return cublas.matmul(a, b, out)
        r = cupy.matmul(a, b)
        return r if out is None else cupy.copyto(out, r) or out

    # ---- movement ----------------------------------------------------------------------------
    def slice(self, x, starts, stops, steps):
        return x[tuple(slice(a, b, c) for a, b, c in zip(starts, stops, steps))]

    def contiguous(self, x):
        return c_contiguous(x)

    # ---- indexing ----------------------------------------------------------------------------
    def take(self, x, index, axis):     # (checks_indices is False: the op layer checks them)
        if axis == 0:
            y = indexing.take_rows(x, index)
            if y is not None:
                return y
        return cupy.take(x, index, axis=axis)

    def scatter_add(self, base, index, src, axis):
        if base.dtype in _SCATTER_ADD_DTYPES:
            cupyx.scatter_add(base, _coords(index, axis), src)
            return base
        # CuPy's atomic adds lack bfloat16 and the small integers: accumulate wider, round once
        wide = np.float32 if base.dtype in _HALF else np.int64
        acc = base.astype(wide)
        cupyx.scatter_add(acc, _coords(index, axis), cupy.asarray(src).astype(wide))
        base[...] = acc.astype(base.dtype)
        return base

    def scatter(self, base, index, src, axis):
        base[_coords(index, axis)] = src
        return base

    def nonzero(self, x):
        capture.forbid_sync("nonzero() (its output size depends on the data)")
        return cupy.stack(cupy.nonzero(x), axis=-1).astype(np.int64).reshape(-1, x.ndim)

    # ---- fast paths (kernels/, matmul/, cudnn_frontend.py; signatures in ../fast_paths.py)
    def fast_lstm_cell_forward(self, gi, hh, c_prev, act, c, tanh_c, h):
        return recurrent.lstm_forward(gi, hh, c_prev, act, c, tanh_c, h)

    def fast_lstm_cell_backward(self, dh, dc, act, c_prev, tanh_c, dgates, dc_prev):
        return recurrent.lstm_backward(dh, dc, act, c_prev, tanh_c, dgates, dc_prev)

    def fast_gru_cell_forward(self, gi, hh, b_hn, h_prev, act, ghn, h):
        return recurrent.gru_forward(gi, hh, b_hn, h_prev, act, ghn, h)

    def fast_gru_cell_backward(self, dh, h_prev, act, ghn, dgi, dgh, dh_prev):
        return recurrent.gru_backward(dh, h_prev, act, ghn, dgi, dgh, dh_prev)

    def fast_rnn_cell_forward(self, gi, hh, h, nonlinearity):
        return recurrent.rnn_forward(gi, hh, h, nonlinearity)

    def fast_rnn_cell_backward(self, dh, h, dpre, nonlinearity):
        return recurrent.rnn_backward(dh, h, dpre, nonlinearity)

    def fast_softmax(self, x, axis):
        return softmax.softmax(x, axis)

    def fast_log_softmax(self, x, axis):
        return softmax.softmax(x, axis, log=True)

    def fast_softmax_backward(self, y, g, axis):
        return softmax.softmax_backward(y, g, axis)

    def fast_log_softmax_backward(self, y, g, axis):
        return softmax.softmax_backward(y, g, axis, log=True)

    def fast_cross_entropy(self, x, target, ignore_index, mean, out_dtype=None):
        return cross_entropy.cross_entropy(x, target, ignore_index, mean, None if out_dtype is None else _dt(out_dtype))

    def fast_cross_entropy_backward(self, x, target, lse, g, count, mean, ignore_index):
        return cross_entropy.cross_entropy_backward(x, target, lse, g, count, mean, ignore_index)

    def fast_layer_norm(self, x, w, b, n_norm_dims, eps, out_dtype=None):
        return layer_norm.layer_norm(x, w, b, n_norm_dims, eps, None if out_dtype is None else _dt(out_dtype))

    def fast_layer_norm_backward(self, g, x, w, mean, rstd, n_norm_dims, need_dw, need_db, acc=None):
        return layer_norm.layer_norm_backward(g, x, w, mean, rstd, n_norm_dims, need_dw, need_db, acc)

    def fast_batch_norm(self, x, w, b, rm, rv, training, momentum, eps, residual=None, relu=False):
        return batch_norm.batch_norm(x, w, b, rm, rv, training, momentum, eps, residual, relu)

    def fast_batch_norm_backward(self, g, x, w, mean, rstd, training, need_dx, need_dw, need_db):
        return batch_norm.batch_norm_backward(g, x, w, mean, rstd, training, need_dx, need_dw, need_db)

    def fast_max_pool2d(self, x, k, s, p, d, ho, wo):
        return max_pool.max_pool2d(x, k, s, p, d, ho, wo)

    def fast_max_pool2d_backward(self, gy, idx, h, w, k, s, p, d):
        return max_pool.max_pool2d_backward(gy, idx, h, w, k, s, p, d)

    def fast_basic_view(self, x, key):
        """x[key] by CuPy's basic indexing (a view, 0-d included) for a key of in-range ints and
        slices with positive steps; None for anything else."""
        if not plain_basic_key(key, x.ndim):
            return None
        try:
            return x[key]
        except IndexError:      # an int out of range
            return None

    def fast_rnn(self, mode, x, hx, cx, weights, **options):
        """A whole recurrent stack in one cuDNN call (ops/neural/recurrent_stack.py)."""
        return cudnn_rnn.rnn_forward(mode, x, hx, cx, weights, **options)

    def fast_rnn_backward(self, ctx, dy, dhy, dcy, need_dweights):
        return cudnn_rnn.rnn_backward(ctx, dy, dhy, dcy, need_dweights=need_dweights)

    def fast_joined_view(self, pieces, axis):
        """The pieces' one allocation viewed whole: each piece has the first's strides and
        starts where the previous one ends along axis."""
        first = pieces[0]
        step = first.strides[axis]
        at = first.data.ptr
        for p in pieces:
            if (p.data.mem is not first.data.mem or p.strides != first.strides or p.dtype != first.dtype
                    or p.data.ptr != at or p.shape[:axis] != first.shape[:axis]
                    or p.shape[axis + 1:] != first.shape[axis + 1:]):
                return None
            at += p.shape[axis] * step
        shape = first.shape[:axis] + (sum(p.shape[axis] for p in pieces),) + first.shape[axis + 1:]
        # (inside the allocation: the pieces tile it along axis, and each piece lies inside)
        return cupy.ndarray(shape, first.dtype, first.data, strides=first.strides)

    def fast_roll(self, x, shift, axis):
        return indexing.roll(x, shift, axis)

    def fast_pow_scalar(self, x, exponent):
        return elementwise.power(x, exponent)

    def fast_embedding_backward(self, idx, g, num_weights):
        if g.dtype in _HALF:        # summed in float32 and rounded once, as torch's
            dw = indexing.row_sums(idx, g.astype(np.float32), num_weights)
            return None if dw is None else dw.astype(g.dtype)
        return indexing.row_sums(idx, g, num_weights)

    def fast_relu_backward(self, g, y):
        if runs_nhwc(y):
            return in_memory_order(lambda _, g, y: _relu_grad(g, y), None, g, y)
        return _relu_grad(g, y)

    def fast_sigmoid_backward(self, g, y):
        return elementwise.activation_grad("sigmoid", g, y)

    def fast_tanh_backward(self, g, y):
        return elementwise.activation_grad("tanh", g, y)

    def fast_dropout(self, x, p, rng_state):
        if runs_nhwc(x):           # (its mask then lies channels-last too: see the backward)
            return in_memory_order(lambda _, x: random.dropout(x, p, rng_state), None, x)
        return random.dropout(x, p, rng_state)

    def fast_dropout_backward(self, g, mask, p, dtype=None):
        dtype = None if dtype is None else _dt(dtype)
        if runs_nhwc(mask):
            return in_memory_order(lambda _, g, m: random.dropout_backward(g, m, p, dtype), None, g, mask)
        return random.dropout_backward(g, mask, p, dtype)

    def fast_residual_dropout(self, res, y, p, rng_state):
        return random.residual_dropout(res, y, p, rng_state)

    def fast_gelu(self, x, approximate):
        if runs_nhwc(x):
            return in_memory_order(lambda _, x: gelu.gelu(x, approximate), None, x)
        return gelu.gelu(x, approximate)

    def fast_gelu_backward(self, g, x, approximate):
        if runs_nhwc(x):
            return in_memory_order(lambda _, g, x: gelu.gelu_backward(g, x, approximate), None, g, x)
        return gelu.gelu_backward(g, x, approximate)

    def fast_linear_bias(self, x, w, b):
        return cublaslt.linear_bias(x, w, b)

    def fast_linear_act(self, x, w, b, act):
        return cublaslt.linear_act(x, w, b, act)

    def fast_linear_act_backward(self, g, x, w, aux, act, need_dx, need_dw, need_db):
        return cublaslt.linear_act_backward(g, x, w, aux, act, need_dx, need_dw, need_db)

    def fast_mlp(self, x, layers):
        return mlp.mlp(x, layers)

    def fast_mlp_backward(self, g, layers, saved, need_dx, needs):
        return mlp.mlp_backward(g, layers, saved, need_dx, needs)

    def fast_conv2d(self, x, w, b, stride, padding, dilation, groups):
        return cudnn_frontend.conv2d(x, w, b, stride, padding, dilation, groups)

    def fast_conv2d_backward(self, g, x, w, stride, padding, dilation, groups, need_dx, need_dw, need_db):
        return cudnn_frontend.conv2d_backward(g, x, w, stride, padding, dilation, groups, need_dx, need_dw, need_db)

    def fast_scaled_dot_product_attention(self, q, k, v, scale, is_causal, dropout_p=0.0, rng_state=None):
        return cudnn_frontend.sdpa(q, k, v, scale, is_causal, dropout_p, rng_state)

    def fast_scaled_dot_product_attention_backward(self, q, k, v, out, dout, stats, scale, is_causal,
                                                   dropout_p=0.0, rng=None):
        return cudnn_frontend.sdpa_backward(q, k, v, out, dout, stats, scale, is_causal, dropout_p, rng)

    def step_graph(self, device_index=0):
        return graphs.StepGraph(device_index, self.copy_)

    def fast_adam_step(self, *bufs, **hyper):
        return optimizer.adam_step(*bufs, **hyper)

    def fast_sgd_step(self, *bufs, **hyper):
        return optimizer.sgd_step(*bufs, **hyper)

    def fast_unscale_grads(self, grads, found_inf, inv_scale):
        return optimizer.unscale_grads(grads, found_inf, inv_scale)

    def fast_sum_of_squares(self, bufs):
        return optimizer.sum_of_squares(bufs)

    # decompositions (ops/linalg/decompositions.py): cupy.linalg, as the NumPy backend's np.linalg
    def fast_linalg_inv(self, a):
        with _linalg_errors():
            return cupy.linalg.inv(a)

    def fast_linalg_solve(self, a, b):
        with _linalg_errors():
            return cupy.linalg.solve(a, b)

    def fast_linalg_det(self, a):
        return cupy.linalg.det(a)

    def fast_linalg_slogdet(self, a):
        return tuple(cupy.linalg.slogdet(a))

    def fast_linalg_cholesky(self, a):
        with _linalg_errors():
            return cupy.linalg.cholesky(a)

    def fast_linalg_qr(self, a, mode):
        return (None, cupy.linalg.qr(a, "r")) if mode == "r" else tuple(cupy.linalg.qr(a, mode))

    def fast_linalg_eigh(self, a, uplo):
        return tuple(cupy.linalg.eigh(a, UPLO=uplo))

    def fast_linalg_svd(self, a, full_matrices):
        return tuple(cupy.linalg.svd(a, full_matrices=full_matrices))


if fused_chains.ENABLED:        # every primitive but these launches the pending chain first
    fused_chains.flush_before(CUDABackend, keep=fused_chains.NO_FLUSH)


def _linalg_errors():
    """cuSOLVER's status checked, so a singular or non-positive-definite matrix raises
    LinAlgError as torch does on cuda. Reading the status synchronizes (torch does the same), so
    not while a stream is being captured: there the result is NaN, as cuSOLVER leaves it."""
    capturing = cupy.cuda.get_current_stream().is_capturing()
    return cupyx.errstate(linalg="ignore" if capturing else "raise")


def _coords(index, axis):
    """Coordinate arrays for torch-style scatter along `axis` (broadcast, not materialized)."""
    coords = []
    for d, n in enumerate(index.shape):
        if d == axis:
            coords.append(index)
        else:
            shape = [1] * index.ndim
            shape[d] = n
            coords.append(cupy.arange(n).reshape(shape))
    return tuple(coords)
