"""Normalization modules (PyTorch's torch/nn/modules/normalization.py): LayerNorm, GroupNorm,
RMSNorm and LocalResponseNorm (BatchNorm is in batchnorm.py, InstanceNorm in instancenorm.py)."""
from __future__ import annotations

from ...ops import empty
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter


class LayerNorm(Module):
    """Normalize over the trailing `normalized_shape` dims, then (elementwise_affine) scale by
    weight (init ones) and shift by bias (init zeros; bias=False leaves it out)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(*self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(*self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.norm_affine_init_(self.weight, self.bias)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine="
                f"{self.elementwise_affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the trailing normalized_shape dims, times weight (init
    ones) when elementwise_affine; eps None uses the input dtype's machine epsilon."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape, self.eps = tuple(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(*self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.norm_affine_init_(self.weight, None)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Per-sample normalization over groups of channels; affine adds a per-channel weight (init
    ones) and, unless bias=False, a bias (init zeros)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *,
                 bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        for name, wanted in (("weight", affine), ("bias", affine and bias)):
            self.register_parameter(name, Parameter(empty(num_channels, device=device, dtype=dtype))
                                    if wanted else None)
        self.reset_parameters()

    def reset_parameters(self):
        init.norm_affine_init_(self.weight, self.bias)

    def forward(self, x):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LocalResponseNorm(Module):
    """Normalizes each channel by its neighbours: x / (k + alpha * mean of x^2 over size adjacent
    channels)^beta; as torch.nn.LocalResponseNorm."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x):
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
