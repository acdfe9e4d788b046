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

Fast paths: a backend may define any of the methods named in `FAST_PATHS` (fused kernels,
documented with their signatures in fast_paths.py). The op layer calls `backend.fast(name)`
and composes primitives when it returns None. The linear-algebra decompositions are optional
primitives with nothing to compose: declared here, they raise a clear error on a backend
without them.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

from .fast_paths import FAST_PATHS, _fast_paths_enabled, fast_paths  # noqa: F401  (re-exported)

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


class Backend(ABC):
    """One device type. `device_type` is 'cpu' or 'cuda'; buffers carry their own device."""

    device_type: str = "?"
    # whether take() raises IndexError for an index outside [-size, size) itself, taking a
    # negative one from the end (NumPy's does), so that x[idx] needs no check of its own; a
    # device's check would read the device on the host at every gather, so the op layer does
    # it instead (ops/indexing/index_bounds.py), reading nothing where the indices' range is
    # known. Ops that refuse negative indices (embedding, index_select) check in the op layer
    # on every backend.
    checks_indices: bool = False
    # whether the fast paths of 4-D activations (conv2d, batch_norm, max_pool2d) take a
    # channels-last buffer as it is (NHWC kernels); else the op layer hands them row-major copies
    takes_channels_last: bool = False

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

    # ---- linear-algebra decompositions (optional) ---------------------------------------------
    # Nothing composes them, so the ops (ops/linalg/decompositions.py) call these methods
    # directly, even inside fast_paths(False), and a backend without one raises the error below.
    # Inputs: C-contiguous float32/float64 buffers (..., m, n), any batch dims (the op layer
    # broadcasts them to match); results in the input's dtype, batched the same way. Singular /
    # not positive-definite / non-converging input raises an exception whose class is named
    # LinAlgError (np.linalg's, cupy.linalg's), which the op turns into paragrad.linalg.LinAlgError
    # (a RuntimeError, as torch's), or yields NaN/inf where the library does not check (cupy by
    # default).
    def _unsupported(self, op):
        return NotImplementedError(
            f"{op} is not supported on the {self.device_type} backend ({type(self).__name__} has "
            f"no fast_{op}, and a decomposition is not composed from primitives)")

    def fast_linalg_inv(self, a):
        """-> the inverse (..., n, n)."""
        raise self._unsupported("linalg_inv")

    def fast_linalg_solve(self, a, b):
        """-> x with a @ x = b; a (..., n, n), b (..., n, k), same batch dims."""
        raise self._unsupported("linalg_solve")

    def fast_linalg_det(self, a):
        """-> det (...)."""
        raise self._unsupported("linalg_det")

    def fast_linalg_slogdet(self, a):
        """-> (sign (...), log|det| (...))."""
        raise self._unsupported("linalg_slogdet")

    def fast_linalg_cholesky(self, a):
        """-> lower L (..., n, n), a = L L^T (reads a's lower triangle)."""
        raise self._unsupported("linalg_cholesky")

    def fast_linalg_qr(self, a, mode):
        """-> (Q, R), mode 'reduced' / 'complete' as np.linalg.qr; for 'r', (None, R)."""
        raise self._unsupported("linalg_qr")

    def fast_linalg_eigh(self, a, uplo):
        """-> (w (..., n) ascending, V (..., n, n) with a = V diag(w) V^T), reading the
        triangle uplo ('L' or 'U')."""
        raise self._unsupported("linalg_eigh")

    def fast_linalg_svd(self, a, full_matrices):
        """-> (U, S, Vh), S (..., min(m, n)) descending."""
        raise self._unsupported("linalg_svd")

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
    def data_ptr(self, buf):
        """The address of buf's first element (Tensor.data_ptr)."""
        raise NotImplementedError(f"data_ptr is not supported on the {self.device_type} backend")

    def owns_memory(self, buf):
        """True if buf is not a view of another buffer (the engine may then keep it as a
        leaf's .grad without copying)."""
        return getattr(buf, "base", None) is None

    def synchronize(self, device_index=0):
        """Wait for queued work (a no-op on synchronous backends)."""

    def launch_pending(self):
        """Launch the work recorded but not launched yet (the CUDA backend's fused elementwise
        chains), so the buffers it holds are released: the end of a backward pass calls it.
        Nothing to do on a backend that launches each call at once."""

    def step_graph(self, device_index=0):
        """For pg.jit: an object that runs a function eagerly (warmup(fn)), records it into a
        replayable graph that starts by copying its inputs into the static buffers fn reads
        (capture(fn, name, inputs, pool), inputs: (static, source) buffer pairs, pool: another
        graph's `.pool` to allocate from, or None for its own), makes another graph on its
        stream (sibling()), replays it on new
        sources (replay(sources)) and counts its nodes (num_nodes()) — or None where the device
        has no graphs (pg.jit then runs eagerly)."""
        return None

