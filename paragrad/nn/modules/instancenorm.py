"""InstanceNorm1d and InstanceNorm2d (PyTorch's torch/nn/modules/instancenorm.py): the batch
norms' parameters and buffers, per-instance statistics (F.instance_norm)."""
from __future__ import annotations

import warnings

from .. import functional as F
from .batchnorm import _BatchNorm


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
