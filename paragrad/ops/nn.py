"""softmax and log_softmax: the first ops with a backend fast path (a fused kernel), used when
the backend provides one and composed from primitives otherwise."""
from __future__ import annotations

from .. import autograd
from .. import dtypes as dt
from ..autograd import Node, record
from ..tensor import _wrap
from ._common import alias, check_tensor, dim_arg


class SoftmaxBackward(Node):
    log = False

    def backward(self, g):
        (y,) = self.saved
        if autograd.is_grad_enabled():       # double backward: differentiable composite
            x = self.x
            y = (x.log_softmax if self.log else x.softmax)(self.dim)
        else:
            fast = g._backend.fast("log_softmax_backward" if self.log else "softmax_backward")
            if fast is not None:
                return _wrap(fast(y._data, g._data, self.dim), g.dtype, g._device)
        if self.log:
            return g - y.exp() * g.sum(self.dim, keepdim=True)
        gy = g * y
        return gy - y * gy.sum(self.dim, keepdim=True)


class LogSoftmaxBackward(SoftmaxBackward):
    log = True


def _softmax(name, x, dim, dtype, log):
    check_tensor(x, name)
    if dim is None:
        raise TypeError(f"{name}(): argument 'dim' must be given (implicit dim is deprecated)")
    if dtype is not None:
        x = x.to(dt.get_dtype(dtype))
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating-point input, got {x.dtype}")
    d = dim_arg(dim, x.ndim, name)
    if x.ndim == 0 or x.numel() == 0:    # a scalar is its own softmax group; empty stays empty
        with autograd.no_grad():
            out = x * 0 if log else x * 0 + 1
    else:
        fast = x._backend.fast(name)
        if fast is not None:
            out = _wrap(fast(x._data, d), x.dtype, x._device)
        else:
            with autograd.no_grad():
                shifted = x - x.amax(d, keepdim=True)
                if log:
                    out = shifted - shifted.exp().sum(d, keepdim=True).log()
                else:
                    e = shifted.exp()
                    out = e / e.sum(d, keepdim=True)
    if x._requires_grad and autograd._grad_enabled:
        node = LogSoftmaxBackward() if log else SoftmaxBackward()
        node.dim, node.saved, node.x = d, (alias(out),), x
        record(node, (x,), out)
    return out


def softmax(x, dim=None, dtype=None):
    return _softmax("softmax", x, dim, dtype, log=False)


def log_softmax(x, dim=None, dtype=None):
    return _softmax("log_softmax", x, dim, dtype, log=True)
