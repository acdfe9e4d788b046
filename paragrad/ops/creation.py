"""Tensor factories: tensor, zeros/ones/full/empty, arange/linspace/logspace/eye, the index
factories tril_indices/triu_indices, random draws (rand, randn, randint, bernoulli, normal),
*_like, and Tensor(data), torch's legacy constructor."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..backends import CPU, as_device, backend_for
from ..memory_format import (channels_last, channels_last_3d, contiguous_format, dense_order,
                             dims_in_memory_order, empty_strides, laid_out, memory_format,
                             preserve_format)
from ..random import default_generator
from ..tensor import _init, _wrap, Size, Tensor
from .indexing.index_bounds import remember, remember_host_values
from .python_data import nested_data_array
from ._common import check_tensor
from .movement.views import broadcast_shapes


def _dtype(dtype, op, default=None):
    """Parse a dtype argument; errors name the factory."""
    if dtype is None:
        return default if default is not None else dt.get_default_dtype()
    try:
        return dt.get_dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{op}(): argument 'dtype': {e}") from None


def _number(v, op, name):
    """A Python number (0-d/1-element tensors give their value), else a TypeError naming op."""
    if isinstance(v, Tensor):
        return v.item()
    if isinstance(v, np.generic):
        v = v.item()
    if not isinstance(v, (bool, int, float)):
        raise TypeError(f"{op}(): argument '{name}' must be Number, not {type(v).__name__}")
    return v


def _finish(data, dtype, dev, requires_grad):
    t = _wrap(data, dtype, dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer_dtype(arr, data):
    """PyTorch's inference: Python floats -> default float, ints -> int64, bools -> bool;
    NumPy arrays keep their dtype."""
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        return dt.get_dtype(arr.dtype)
    kind = arr.dtype.kind
    if kind == "b":
        return dt.bool_
    if kind in "iu":
        return dt.int64
    if kind == "f":
        return dt.get_default_dtype()
    raise TypeError(f"tensor(): could not infer dtype of {type(data).__name__} "
                    f"(array dtype {arr.dtype})")


def _to_array(data):
    if isinstance(data, Tensor):
        return data._backend.to_numpy(data._data)
    try:
        if isinstance(data, (list, tuple)) and any(isinstance(v, Tensor) for v in data):
            arr = np.array([_to_array(v) for v in data])
        else:
            arr = np.asarray(data)
    except ValueError as e:
        arr, numpy_error = None, e
    if isinstance(data, (np.ndarray, np.generic)) or arr is not None and arr.dtype.kind not in "OUSV":
        return arr
    # NumPy couldn't read it as numbers: torch's rules say what is wrong (or that it is empty)
    empty = nested_data_array(data)
    if empty is not None:
        return empty
    if arr is None:
        raise ValueError(f"tensor(): nested sequences must be rectangular: {numpy_error}") from None
    raise TypeError(f"tensor(): could not convert data of type {type(data).__name__} to a tensor")


def legacy_init(self, *args, dtype=None, device=None):
    """`Tensor(data)` (default float dtype) or `Tensor(*sizes)` (uninitialized), as
    PyTorch's legacy constructor. Prefer `paragrad.tensor` / `paragrad.empty`."""
    dtype = dtype or dt.get_default_dtype()
    if not args:
        args = (0,)         # Tensor() is an empty 1-d tensor, as in PyTorch
    if len(args) == 1 and not isinstance(args[0], (int, Size)):
        src = tensor(args[0], dtype=dtype, device=device)
    else:
        src = empty(*args, dtype=dtype, device=device)
    _init(self, src._data, src.dtype, src._device)


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of `data` (nested lists, NumPy arrays, scalars, Tensors)."""
    arr = _to_array(data)
    if dtype is None:
        dtype = data.dtype if isinstance(data, Tensor) else _infer_dtype(arr, data)
    else:
        dtype = _dtype(dtype, "tensor")
    # a tensor's copy stays on its device, unless set_default_device names one (torch injects it)
    keep = device is None and _default_device[0] is None and isinstance(data, Tensor)
    dev = data.device if keep else factory_device(device)
    if arr.dtype.kind == "f" and not dtype.is_floating_point and dtype is not dt.bool_:
        arr = np.trunc(arr)     # float -> int truncates toward zero
    if not isinstance(data, (np.ndarray, np.generic, Tensor)) and arr.size and \
            arr.dtype.kind in "iuf" and not dtype.is_floating_point and dtype is not dt.bool_ \
            and arr.dtype != dtype.np:     # (Python ints read as int64 fit int64: nothing to check)
        _check_range(arr, dtype)
    t = _finish(backend_for(dev).from_numpy(arr, dtype, dev.index), dtype, dev, requires_grad)
    return remember_host_values(t, arr) if not dtype.is_floating_point else t


def _check_range(arr, dtype):
    """Python numbers that don't fit the integer dtype raise, as in PyTorch (arrays wrap)."""
    info = np.iinfo(dtype.to_numpy())
    if (arr.dtype.kind == "f" and not np.isfinite(arr).all()) or arr.min() < info.min \
            or arr.max() > info.max:
        raise RuntimeError(f"tensor(): value cannot be converted to type {dtype.name} without "
                           f"overflow")


def as_tensor(data, dtype=None, device=None):
    """data as a tensor, as torch.as_tensor: a Tensor already of that dtype and device is
    returned as it is, and a NumPy array of that dtype bound for the CPU shares its memory
    (from_numpy); anything else is copied."""
    if isinstance(data, Tensor) and (dtype is None or dt.get_dtype(dtype) is data.dtype) \
            and (device is None or as_device(device) == data.device):
        return data
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    if isinstance(data, np.ndarray) and factory_device(device) == CPU:
        own = dt.of_numpy(data.dtype)
        if own is not None and (dtype is None or dt.get_dtype(dtype) is own):
            return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A CPU tensor sharing memory with a NumPy array (as torch.from_numpy)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(array).__name__})")
    return _wrap(array, dt.get_dtype(array.dtype), CPU)


def _size(args, size, op):
    """The shape from `f(2, 3)`, `f((2, 3))`, `f([2, 3])` or `f(size=(2, 3))`."""
    if size is not None:
        if args:
            raise TypeError(f"{op}(): got multiple values for argument 'size'")
        args = (size,)
    return _shape(args, op)


def _shape(size, op):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if type(s) is not int or s < 0:
            break
    else:       # the common case, plain non-negative ints: nothing to convert
        return size
    for s in size:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{op}(): size must be a tuple of ints, but got {size!r}")
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(int(s) for s in size)


_default_device = [None]    # pg.set_default_device's device; None: the CPU


def factory_device(device):
    """Where a factory function (zeros, tensor, rand, arange, ...) puts a new tensor: `device`,
    else the one set_default_device chose, else the CPU."""
    return as_device(device if device is not None else _default_device[0])


def set_default_device(device):
    """torch.set_default_device: the device factory functions use when given none (None resets
    it to the CPU). *_like functions keep their input's device; from_numpy stays on the CPU."""
    _default_device[0] = None if device is None else as_device(device)


def get_default_device():
    """Where factories put tensors when given no device (the CPU unless set_default_device
    chose one), as torch.get_default_device."""
    return factory_device(None)


def _dd(dtype, device, op):
    return _dtype(dtype, op), factory_device(device)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor of shape size filled with fill_value, as torch.full (dtype: fill_value's by default)."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    size = _shape(tuple(size), "full")
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value) if not isinstance(fill_value, Tensor) else fill_value.dtype
    dtype, dev = _dtype(dtype, "full"), factory_device(device)
    fill_value = _number(fill_value, "full", "fill_value")
    return _finish(backend_for(dev).full(size, fill_value, dtype, dev.index), dtype, dev, requires_grad)


def zeros(*args, size=None, dtype=None, device=None, requires_grad=False):
    """A tensor of the given size filled with 0, as torch.zeros."""
    dtype, dev = _dd(dtype, device, "zeros")
    shape = _size(args, size, "zeros")
    return _finish(backend_for(dev).full(shape, 0, dtype, dev.index), dtype, dev, requires_grad)


def ones(*args, size=None, dtype=None, device=None, requires_grad=False):
    """A tensor of the given size filled with 1, as torch.ones."""
    dtype, dev = _dd(dtype, device, "ones")
    shape = _size(args, size, "ones")
    return _finish(backend_for(dev).full(shape, 1, dtype, dev.index), dtype, dev, requires_grad)


def empty(*args, size=None, dtype=None, device=None, requires_grad=False,
          memory_format=contiguous_format):
    """An uninitialized tensor of the given size, laid out as memory_format says, as torch.empty."""
    dtype, dev = _dd(dtype, device, "empty")
    shape = _size(args, size, "empty")
    _check_format(memory_format, "empty")
    if memory_format is preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    order = dims_in_memory_order(memory_format, len(shape), "empty")
    b = backend_for(dev)
    data = laid_out_buffer(b, lambda s: b.empty(s, dtype, dev.index), shape, order, memory_format)
    return _finish(data, dtype, dev, requires_grad)


# ---- memory formats of new tensors ----------------------------------------------------------------
def _check_format(fmt, op):
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be paragrad.memory_format, not "
                        f"{type(fmt).__name__}")


def laid_out_buffer(b, make, shape, order, fmt, strides=None):
    """A new buffer of `shape` from make(dense shape) whose dims lie in memory in `order`
    (slowest first), with torch's strides where it holds no elements. `strides` (a dense
    layout's, in elements) also sets those of size-1 dims, which the order leaves open."""
    buf = laid_out(make, shape, order)
    if strides is None and 0 in shape:
        strides = empty_strides(shape, order, fmt)
    xp = getattr(b, "xp", None)
    if strides is not None and xp is not None and tuple(strides) != tuple(
            s // buf.itemsize for s in buf.strides):
        buf = xp.lib.stride_tricks.as_strided(buf, shape, tuple(s * buf.itemsize for s in strides))
    return buf


def order_like(x, fmt, op):
    """(order, format, strides or None) of a tensor made like x: memory_format's, or for
    preserve_format (torch's default) x's own strides where x is dense, else channels-last
    where x's strides rank its channels fastest, else row-major."""
    if fmt is preserve_format and x._data.flags.c_contiguous and x.numel() and 1 not in x.shape:
        return range(x.ndim), contiguous_format, None      # the common case: row-major, no ties
    _check_format(fmt, op)
    if fmt is not preserve_format:
        return dims_in_memory_order(fmt, x.ndim, op), fmt, None
    shape, strides = tuple(x.shape), x.stride()
    cl = {4: channels_last, 5: channels_last_3d}.get(x.ndim)
    cl_order = None if cl is None else dims_in_memory_order(cl, x.ndim, op)
    if x.numel() == 0:          # no element to lay out: the strides alone tell the format
        if cl is not None and list(strides) == empty_strides(shape, cl_order, cl) \
                and list(strides) != empty_strides(shape, range(x.ndim), contiguous_format):
            return cl_order, cl, None
        return tuple(range(x.ndim)), contiguous_format, None
    dense = dense_order(shape, strides)
    if dense is not None:
        return tuple(dense), contiguous_format, strides
    by_stride = tuple(sorted(range(x.ndim), key=lambda d: -strides[d]))
    if cl is not None and by_stride == cl_order:
        return cl_order, cl, None
    return tuple(range(x.ndim)), contiguous_format, None


def _like(x, dtype, device, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    return (_dtype(dtype, op, x.dtype), as_device(device) if device is not None else x.device)


def _filled_like(x, value, dtype, device, requires_grad, memory_format, op):
    dtype, dev = _like(x, dtype, device, op)
    order, fmt, strides = order_like(x, memory_format, op)
    b = backend_for(dev)
    if value is None:
        make = lambda s: b.empty(s, dtype, dev.index)           # noqa: E731
    else:
        make = lambda s: b.full(s, value, dtype, dev.index)     # noqa: E731
    return _finish(laid_out_buffer(b, make, tuple(x.shape), order, fmt, strides), dtype, dev, requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad=False, memory_format=preserve_format):
    """Zeros with input's shape (and its dtype, device, layout unless given), as torch.zeros_like."""
    return _filled_like(input, 0, dtype, device, requires_grad, memory_format, "zeros_like")


def ones_like(input, dtype=None, device=None, requires_grad=False, memory_format=preserve_format):
    """Ones with input's shape (and its dtype, device, layout unless given), as torch.ones_like."""
    return _filled_like(input, 1, dtype, device, requires_grad, memory_format, "ones_like")


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False,
              memory_format=preserve_format):
    """fill_value in input's shape (and its dtype, device, layout unless given), as torch.full_like."""
    fill_value = _number(fill_value, "full_like", "fill_value")
    return _filled_like(input, fill_value, dtype, device, requires_grad, memory_format, "full_like")


def empty_like(input, dtype=None, device=None, requires_grad=False, memory_format=preserve_format):
    """Uninitialized, input's shape (and its dtype, device, layout unless given), as torch.empty_like."""
    return _filled_like(input, None, dtype, device, requires_grad, memory_format, "empty_like")


def positions_along(shape, dim, device):
    """arange(shape[dim]) laid along dim and expanded to shape (int64): each element's index
    along dim, for ops that pick or compare positions."""
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return arange(shape[dim], device=device).reshape(view).expand(*shape)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """start, start + step, ... up to end (exclusive); arange(end) starts at 0, as torch.arange."""
    if end is None:
        start, end = 0, start
    vals = [_number(v, "arange", n) for v, n in ((start, "start"), (end, "end"), (step, "step"))]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange(): upper bound and lower bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    if dtype is None:
        dtype = dt.get_default_dtype() if any(isinstance(v, float) for v in vals) else dt.int64
    dtype, dev = _dtype(dtype, "arange"), factory_device(device)
    n = max(math.ceil((end - start) / step), 0)     # the length comes from the exact bounds
    if dtype.is_floating_point:
        arr = start + step * np.arange(n, dtype=np.float64)
    else:
        # as PyTorch: start and step are converted to the integer type before stepping
        arr = int(start) + int(step) * np.arange(n, dtype=np.int64)
    t = _finish(backend_for(dev).from_numpy(arr, dtype, dev.index), dtype, dev, requires_grad)
    return remember_host_values(t, arr) if not dtype.is_floating_point else t


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """steps values evenly spaced from start to end, both included, as torch.linspace."""
    start, end = _number(start, "linspace", "start"), _number(end, "linspace", "end")
    if not isinstance(steps, int) or isinstance(steps, bool):
        raise TypeError(f"linspace(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    dtype, dev = _dd(dtype, device, "linspace")
    if dtype.is_floating_point or steps <= 1:
        arr = np.linspace(start, end, steps, dtype=np.float64)
    else:
        # PyTorch's integer kernel: integer bounds, a float64 step, truncation toward zero, and
        # the second half counted back from the end
        start, end = int(start), int(end)
        step = (end - start) / (steps - 1)
        i = np.arange(steps, dtype=np.float64)
        arr = np.where(i < steps // 2, start + step * i, end - step * (steps - i - 1))
        arr = np.trunc(arr)
    return _finish(backend_for(dev).from_numpy(arr, dtype, dev.index), dtype, dev, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    """An n x m (m defaults to n) matrix, ones on the diagonal, zeros elsewhere, as torch.eye."""
    dtype, dev = _dd(dtype, device, "eye")
    _shape((n,) if m is None else (n, m), "eye")
    arr = np.eye(n, n if m is None else m)
    return _finish(backend_for(dev).from_numpy(arr, dtype, dev.index), dtype, dev, requires_grad)


# ---- random --------------------------------------------------------------------------------------
def _gen(generator, dev):
    if generator is None:
        return default_generator(dev)
    if generator.device != dev:
        raise RuntimeError(f"Expected a '{dev.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator


def _float_dtype(dtype, op):
    dtype = _dtype(dtype, op)
    if not dtype.is_floating_point:
        raise RuntimeError(f"{op}(): expected a floating-point dtype, got {dtype}")
    return dtype


def _standard_draw(op, primitive, args, size, generator, dtype, device, requires_grad):
    """rand / randn: the backend's uniform [0, 1) or standard normal primitive."""
    dtype, dev = _float_dtype(dtype, op), factory_device(device)
    shape = _size(args, size, op)
    g = _gen(generator, dev)
    data = getattr(backend_for(dev), primitive)(g._state, shape, 0.0, 1.0, dtype, dev.index)
    return _finish(data, dtype, dev, requires_grad)


def rand(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """A tensor of the given size drawn uniformly from [0, 1), as torch.rand."""
    return _standard_draw("rand", "uniform", args, size, generator, dtype, device, requires_grad)


def randn(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """A tensor of the given size drawn from the standard normal N(0, 1), as torch.randn."""
    return _standard_draw("randn", "normal", args, size, generator, dtype, device, requires_grad)


def randint(low, high=None, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """randint(high, size) or randint(low, high, size): integers in [low, high)."""
    if size is None:
        if high is None or not isinstance(high, (tuple, list)):
            raise TypeError("randint(): missing required argument 'size'")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    low, high = _number(low, "randint", "low"), _number(high, "randint", "high")
    if high <= low:
        raise RuntimeError(f"randint(): random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    dtype, dev = _dtype(dtype, "randint", dt.int64), factory_device(device)
    b = backend_for(dev)
    g = _gen(generator, dev)
    u = b.uniform(g._state, _shape(tuple(size), "randint"), 0.0, 1.0, dt.float64, dev.index)
    r = b.unary("floor", b.binary("add", b.binary("mul", u, float(high - low)), float(low)))
    r = b.binary("minimum", r, float(high - 1))
    t = _finish(b.cast(r, dtype), dtype, dev, requires_grad)
    return remember(t, low, high - 1) if not dtype.is_floating_point and math.prod(size) else t


def randperm(n, generator=None, dtype=None, device=None):
    """A random permutation of 0 .. n-1 (int64 by default), as torch.randperm.
    Drawn on the host from a CPU generator: a generator of another device raises RuntimeError."""
    dtype, dev = _dtype(dtype, "randperm", dt.int64), factory_device(device)
    perm = _gen(generator, CPU)._state.permutation(n)   # drawn on the host, as PyTorch does for CPU
    return tensor(perm, dtype=dtype, device=dev)


def _drawn_like(x, draw, dtype, dev, requires_grad, memory_format, op):
    """draw(dense shape) -> a tensor whose values fill memory in order, laid out like x as
    memory_format says."""
    order, fmt, strides = order_like(x, memory_format, op)
    data = laid_out_buffer(backend_for(dev), lambda s: draw(s)._data, tuple(x.shape), order, fmt, strides)
    return _finish(data, dtype, dev, requires_grad)


def rand_like(input, dtype=None, device=None, requires_grad=False, memory_format=preserve_format):
    """U[0, 1) draws in input's shape (and its dtype, device unless given), as torch.rand_like."""
    x = input
    dtype, dev = _like(x, dtype, device, "rand_like")
    return _drawn_like(x, lambda s: rand(s, dtype=dtype, device=dev), dtype, dev,
                       requires_grad, memory_format, "rand_like")


def randn_like(input, dtype=None, device=None, requires_grad=False, memory_format=preserve_format):
    """N(0, 1) draws in input's shape (and its dtype, device unless given), as torch.randn_like."""
    x = input
    dtype, dev = _like(x, dtype, device, "randn_like")
    return _drawn_like(x, lambda s: randn(s, dtype=dtype, device=dev), dtype, dev,
                       requires_grad, memory_format, "randn_like")


def randint_like(input, low, high=None, dtype=None, device=None, memory_format=preserve_format):
    """Integers drawn from [low, high) (or [0, low)) in a tensor like input, as torch.randint_like."""
    x = input
    dtype, dev = _like(x, dtype, device, "randint_like")
    return _drawn_like(x, lambda s: randint(low, high, s, dtype=dtype, device=dev), dtype, dev,
                       False, memory_format, "randint_like")


# ---- Tensor.new_* ---------------------------------------------------------------------------------
def new_tensor(x, data, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad)


def new_zeros(x, *size, dtype=None, device=None, requires_grad=False):
    return zeros(*size, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad)


def new_ones(x, *size, dtype=None, device=None, requires_grad=False):
    return ones(*size, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad)


def new_full(x, size, fill_value, dtype=None, device=None, requires_grad=False):
    return full(size, fill_value, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad)


def new_empty(x, *size, dtype=None, device=None, requires_grad=False):
    return empty(*size, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, requires_grad=False):
    """The (2, N) coordinates of the lower triangle (on and below the offset-th diagonal) of a
    row x col matrix, row by row."""
    return _tri_indices(row, col, offset, dtype, device, requires_grad, True)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, requires_grad=False):
    """The (2, N) coordinates of the upper triangle (on and above the offset-th diagonal)."""
    return _tri_indices(row, col, offset, dtype, device, requires_grad, False)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, layout=None, requires_grad=False):
    """base ** linspace(start, end, steps), as PyTorch computes it: start and end first rounded
    to the dtype (truncated for integer dtypes), the powers in float64, the second half counted
    back from the end."""
    start, end = _number(start, "logspace", "start"), _number(end, "logspace", "end")
    if not isinstance(steps, int) or isinstance(steps, bool):
        raise TypeError(f"logspace(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("logspace(): number of steps must be non-negative")
    dtype, dev = _dtype(dtype, "logspace"), factory_device(device)
    if dtype is dt.bool_:
        raise NotImplementedError("logspace(): not implemented for bool")
    if steps <= 1:                  # (one step: base ** start, start not rounded)
        exps = np.full(steps, float(start))
    else:
        if not dtype.is_floating_point:
            lo, hi = float(int(start)), float(int(end))
        elif dtype.np is not None:
            lo, hi = float(dtype.np.type(start)), float(dtype.np.type(end))
        else:
            lo, hi = float(start), float(end)
        i = np.arange(steps, dtype=np.float64)
        step = (hi - lo) / (steps - 1)
        exps = np.where(i < steps // 2, lo + step * i, hi - step * (steps - i - 1))
    with np.errstate(all="ignore"):
        arr = np.power(float(base), exps)
        if not dtype.is_floating_point:
            arr = np.trunc(arr)
    return _finish(backend_for(dev).from_numpy(arr, dtype, dev.index), dtype, dev, requires_grad)


def _tri_indices(row, col, offset, dtype, device, requires_grad, lower):
    op = "tril_indices" if lower else "triu_indices"
    dtype = _dtype(dtype, op, dt.int64)
    if dtype.is_floating_point or dtype is dt.bool_:
        raise NotImplementedError(f"{op}: not implemented for {dtype} (integer dtypes only)")
    if row < 0:
        raise RuntimeError(f"{op}: row must be non-negative, got {row}")
    if col < 0:
        raise RuntimeError(f"{op}: col must be non-negative, got {col}")
    # indices depend only on the sizes: built on the host like eye(), in row-major order
    rows, cols = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    dev = factory_device(device)
    arr = np.stack([rows, cols]).astype(np.int64).reshape(2, -1)
    return _finish(backend_for(dev).from_numpy(arr, dtype, dev.index), dtype, dev, requires_grad)


def bernoulli(input, p=None, *, generator=None):
    """A 0/1 tensor of input's shape and floating dtype: 1 with probability input (or p where
    given). Not differentiable (torch records a node whose gradient is zero)."""
    check_tensor(input, "bernoulli")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"bernoulli: not implemented for '{input.dtype}' input (floating dtypes only)")
    u = rand(*input.shape, generator=generator, dtype=input.dtype, device=input.device)
    return (u < (input.detach() if p is None else p)).to(input.dtype)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """mean + std * N(0, 1): from tensors (their broadcast shape, dtype and device) or from
    floats and a size. Not differentiable (torch records a node whose gradient is zero)."""
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    bad_std = (std < 0).any().item() if isinstance(std, Tensor) else std < 0
    if bad_std:
        raise RuntimeError(f"normal expects all elements of std >= 0.0 (got std {std})")
    if not tensors:
        if size is None:
            raise TypeError("normal(): with float mean and std, a size is needed")
        out = randn(*size, generator=generator, dtype=dtype, device=device) * std + mean
    else:
        if size is not None:
            raise TypeError("normal(): size is only taken with float mean and std")
        shape = broadcast_shapes(*(t.shape for t in tensors))
        z = randn(*shape, generator=generator, dtype=tensors[0].dtype, device=tensors[0].device)
        out = (z * (std.detach() if isinstance(std, Tensor) else std)
               + (mean.detach() if isinstance(mean, Tensor) else mean))
    return out.requires_grad_(requires_grad) if requires_grad else out
