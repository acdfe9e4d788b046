"""More of PyTorch's layers: InstanceNorm1d/2d, LocalResponseNorm, Bilinear, Softmax2d,
UpsamplingNearest2d and UpsamplingBilinear2d (thin modules over the functional forms)."""
from __future__ import annotations

import math
import warnings

from ..ops.creation import empty
from . import functional as F
from . import init
from .batchnorm import _BatchNorm
from .layers import Upsample
from .module import Module
from .parameter import Parameter

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "LocalResponseNorm", "Bilinear", "Softmax2d",
           "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class _InstanceNorm(_BatchNorm):
    """PyTorch's _InstanceNorm: the parameters and buffers of the batch norms (same state_dict
    keys), but per-instance statistics; running stats (track_running_stats) are updated in
    training and used in eval. An unbatched input is normalized as a batch of one."""

    _no_batch_dim = None

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, x):
        self._check_input_dim(x)
        feature_dim = x.ndim - self._no_batch_dim
        if x.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {x.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can "
                          f"silence this warning by not passing in num_features, which is not used "
                          f"because affine=False", stacklevel=2)
        unbatched = x.ndim == self._no_batch_dim
        if unbatched:
            x = x.unsqueeze(0)
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Input (N, C, L) or unbatched (C, L)."""

    _no_batch_dim = 2

    def _check_input_dim(self, x):
        if x.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {x.ndim}D input)")


class InstanceNorm2d(_InstanceNorm):
    """Input (N, C, H, W) or unbatched (C, H, W)."""

    _no_batch_dim = 3

    def _check_input_dim(self, x):
        if x.ndim not in (3, 4):
            raise ValueError(f"expected 3D or 4D input (got {x.ndim}D input)")


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x):
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


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


class Softmax2d(Module):
    """Softmax over the channels at each spatial location of (N, C, H, W) or (C, H, W)."""

    def forward(self, x):
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {x.ndim}D instead")
        return F.softmax(x, -3)


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
