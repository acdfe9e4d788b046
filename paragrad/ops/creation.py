"""Tensor factories: tensor, zeros/ones/full/empty, arange/linspace/eye, random draws, *_like."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..backends import CPU, as_device, backend_for
from ..random import default_generator
from ..tensor import Tensor, _wrap


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
    if isinstance(data, (list, tuple)) and any(isinstance(v, Tensor) for v in data):
        return np.array([_to_array(v) for v in data])
    try:
        arr = np.asarray(data)
    except ValueError as e:
        raise ValueError(f"tensor(): nested sequences must be rectangular: {e}") from None
    if arr.dtype == object:
        raise TypeError(f"tensor(): could not convert data of type {type(data).__name__} to a tensor")
    return arr


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of `data` (nested lists, NumPy arrays, scalars, Tensors)."""
    arr = _to_array(data)
    if dtype is None:
        dtype = data.dtype if isinstance(data, Tensor) else _infer_dtype(arr, data)
    else:
        dtype = dt.get_dtype(dtype)
    dev = as_device(device if device is not None else (data.device if isinstance(data, Tensor) else None))
    if arr.dtype.kind == "f" and not dtype.is_floating_point and dtype is not dt.bool_:
        arr = np.trunc(arr)     # float -> int truncates toward zero
    if not isinstance(data, (np.ndarray, np.generic, Tensor)) and arr.size and \
            arr.dtype.kind in "iuf" and not dtype.is_floating_point and dtype is not dt.bool_:
        _check_range(arr, dtype)
    return _finish(backend_for(dev).from_numpy(arr, dtype, dev.index), dtype, dev, requires_grad)


def _check_range(arr, dtype):
    """Python numbers that don't fit the integer dtype raise, as in PyTorch (arrays wrap)."""
    info = np.iinfo(dtype.to_numpy())
    if (arr.dtype.kind == "f" and not np.isfinite(arr).all()) or arr.min() < info.min \
            or arr.max() > info.max:
        raise RuntimeError(f"tensor(): value cannot be converted to type {dtype.name} without "
                           f"overflow")


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, Tensor) and (dtype is None or dt.get_dtype(dtype) is data.dtype) \
            and (device is None or as_device(device) == data.device):
        return data
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A CPU tensor sharing memory with a NumPy array (as torch.from_numpy)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(array).__name__})")
    return _wrap(array, dt.get_dtype(array.dtype), CPU)


def _shape(size, op):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{op}(): size must be a tuple of ints, but got {size!r}")
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(int(s) for s in size)


def _dd(dtype, device):
    return (dt.get_dtype(dtype) if dtype is not None else dt.get_default_dtype()), as_device(device)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    size = _shape(tuple(size), "full")
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value) if not isinstance(fill_value, Tensor) else fill_value.dtype
    dtype, dev = dt.get_dtype(dtype), as_device(device)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _finish(backend_for(dev).full(size, fill_value, dtype, dev.index), dtype, dev, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    dtype, dev = _dd(dtype, device)
    return _finish(backend_for(dev).full(_shape(size, "zeros"), 0, dtype, dev.index), dtype, dev, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    dtype, dev = _dd(dtype, device)
    return _finish(backend_for(dev).full(_shape(size, "ones"), 1, dtype, dev.index), dtype, dev, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    dtype, dev = _dd(dtype, device)
    return _finish(backend_for(dev).empty(_shape(size, "empty"), dtype, dev.index), dtype, dev, requires_grad)


def _like(x, dtype, device):
    return (dt.get_dtype(dtype) if dtype is not None else x.dtype,
            as_device(device) if device is not None else x.device)


def zeros_like(x, dtype=None, device=None, requires_grad=False):
    dtype, dev = _like(x, dtype, device)
    return _finish(backend_for(dev).full(tuple(x.shape), 0, dtype, dev.index), dtype, dev, requires_grad)


def ones_like(x, dtype=None, device=None, requires_grad=False):
    dtype, dev = _like(x, dtype, device)
    return _finish(backend_for(dev).full(tuple(x.shape), 1, dtype, dev.index), dtype, dev, requires_grad)


def full_like(x, fill_value, dtype=None, device=None, requires_grad=False):
    dtype, dev = _like(x, dtype, device)
    return _finish(backend_for(dev).full(tuple(x.shape), fill_value, dtype, dev.index), dtype, dev, requires_grad)


def empty_like(x, dtype=None, device=None, requires_grad=False):
    dtype, dev = _like(x, dtype, device)
    return _finish(backend_for(dev).empty(tuple(x.shape), dtype, dev.index), dtype, dev, requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    if dtype is None:
        dtype = dt.get_default_dtype() if any(isinstance(v, float) for v in vals) else dt.int64
    dtype, dev = dt.get_dtype(dtype), as_device(device)
    n = max(math.ceil((end - start) / step), 0)
    arr = start + step * np.arange(n, dtype=np.float64 if dtype.is_floating_point else np.int64)
    return _finish(backend_for(dev).from_numpy(arr, dtype, dev.index), dtype, dev, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    if steps < 0:
        raise RuntimeError("linspace: number of steps must be non-negative")
    dtype, dev = _dd(dtype, device)
    arr = np.linspace(start, end, steps, dtype=np.float64)
    return _finish(backend_for(dev).from_numpy(arr, dtype, dev.index), dtype, dev, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    dtype, dev = _dd(dtype, device)
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
    dtype = dt.get_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{op}(): expected a floating-point dtype, got {dtype}")
    return dtype


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    dtype, dev = _float_dtype(dtype, "rand"), as_device(device)
    g = _gen(generator, dev)
    data = backend_for(dev).uniform(g._state, _shape(size, "rand"), 0.0, 1.0, dtype, dev.index)
    return _finish(data, dtype, dev, requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    dtype, dev = _float_dtype(dtype, "randn"), as_device(device)
    g = _gen(generator, dev)
    data = backend_for(dev).normal(g._state, _shape(size, "randn"), 0.0, 1.0, dtype, dev.index)
    return _finish(data, dtype, dev, requires_grad)


def randint(low, high=None, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """randint(high, size) or randint(low, high, size): integers in [low, high)."""
    if size is None:
        if high is None or not isinstance(high, (tuple, list)):
            raise TypeError("randint(): missing required argument 'size'")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if high <= low:
        raise RuntimeError(f"randint(): random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    dtype, dev = dt.get_dtype(dtype) if dtype is not None else dt.int64, as_device(device)
    b = backend_for(dev)
    g = _gen(generator, dev)
    u = b.uniform(g._state, _shape(tuple(size), "randint"), 0.0, 1.0, dt.float64, dev.index)
    r = b.unary("floor", b.binary("add", b.binary("mul", u, float(high - low)), float(low)))
    r = b.binary("minimum", r, float(high - 1))
    return _finish(b.cast(r, dtype), dtype, dev, requires_grad)


def randperm(n, generator=None, dtype=None, device=None):
    dtype, dev = dt.get_dtype(dtype) if dtype is not None else dt.int64, as_device(device)
    perm = _gen(generator, CPU)._state.permutation(n)   # drawn on the host, as PyTorch does for CPU
    return tensor(perm, dtype=dtype, device=dev)


def rand_like(x, dtype=None, device=None, requires_grad=False):
    dtype, dev = _like(x, dtype, device)
    return rand(tuple(x.shape), dtype=dtype, device=dev, requires_grad=requires_grad)


def randn_like(x, dtype=None, device=None, requires_grad=False):
    dtype, dev = _like(x, dtype, device)
    return randn(tuple(x.shape), dtype=dtype, device=dev, requires_grad=requires_grad)


def randint_like(x, low, high=None, dtype=None, device=None):
    dtype, dev = _like(x, dtype, device)
    return randint(low, high, tuple(x.shape), dtype=dtype, device=dev)


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
