"""Activation modules beyond those in layers.py (PyTorch's names, arguments and reprs); each
calls its functional form in nn/functional_activation.py."""
from __future__ import annotations

import warnings

from ..ops.creation import full
from . import functional_activation as A
from .module import Module
from .parameter import Parameter


def _inplace(inplace):
    return "inplace=True" if inplace else ""


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x):
        return A.elu(x, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    def forward(self, x):
        return A.celu(x, self.alpha, self.inplace)


class SELU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return A.selu(x, self.inplace)

    def extra_repr(self):
        return _inplace(self.inplace)


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None or max_value is not None:      # PyTorch's deprecated names
            warnings.warn("keyword argument `min_value`/`max_value` is deprecated and renamed to "
                          "`min_val`/`max_val`", FutureWarning, stacklevel=2)
            min_val = min_val if min_value is None else min_value
            max_val = max_val if max_value is None else max_value
        if max_val <= min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x):
        return A.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace(self.inplace)


class _InplaceOnly(Module):
    """An activation whose only argument is inplace."""
    fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return type(self).fn(x, self.inplace)

    def extra_repr(self):
        return _inplace(self.inplace)


class Hardsigmoid(_InplaceOnly):
    fn = staticmethod(A.hardsigmoid)


class Hardswish(_InplaceOnly):
    fn = staticmethod(A.hardswish)


class Mish(_InplaceOnly):
    fn = staticmethod(A.mish)


class LogSigmoid(Module):
    def forward(self, x):
        return A.logsigmoid(x)


class Softsign(Module):
    def forward(self, x):
        return A.softsign(x)


class Tanhshrink(Module):
    def forward(self, x):
        return A.tanhshrink(x)


class Softshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, x):
        return A.softshrink(x, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Softshrink):
    def forward(self, x):
        return A.hardshrink(x, self.lambd)


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, x):
        return A.threshold(x, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class RReLU(Module):
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, x):
        return A.rrelu(x, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return A.glu(x, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return A.softmin(x, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """x if x > 0 else a * x with a learned slope: one, or one per channel (num_parameters)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(full((num_parameters,), init, device=device, dtype=dtype))

    def reset_parameters(self):
        from ..autograd import no_grad
        with no_grad():
            self.weight.fill_(self.init)

    def forward(self, x):
        return A.prelu(x, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"
