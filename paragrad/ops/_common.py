"""Helpers shared by the op families: operand checks, dims, and gradient shaping."""
from __future__ import annotations

import operator

from .. import dtypes as dt
from ..memory_format import runs_channels_last
from ..tensor import Tensor, _dim, _wrap, view_of

Scalar = (int, float, bool)


def as_int(v):
    """v as a Python int if it is one (NumPy integers included, bool excluded), else None."""
    if isinstance(v, bool):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def check_tensor(x, op, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


def same_device(op, *tensors):
    """All tensors on one device (0-d CPU tensors may join any device, as in PyTorch)."""
    dev = None
    for t in tensors:
        if t is None or not isinstance(t, Tensor):
            continue
        if dev is None:
            dev = t._device
        elif t._device is not dev and t._device != dev and not (
                t._data.ndim == 0 and t._device.type == "cpu"):
            raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but found "
                               f"at least two devices, {dev} and {t._device}!")
    return dev


def dim_arg(dim, ndim, op):
    return _dim(dim, ndim, op)


def dims_arg(dim, ndim, op):
    """None -> all axes; int or tuple -> sorted, non-negative, checked for repeats."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        axes = tuple(sorted(_dim(d, ndim, op) for d in dim))
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"{op}: dim {tuple(dim)} appears multiple times in the list of dims")
        return axes
    return (_dim(dim, ndim, op),)


def buffer_view(b, buf, key):
    """buf[key] for a key of ints and slices by backend b's own indexing (its `basic_view`
    fast path), or None where it has none or declines (the caller plans a slice instead)."""
    view_of = b.fast("basic_view")
    return view_of(buf, key) if view_of is not None else None


def cast_buf(t, dtype):
    """t's buffer converted to dtype (no copy if it already has it)."""
    return t._data if t.dtype is dtype else t._backend.cast(t._data, dtype)


def kernel_layout(b, buf):
    """A 4-D activation buffer as the fast paths take it: channels-last as it is where the
    backend's kernels read that layout (no transposing copy on each op of a channels-last
    model), else C-contiguous."""
    return buf if b.takes_channels_last and runs_channels_last(buf) else b.contiguous(buf)


def alias(t):
    """A detached tensor sharing t's buffer: what a node saves of its own output, so the
    output -> node -> output reference cycle never forms."""
    return view_of(_wrap(t._data, t.dtype, t._device), t)


def snapshot(t):
    """A new Tensor object holding t's buffer at t's place in the graph. In-place ops compute
    from it, and nodes save it, so the saved value stays the old one after an in-place op
    replaces t's buffer. A leaf that requires grad is returned as is: in-place ops refuse it
    while grad mode is on, and its gradient must reach its own AccumulateGrad."""
    if t.grad_fn is None and t._requires_grad:
        return t
    s = view_of(_wrap(t._data, t.dtype, t._device), t)
    s.grad_fn, s._output_nr, s._requires_grad = t.grad_fn, t._output_nr, t._requires_grad
    return s


def floating(dtype):
    """The dtype an op that needs floating point computes in (ints/bool -> default float)."""
    return dtype if dtype.is_floating_point else dt.get_default_dtype()


def check_writable(t, name):
    """torch's refusals of an in-place op `name` on t while grad mode is on: t a leaf that
    requires grad, or t one of the views a function returned several of (split, chunk: torch
    won't rebase those, and writing through one would leave its siblings' gradients wrong)."""
    if not t._requires_grad:
        return
    if t.grad_fn is None:
        raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an "
                           f"in-place operation.")
    if getattr(t.grad_fn, "multi_view", False):
        raise RuntimeError(
            f"{name}: Output {t._output_nr} of {t.grad_fn.name()} is a view and is being modified "
            f"inplace. This view is the output of a function that returns multiple views. Such "
            f"functions do not allow the output views to be modified inplace. You should replace "
            f"the inplace operation by an out-of-place one.")
