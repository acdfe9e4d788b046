"""Linear maps (PyTorch's torch/nn/modules/linear.py): Identity, Linear, Bilinear and LazyLinear
(Linear with in_features read from the first input; see lazy.py)."""
from __future__ import annotations

import math

from ...ops import empty
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .lazy import LazyModuleMixin


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored); as torch.nn.Identity."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Linear(Module):
    """y = x W^T + b. Initialized as PyTorch: W ~ kaiming_uniform(a=sqrt(5)), that is
    U(-1/sqrt(in), 1/sqrt(in)), and b ~ U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.default_affine_init_(self.weight, self.bias)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """y = x1^T A x2 + b; weight (out, in1, in2) and bias (out,) uniform in +-1/sqrt(in1)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        kw = dict(device=device, dtype=dtype)
        self.weight = Parameter(empty(out_features, in1_features, in2_features, **kw))
        if bias:
            self.bias = Parameter(empty(out_features, **kw))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """Linear with in_features taken from the first input's last dim."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.out_features = out_features
        self._lazy_parameters(bias, device, dtype)

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self._materialize((self.out_features, self.in_features), self.out_features)
