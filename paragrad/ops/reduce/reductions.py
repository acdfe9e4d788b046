"""Reductions: sum, mean, var/std, amax/amin, max/min, prod, logsumexp, argmax/argmin, all/any."""
from __future__ import annotations

import builtins
import warnings
from collections import namedtuple

from ... import autocast_state, autograd
from ... import dtypes as dt
from ...autograd import Node, grad_mode, node_class, record, rename
from ...tensor import Tensor, _wrap
from .._common import alias, check_tensor, dim_arg, dims_arg, snapshot
from ..autocast_policy import cast, policy

values_indices = namedtuple("values_indices", ["values", "indices"])


def _axes(dim, x, name):
    """Reduced axes as a sorted tuple. dim=None, () or [] mean every axis (as torch). A 0-d
    tensor accepts dim 0 / -1 but has no axes to reduce."""
    ndim = x._data.ndim
    if type(dim) is int and -ndim <= dim < ndim:       # the usual x.sum(1): nothing to parse
        return (dim % ndim,)
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    axes = dims_arg(dim, x.ndim, name)
    return axes if x.ndim else ()


def _keep_shape(shape, axes):
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _expand_back(g, shape, axes, keepdim):
    """Broadcast a reduced gradient back over the reduced axes."""
    from ..movement.views import expand_to, reshape_to
    if not keepdim:
        g = reshape_to(g, _keep_shape(shape, axes))
    return expand_to(g, tuple(shape))


def _check_nonempty(x, axes, dim, name):
    """max/min-like reductions have no identity: an empty reduction raises, as in torch
    (RuntimeError for a full reduction, IndexError for an empty dim)."""
    if x.numel():
        return
    if dim is None or x.ndim == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                           f"input.numel() == 0 (input shape {tuple(x.shape)}). Specify the "
                           f"reduction dim with the 'dim' argument.")
    for a in axes:
        if x.shape[a] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {a} to have non-zero size "
                             f"(input shape {tuple(x.shape)}).")


class SumBackward(Node):
    def backward(self, g):
        return _expand_back(g, self.shape, self.axes, self.keepdim)


def _accumulate(op, x, axes, keepdim, dtype):
    """sum or prod of x over axes, in dtype if given, else torch's rule: integers and bools
    accumulate in int64, floats in their own dtype."""
    out_dtype = dt.get_dtype(dtype) if dtype is not None else (
        x.dtype if x.dtype.is_floating_point else dt.int64)
    data = x._data if out_dtype is x.dtype else x._backend.cast(x._data, out_dtype)
    return _wrap(x._backend.reduce(op, data, axes, keepdim), out_dtype, x._device)


def _accumulated_input(op, input, dim, dtype):
    """sum / prod's input, cast by its autocast policy unless a dtype is given, checked,
    and the axes it reduces over."""
    if autocast_state.on and dtype is None:     # paragrad.amp: the dtype this op runs in
        input, = cast(op, input)
    check_tensor(input, op)
    return input, _axes(dim, input, op)


def sum(input, dim=None, keepdim=False, dtype=None):  # noqa: A001
    """Sum over dim (all dims if None), as torch.sum; ints and bools sum in int64 unless dtype
    is given."""
    x, axes = _accumulated_input("sum", input, dim, dtype)
    out = _accumulate("sum", x, axes, keepdim, dtype)
    if x._requires_grad and grad_mode._enabled:
        node = _NODES["SumBackward0" if dim is None else "SumBackward1"]()
        node.shape, node.axes, node.keepdim = x.shape, axes, keepdim
        record(node, (x,), out)
    return out


def mean(input, dim=None, keepdim=False, dtype=None):
    """Mean over dim (all dims if None), as torch.mean; floating inputs (or a floating dtype) only."""
    x = input
    check_tensor(x, "mean")
    if dtype is not None:
        x = x.to(dt.get_dtype(dtype))
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {x.dtype}")
    wide = dt.opmath(x.dtype)       # float16/bfloat16: sum and divide in float32, round once
    w = x if wide is x.dtype else x.to(wide)
    axes = _axes(dim, w, "mean")
    n = 1
    for a in axes:
        n *= w.shape[a]
    out = sum(w, axes, keepdim) / n if n else sum(w, axes, keepdim) * float("nan")
    if w is not x:
        out = out.to(x.dtype)
    # a composite (a sum divided, cast back): its last node takes torch's name
    return rename(out, "MeanBackward0" if dim is None else "MeanBackward1")


def _var(x, dim, unbiased, keepdim, correction, name):
    check_tensor(x, name)
    if unbiased is not None and not isinstance(unbiased, bool):
        raise TypeError(f"{name}(): unbiased must be a bool, got {unbiased!r}")
    if correction is None:
        correction = 0 if unbiased is False else 1
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{name}(): std and var only support floating point dtypes, got {x.dtype}")
    if dt.opmath(x.dtype) is not x.dtype:    # float16/bfloat16: sum the squares in float32
        x = x.to(dt.opmath(x.dtype))          # (and return float32: std roots it before rounding)
    axes = _axes(dim, x, name)
    n = 1
    for a in axes:
        n *= x.shape[a]
    if n - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                      f"than the reduction factor (input numel divided by output numel).",
                      stacklevel=3)
    d = x - x.mean(axes, keepdim=True)
    return (d * d).sum(axes, keepdim=keepdim) / builtins.max(n - correction, 0)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance with `correction` (default 1, Bessel); `unbiased=False` means correction=0."""
    x = input
    return rename(_var(x, dim, unbiased, keepdim, correction, "var").to(x.dtype), "VarBackward0")


class StdBackward0(Node):
    """d sqrt(v) = g / (2 sqrt(v)), zero where the std is 0 (a constant row), as torch."""

    def backward(self, g):
        (out,) = self.saved
        return (g / (2 * out)).masked_fill(out == 0, 0.0)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over dim with `correction` (default 1; unbiased=False means 0), as
    torch.std."""
    x = input
    v = _var(x, dim, unbiased, keepdim, correction, "std")    # float32 for float16/bfloat16
    out = _wrap(v._backend.unary("sqrt", v._data), v.dtype, v._device)
    if v._requires_grad and grad_mode._enabled:
        node = StdBackward0()
        node.saved = (alias(out),)
        record(node, (v,), out)
    if v.dtype is not x.dtype:      # float16/bfloat16: the cast back is the last node
        return rename(out.to(x.dtype), "StdBackward0")
    return out


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over dim, as torch.var_mean."""
    x = input
    # torch computes both in one node: here each output's last node takes its name
    return (rename(var(x, dim, unbiased, keepdim, correction=correction), "VarMeanBackward0"),
            rename(mean(x, dim, keepdim), "VarMeanBackward0"))


class EvenlyBackward(Node):
    """amax/amin, max(), min(), median(): the gradient is shared equally among the elements
    equal to the result. With `nan_ties` (max()/min()/median() over the whole tensor, torch's
    evenly_distribute_backward) a NaN result shares it among the NaNs; amax/amin then give
    NaN gradients, as torch's do."""
    nan_ties = False

    def backward(self, g):
        x, out = self.saved
        out = out.reshape(_keep_shape(x.shape, self.axes))
        mask = x == out
        if self.nan_ties:
            mask = mask | (x.isnan() & out.isnan())
        mask = mask.to(g.dtype)
        return _expand_back(g, x.shape, self.axes, self.keepdim) * mask / mask.sum(self.axes, keepdim=True)


def shared_among_ties(x, out, axes, keepdim, nan_ties, name):
    """Record out (x reduced over axes) with EvenlyBackward's gradient, as torch's node class
    `name` (AmaxBackward0, MaxBackward1, MedianBackward0, ...); returns out."""
    if x._requires_grad and grad_mode._enabled:
        node = _NODES[name]()
        node.axes, node.keepdim, node.nan_ties = axes, keepdim, nan_ties
        node.saved = (snapshot(x), alias(out))
        record(node, (x,), out)
    return out


def _extreme(op, x, dim, keepdim, name, node_name, nan_ties=False):
    check_tensor(x, name)
    axes = _axes(dim, x, name)
    _check_nonempty(x, axes, None if dim is None or dim in ((), []) else dim, name)
    out = _wrap(x._backend.reduce(op, x._data, axes, keepdim), x.dtype, x._device)
    return shared_among_ties(x, out, axes, keepdim, nan_ties, node_name)


def amax(input, dim=(), keepdim=False):
    """The maximum over dim (all dims by default), as torch.amax; ties share the gradient evenly."""
    x = input
    return _extreme("max", x, dim, keepdim, "amax", "AmaxBackward0")


def amin(input, dim=(), keepdim=False):
    """The minimum over dim (all dims by default), as torch.amin; ties share the gradient evenly."""
    x = input
    return _extreme("min", x, dim, keepdim, "amin", "AminBackward0")


def _max_min(op, x, dim, keepdim, name):
    check_tensor(x, name)
    if dim is None:     # torch's max() is MaxBackward1, max(dim) MaxBackward0
        return _extreme(op, x, None, False, name, name.capitalize() + "Backward1", nan_ties=True)
    if isinstance(dim, Tensor):          # max(a, b) is maximum(a, b)
        from ..elementwise.binary import maximum, minimum
        return (maximum if op == "max" else minimum)(x, dim)
    d = dim_arg(dim, x.ndim, name)
    _check_nonempty(x, (d,), d, name)
    src = x.to(dt.uint8) if x.dtype is dt.bool_ else x   # argmax refuses bool; max(dim) doesn't
    idx = _arg("argmax" if op == "max" else "argmin", src, d, True)
    values = x.gather(d, idx) if x.ndim else x.clone()
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return values_indices(rename(values, name.capitalize() + "Backward0"), idx)


def max(input, dim=None, keepdim=False):  # noqa: A001
    """The largest element, or along dim a (values, indices) namedtuple, as torch.max.
    max(input, other) (a tensor) is maximum(input, other)."""
    x = input
    return _max_min("max", x, dim, keepdim, "max")


def min(input, dim=None, keepdim=False):  # noqa: A001
    """The smallest element, or along dim a (values, indices) namedtuple, as torch.min.
    min(input, other) (a tensor) is minimum(input, other)."""
    x = input
    return _max_min("min", x, dim, keepdim, "min")


def _arg(op, x, dim, keepdim):
    check_tensor(x, op)
    if x.dtype is dt.bool_:
        raise RuntimeError(f"{op}(): does not support bool input")
    if dim is None:
        if x.numel() == 0:     # IndexError here, where max() raises RuntimeError: as torch
            raise IndexError(f"{op}(): Expected reduction dim to be specified for "
                             f"input.numel() == 0 (input shape {tuple(x.shape)}).")
        flat = x.reshape(-1)
        out = flat._backend.arg_reduce(op, flat._data, 0, False)
        if keepdim:
            out = flat._backend.reshape(out, (1,) * x.ndim)
        return _wrap(out, dt.int64, x._device)
    d = dim_arg(dim, x.ndim, op)
    _check_nonempty(x, (d,), d, op)
    data = x._data if x.ndim else x._backend.reshape(x._data, (1,))
    out = x._backend.arg_reduce(op, data, d if x.ndim else 0, keepdim and x.ndim > 0)
    return _wrap(out, dt.int64, x._device)


def argmax(input, dim=None, keepdim=False):
    """The int64 index of the largest element, of the flattened input or along dim, as torch.argmax."""
    x = input
    return _arg("argmax", x, dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    """The int64 index of the smallest element, of the flattened input or along dim, as torch.argmin."""
    x = input
    return _arg("argmin", x, dim, keepdim)


@policy("logsumexp")
def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over dim, computed stably (max subtracted), as torch.logsumexp."""
    x = input
    check_tensor(x, "logsumexp")
    axes = _axes(dim, x, "logsumexp")
    if not x.dtype.is_floating_point:
        x = x.to(dt.get_default_dtype())
    with autograd.no_grad():
        if x.numel():
            m = amax(x, axes, keepdim=True)
            m = m.masked_fill(m.isinf(), 0.0)   # all -inf rows: keep exp(x - m) finite
        else:                                   # empty: the sum is 0 and the result -inf
            m = x.new_zeros(_keep_shape(x.shape, axes))
    s = (x - m).exp().sum(axes, keepdim=True).log() + m
    return rename(s if keepdim or not axes else s.squeeze(axes), "LogsumexpBackward0")


class ProdBackward(Node):
    def backward(self, g):
        x, out = self.saved
        axes, shape = self.axes, x.shape
        keep = _keep_shape(shape, axes)
        g = _expand_back(g, shape, axes, self.keepdim)
        zero = x == 0
        nzeros = zero.sum(axes, keepdim=True)
        safe = x.masked_fill(zero, 1.0)
        prod_nonzero = safe.prod(axes, keepdim=True) if axes else safe
        # no zero: prod/x; exactly one zero: the product of the others at that spot; else 0
        no_zero = out.reshape(keep).expand(shape) / safe
        one_zero = prod_nonzero.expand(shape).masked_fill(~zero, 0.0)
        from ..elementwise.binary import where
        return g * where(nzeros == 0, no_zero, where(nzeros == 1, one_zero, 0.0))


def prod(input, dim=None, keepdim=False, dtype=None):
    """Product over dim (all dims if None), as torch.prod; ints and bools multiply in int64 unless
    dtype is given."""
    x, axes = _accumulated_input("prod", input, dim, dtype)
    out = _accumulate("prod", x, axes, keepdim, dtype)
    if x._requires_grad and grad_mode._enabled:
        node = _NODES["ProdBackward0" if dim is None else "ProdBackward1"]()
        node.axes, node.keepdim, node.saved = axes, keepdim, (snapshot(x), alias(out))
        record(node, (x,), out)
    return out


# torch's node class for each overload whose node is made here (sum() is SumBackward0, sum(dim)
# SumBackward1); one formula class serves each group
_NODES = {name: node_class(formula, name) for formula, names in (
    (SumBackward, ("SumBackward0", "SumBackward1")), (ProdBackward, ("ProdBackward0", "ProdBackward1")),
    (EvenlyBackward, ("AmaxBackward0", "AminBackward0", "MaxBackward1", "MinBackward1",
                      "MedianBackward0", "NanmedianBackward0"))) for name in names}


def _truth_reduce(op, x, dim, keepdim, reduce, empty):
    """all / any: the min / max of x != 0 as bools; over no elements, `empty` (True / False).
    uint8 input gives uint8 0/1, as torch's (its legacy mask dtype); every other dtype bool."""
    check_tensor(x, op)
    b = x if x.dtype is dt.bool_ else x.ne(0)
    axes = _axes(dim, x, op)
    out = _wrap(b._backend.reduce(reduce, b._data, axes, keepdim) if b.numel() else
                b._backend.full(_reduced_shape(b.shape, axes, keepdim), empty, dt.bool_, b._device.index),
                dt.bool_, x._device)
    return out.to(dt.uint8) if x.dtype is dt.uint8 else out


def all(input, dim=None, keepdim=False):  # noqa: A001
    """Whether every element is nonzero, over dim (all dims if None), as torch.all (bool; uint8
    for uint8 input)."""
    return _truth_reduce("all", input, dim, keepdim, "min", True)


def any(input, dim=None, keepdim=False):  # noqa: A001
    """Whether any element is nonzero, over dim (all dims if None), as torch.any (bool; uint8
    for uint8 input)."""
    return _truth_reduce("any", input, dim, keepdim, "max", False)


def _reduced_shape(shape, axes, keepdim):
    return tuple(1 if i in axes else s for i, s in enumerate(shape) if keepdim or i not in axes)
