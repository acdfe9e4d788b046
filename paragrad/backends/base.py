"""The backend boundary: the only thing a new accelerator implements.

A backend owns buffers (its own array type: a NumPy ndarray on `cpu`, a CuPy array on `cuda`)
and implements the primitives below. Everything differentiable above this line composes them,
so a backend that implements only these runs every model.

Conventions every primitive follows:
- `dtype` arguments are `paragrad.dtypes.DType`; shapes are tuples of ints; axes are
  non-negative and already validated by the op layer (primitives do not re-check user input).
- Elementwise inputs already have the result dtype (the op layer casts), and broadcast by
  NumPy rules. Python scalars may appear as the second operand of `binary`.
- Movement primitives return views that share memory with their input where the layout
  allows (as PyTorch's views do); `contiguous` always returns a buffer that owns a
  C-ordered copy unless the input already is one.
- `out=` forms write into an existing buffer of the right shape and dtype and return it.

Fast paths: a backend may define any of the methods named in `FAST_PATHS` (fused kernels).
The op layer calls `backend.fast(name)` and composes primitives when it returns None.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

UNARY_OPS = (
    "neg", "exp", "log", "sqrt", "rsqrt", "abs", "sign", "sin", "cos", "tanh", "sigmoid", "relu",
    "erf", "log1p", "expm1", "reciprocal", "floor", "ceil", "round", "trunc", "not",
    "isnan", "isinf", "isfinite", "asin", "acos", "atan", "asinh", "acosh", "atanh",
)
BINARY_OPS = (
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "floordiv", "mod",
    "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor",
)
REDUCE_OPS = ("sum", "prod", "max", "min")
ARG_REDUCE_OPS = ("argmax", "argmin")

# Optional fused kernels. Signatures are documented where the op layer calls them.
FAST_PATHS = (
    "softmax", "softmax_backward", "log_softmax", "log_softmax_backward",
    "cross_entropy", "cross_entropy_backward", "embedding_backward", "pow_scalar", "roll",
    "layer_norm", "layer_norm_backward", "linear_act", "linear_act_backward", "mlp", "mlp_backward",
    "relu_backward", "sigmoid_backward", "tanh_backward",
    "conv2d", "conv2d_backward", "max_pool2d", "max_pool2d_backward", "batch_norm", "batch_norm_backward",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_backward", "adam_step", "sgd_step",
    "linalg_inv", "linalg_solve", "linalg_det", "linalg_slogdet", "linalg_cholesky", "linalg_qr",
    "linalg_eigh", "linalg_svd",
    # buf[key] for a key of ints and slices, as a view, or None (ops/indexing.py's planner)
    "basic_view",
    # one time step of a recurrent layer's gates (ops/recurrent.py documents the arguments)
    "lstm_cell_forward", "lstm_cell_backward", "gru_cell_forward", "gru_cell_backward",
    "rnn_cell_forward", "rnn_cell_backward",
)
# linalg decompositions (ops/linalg_decompositions.py). Not fused forms of a composition: nothing
# composes them, so the ops raise NotImplementedError on a backend without them (and use them
# even inside fast_paths(False)). Inputs: C-contiguous float32/float64 buffers (..., m, n), any
# batch dims (the op layer broadcasts them to match); results in the input's dtype, batched the
# same way; singular / not positive-definite / non-converging input raises an exception whose
# class is named LinAlgError (np.linalg's, cupy.linalg's), which the op turns into
# paragrad.linalg.LinAlgError (a RuntimeError, as torch's), or yields NaN/inf where the library
# does not check (cupy by default).
#   fast_linalg_inv(a) -> inverse (..., n, n)
#   fast_linalg_solve(a, b) -> x with a @ x = b; a (..., n, n), b (..., n, k), same batch dims
#   fast_linalg_det(a) -> det (...)          fast_linalg_slogdet(a) -> (sign (...), log|det| (...))
#   fast_linalg_cholesky(a) -> lower L (..., n, n), a = L L^T (reads a's lower triangle)
#   fast_linalg_qr(a, mode) -> (Q, R), mode 'reduced' / 'complete' as np.linalg.qr; for 'r',
#     (None, R)
#   fast_linalg_eigh(a, uplo) -> (w (..., n) ascending, V (..., n, n) with a = V diag(w) V^T),
#     reading the triangle uplo ('L' or 'U')
#   fast_linalg_svd(a, full_matrices) -> (U, S, Vh), S (..., min(m, n)) descending
# sigmoid, tanh (ops/unary.py): fast_sigmoid_backward(g, y), fast_tanh_backward(g, y) -> dx
#   from the output y, rounded as ops/unary.py's buffer formulas; None where the kernel can't
#   take the buffers (the op layer composes).
# relu (ops/unary.py): fast_relu_backward(g, y) -> dx = 0 where y <= 0 else g (torch's
#   threshold_backward), g and y of one shape and float dtype.
# max_pool2d (ops/pool.py; x (N, C, H, W), k, s, p, d (h, w) int pairs validated by the op,
#   ho, wo the output size):
#   fast_max_pool2d(x, k, s, p, d, ho, wo) -> (y, idx) (N, C, Ho, Wo), idx int64 flat in H*W
#     (the first maximum of the window's in-bounds taps; a NaN always takes over), or None
#   fast_max_pool2d_backward(gy, idx, h, w, k, s, p, d) -> dx (N, C, H, W) or None
# softmax family (ops/nn.py): fast_softmax(x, axis) -> y; fast_softmax_backward(y, g, axis) -> dx
#   (log_ forms alike, y being the log-softmax output).
# cross_entropy (ops/nn.py, logits (N, C), int64 targets (N,), mean a bool):
#   fast_cross_entropy(x, target, ignore_index, mean) -> (loss () of x's dtype: the sum over
#     counted rows, or that sum / count for a mean; count () of counted rows, any float dtype;
#     lse (N,)); targets arrive checked (ops/nn.py), an out-of-range one may give NaN
#   fast_cross_entropy_backward(x, target, lse, g, count, mean, ignore_index) -> dx
#     = (softmax(x) - onehot(target)) * valid * (g / max(count, 1) if mean else g), g and
#     count the 0-d buffers (g of x's dtype).
# pow (ops/binary.py): fast_pow_scalar(x, exponent) -> x ** exponent for a float buffer and an
#   exponent the op layer would compose from multiplies (2, 3, 4, -2, ...), rounded as those
#   multiplies ((x*x)*x for 3, 1/(x*x) for -2); None where the backend has no kernel for it.
# roll (ops/movement.py): fast_roll(x, shift, axis) -> a new buffer, x rolled by 0 < shift <
#   x.shape[axis] along axis; None where the backend has no kernel for x's layout.
# embedding (ops/embedding.py): fast_embedding_backward(idx, g, num_weights) -> dw
#   (num_weights, D), the rows of g (K, D) summed per id of idx (K,) (int64, checked by the
#   forward), zeros (+0.) where no id points; g C-contiguous, dw of g's dtype; None where the
#   backend has no kernel for g's dtype (the op layer composes).
# linear_act (ops/linalg.py; act 'relu' or 'gelu_tanh'; x (..., in), w (out, in), b (out,) or None):
#   fast_linear_act(x, w, b, act) -> (y, aux), aux = what the backward reads (y for relu,
#     the pre-activation for gelu)
#   fast_linear_act_backward(g, x, w, aux, act, need_dx, need_dw, need_db) -> (dx, dw, db)
# optimizers (optim/adam.py, optim/sgd.py): fast_adam_step(ws, gs, ms, vs, vmaxs, steps, lr=,
#   **hyper) and fast_sgd_step(ws, gs, bufs, firsts, lr=, **hyper) update a whole param group in
#   place and return True, or return False (having done nothing) to let the optimizer compose
#   primitives. lr is a float64 0-d buffer and steps float32 0-d buffers (the counts before this
#   step, which the update advances by one): read on the device, so a captured step replays.
# conv2d (ops/conv.py; x (N, C_in, H, W), w (C_out, C_in/groups, kH, kW), b (C_out,) or None,
#   all C-contiguous, of one dtype (floats or integers); stride, dilation (h, w) pairs of ints
#   >= 1; padding ((top, bottom), (left, right)) ints >= 0 (asymmetric for padding='same');
#   groups an int dividing C_in and C_out; the op layer has validated the geometry and makes
#   unbatched input 4-D):
#   fast_conv2d(x, w, b, stride, padding, dilation, groups) -> y (N, C_out, Ho, Wo), x's dtype
#   fast_conv2d_backward(g, x, w, stride, padding, dilation, groups, need_dx, need_dw, need_db)
#       -> (dx, dw, db): x's, w's and (C_out,) shapes in x's dtype, each None unless needed;
#     g (N, C_out, Ho, Wo) C-contiguous. Either may exist without the other; either may
#     return None to decline a case (the op then composes primitives).
# layer_norm (called by ops/norm.py):
#   fast_layer_norm(x, w, b, n_norm_dims, eps) -> (y, mean, rstd)
#   fast_layer_norm_backward(g, x, w, mean, rstd, n_norm_dims, need_dw, need_db)
#       -> (dx, dw or None, db or None)
# x and g are C-contiguous, non-empty, of one float dtype (float16/bfloat16/float32/float64);
# w and b are C-contiguous buffers of x's dtype and shape x.shape[-n_norm_dims:], or None.
# The op normalizes over the last n_norm_dims dims (>= 1): rows of an (M, N) view with
# N = prod(x.shape[-n_norm_dims:]). eps is a Python float; variance is biased (divide by N).
# y, dx: x's shape and dtype. dw, db: w's shape and dtype (None unless need_dw / need_db; dx is
# always returned). mean and rstd = 1/sqrt(var + eps): shape x.shape[:-n_norm_dims] +
# (1,) * n_norm_dims, dtype float32 for float16/bfloat16 inputs (statistics and all
# arithmetic in float32) else x's dtype. The backward may get mean/rstd from either the fast
# forward or the composite one, so both must use exactly this layout.
# batch_norm (ops/batchnorm.py; x (N, C, *) C-contiguous, non-empty, of a float dtype; w, b
# (C,) C-contiguous of x's dtype or None; rm, rv the (C,) running statistics (any float dtype,
# possibly non-contiguous) or None, which happens only in training; momentum, eps floats):
#   fast_batch_norm(x, w, b, rm, rv, training, momentum, eps) -> (y, mean, rstd) or None
#     Training normalizes with the batch statistics (biased variance) and, with rm/rv given,
#     updates them in place: r = r * (1 - momentum) + stat * momentum, the unbiased variance
#     for rv (the op then bumps their version counters); eval uses rm/rv. mean and
#     rstd = 1/sqrt(var + eps): shape (1, C, 1, ...), dtype float32 for float16/bfloat16
#     inputs (all arithmetic in float32) else x's dtype, the composite's layout.
#   fast_batch_norm_backward(g, x, w, mean, rstd, training, need_dx, need_dw, need_db)
#       -> (dx, dw, db), each None unless needed, or None to decline; g C-contiguous of x's
#     shape and dtype; mean/rstd from either forward (same layout). Training:
#     dx = w * rstd * (g - mean(g) - xhat * mean(g * xhat)), means over every dim but 1;
#     eval: dx = w * rstd * g; dw = sum of g * xhat, db = sum of g per channel.
# Returning None declines (the op composes primitives; a forward that declines has not touched
# rm/rv).
# scaled_dot_product_attention (ops/attention.py), used only with no attn_mask, dropout_p == 0
# and q, k, v 4-D with equal (B, H) (no GQA, no batch broadcasting), L, S, E > 0:
#   fast_scaled_dot_product_attention(q, k, v, scale, is_causal) -> (out, stats) or None
#   fast_scaled_dot_product_attention_backward(q, k, v, out, dout, stats, scale, is_causal)
#       -> (dq, dk, dv) or None
# q (B, H, L, E), k (B, H, S, E), v (B, H, S, Ev), dout (B, H, L, Ev): C-contiguous, one float
# dtype; scale a Python float; is_causal: key j visible to query i iff j <= i (top-left).
# out (B, H, L, Ev) and dq/dk/dv have the inputs' shapes and dtype; stats is the per-row
# logsumexp of the scaled scores, (B, H, L, 1) float32. The backward gets stats from the fast
# forward, or from the composite one when the backend has a fast backward (same layout).
# Returning None declines (e.g. a dtype the kernel lacks): the op then composes primitives.


_BOUND = (int, type(None))       # slice bounds a basic view takes


def plain_basic_key(key, ndim):
    """Whether x[key] on an array buffer of ndim dims is torch's view: a key of ints and slices
    of int bounds with positive steps, no more items than dims (array backends'
    fast_basic_view; anything else goes to the op layer's planner, which gives torch's errors)."""
    items = key if type(key) is tuple else (key,)
    if len(items) > ndim:
        return False
    for k in items:
        if type(k) is not int and not (type(k) is slice and type(k.start) in _BOUND
                                       and type(k.stop) in _BOUND and type(k.step) in _BOUND
                                       and (k.step is None or k.step > 0)):
            return False
    return True


_fast_paths_enabled = [True]


class fast_paths:
    """`with fast_paths(False):` makes every op compose primitives (used to test that each
    fast path agrees with the composition it replaces)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __enter__(self):
        self.prev = _fast_paths_enabled[0]
        _fast_paths_enabled[0] = self.enabled

    def __exit__(self, *exc):
        _fast_paths_enabled[0] = self.prev


class Backend(ABC):
    """One device type. `device_type` is 'cpu' or 'cuda'; buffers carry their own device."""

    device_type: str = "?"
    # whether take() raises IndexError for an out-of-range index itself (NumPy's does); a
    # device's check would read the device on the host at every gather, so the op layer does
    # it instead (ops/index_bounds.py), reading nothing where the indices' range is known
    checks_indices: bool = False

    def fast(self, name):
        """The fused kernel `name` if this backend has one, else None (compose primitives)."""
        if not _fast_paths_enabled[0]:
            return None
        return getattr(self, "fast_" + name, None)

    # ---- transfer / creation -------------------------------------------------------------
    @abstractmethod
    def from_numpy(self, array, dtype, device_index=0):
        """A new buffer holding a copy of a NumPy array, converted to `dtype`."""

    @abstractmethod
    def to_numpy(self, buf):
        """A NumPy array with the buffer's values (may share memory on the CPU)."""

    @abstractmethod
    def empty(self, shape, dtype, device_index=0):
        """An uninitialized buffer."""

    @abstractmethod
    def full(self, shape, value, dtype, device_index=0):
        """A buffer filled with one Python scalar."""

    @abstractmethod
    def copy_(self, dst, src):
        """Write `src` (broadcastable to dst, any dtype) into `dst` in place; returns dst."""

    # ---- random (explicit generator state, reproducible per seed) -------------------------
    @abstractmethod
    def generator(self, seed, device_index=0):
        """A new random generator state seeded with `seed`."""

    def rng_state(self, gen):
        """A JSON-serializable copy of a generator's state (checkpoints store it)."""
        raise NotImplementedError(f"{type(self).__name__} cannot export generator state")

    def set_rng_state(self, gen, state):
        """Restore a state from rng_state into gen; returns the generator to use."""
        raise NotImplementedError(f"{type(self).__name__} cannot import generator state")

    @abstractmethod
    def uniform(self, gen, shape, low, high, dtype, device_index=0):
        """Samples from U[low, high)."""

    @abstractmethod
    def normal(self, gen, shape, mean, std, dtype, device_index=0):
        """Samples from N(mean, std^2)."""

    @abstractmethod
    def bernoulli(self, gen, p, shape, dtype, device_index=0):
        """1 with probability p (a float or a buffer broadcastable to shape), else 0."""

    # ---- elementwise ------------------------------------------------------------------------
    @abstractmethod
    def unary(self, op, x, out=None):
        """One of UNARY_OPS, elementwise. Comparisons-like ops (isnan...) return bool."""

    @abstractmethod
    def binary(self, op, a, b, out=None):
        """One of BINARY_OPS with broadcasting; comparisons return bool. `div` is true
        division for floats; `floordiv`/`mod` follow Python's sign rules (as PyTorch); integer
        `pow` with negative exponents follows PyTorch too (see int_pow)."""

    @abstractmethod
    def where(self, cond, a, b):
        """cond ? a : b with broadcasting; a and b share a dtype."""

    @abstractmethod
    def cast(self, x, dtype):
        """A copy converted to dtype (float->int truncates toward zero, as PyTorch)."""

    # ---- reduce -----------------------------------------------------------------------------
    @abstractmethod
    def reduce(self, op, x, axes, keepdims):
        """One of REDUCE_OPS over `axes` (a tuple). Result dtype = input dtype (the op layer
        casts integers to int64 before summing). float16 sums accumulate in float32."""

    @abstractmethod
    def arg_reduce(self, op, x, axis, keepdims):
        """argmax/argmin along one axis (int64, first occurrence on ties)."""

    @abstractmethod
    def argsort(self, x, axis, descending):
        """int64 indices that sort x along one axis; stable (equal values keep their order),
        NaN counted larger than every number (last ascending, first descending)."""

    # ---- linear algebra ---------------------------------------------------------------------
    @abstractmethod
    def matmul(self, a, b, out=None):
        """Batched matrix product of two >=2-D buffers, batch dims broadcast."""

    # ---- movement ---------------------------------------------------------------------------
    @abstractmethod
    def reshape(self, x, shape):
        """Same elements, new shape (a view when the layout allows)."""

    @abstractmethod
    def permute(self, x, axes):
        """Reorder dimensions (a view)."""

    @abstractmethod
    def expand(self, x, shape):
        """Broadcast to a larger shape without copying (a view)."""

    @abstractmethod
    def slice(self, x, starts, stops, steps):
        """Basic strided slice per axis, steps > 0 (a view)."""

    @abstractmethod
    def pad(self, x, widths, value):
        """Constant padding; widths is ((before, after), ...) per axis, all >= 0."""

    @abstractmethod
    def concat(self, xs, axis):
        """Join buffers of one dtype along an existing axis."""

    @abstractmethod
    def contiguous(self, x):
        """A C-ordered buffer with x's values (x itself if it already is one)."""

    @abstractmethod
    def flip(self, x, axes):
        """A copy with the order of elements reversed along axes."""

    # ---- indexing ---------------------------------------------------------------------------
    @abstractmethod
    def take(self, x, index, axis):
        """x indexed along `axis` by an int64 buffer of any shape:
        out.shape = x.shape[:axis] + index.shape + x.shape[axis+1:]. Negative indices wrap;
        out-of-range indices raise IndexError where `checks_indices` is true, else the op
        layer has checked them (without a host read where their range is known) and an
        out-of-range one may wrap."""

    @abstractmethod
    def gather(self, x, index, axis):
        """torch.gather: out[i][j] = x[index[i][j]][j] for axis 0 (index has x's ndim)."""

    @abstractmethod
    def scatter_add(self, base, index, src, axis):
        """torch.scatter_add_, in place on base: base[index[i][j]][j] += src[i][j] (axis 0);
        duplicate indices accumulate. Returns base."""

    @abstractmethod
    def scatter(self, base, index, src, axis):
        """torch.scatter_, in place: base[index[i][j]][j] = src[i][j] (axis 0). Returns base."""

    @abstractmethod
    def nonzero(self, x):
        """Indices of non-zero elements, an int64 buffer of shape (n, ndim) (synchronizes)."""

    # ---- DLPack (paragrad/dlpack.py) ----------------------------------------------------------
    def to_dlpack(self, buf, **kwargs):
        """A DLPack capsule sharing buf's memory: the array API's `buf.__dlpack__(**kwargs)`
        (stream, max_version, dl_device, copy), which NumPy and CuPy arrays implement."""
        return buf.__dlpack__(**kwargs)

    def from_dlpack(self, producer, device_index=0):
        """A buffer sharing the memory of `producer` (an object with __dlpack__ and
        __dlpack_device__ whose memory is on this backend's device)."""
        raise NotImplementedError(f"the {self.device_type} backend has no DLPack import")

    # ---- bookkeeping ------------------------------------------------------------------------
    def owns_memory(self, buf):
        """True if buf is not a view of another buffer (the engine may then keep it as a
        leaf's .grad without copying)."""
        return getattr(buf, "base", None) is None

    def synchronize(self, device_index=0):
        """Wait for queued work (a no-op on synchronous backends)."""

    def step_graph(self, device_index=0):
        """For pg.jit: an object that runs a function eagerly (warmup(fn)), records it into a
        replayable graph (capture(fn, name)), replays it (replay()) and counts its nodes
        (num_nodes()) — or None where the device has no graphs (pg.jit then runs eagerly)."""
        return None


def int_pow(xp, a, b):
    """Integer a ** b with PyTorch's rule for negative exponents (NumPy raises there, CuPy's
    result is unspecified): 1 for base 1, +-1 for base -1 (by the exponent's parity), else 0.
    xp is numpy or cupy; no host read, so it can be captured."""
    a, b = xp.asarray(a), xp.asarray(b)
    kept = xp.power(a, xp.maximum(b, 0).astype(b.dtype))
    negative_rule = xp.where(a == 1, 1, xp.where(a == -1, 1 - 2 * (b % 2), 0)).astype(kept.dtype)
    return xp.where(b < 0, negative_rule, kept)
