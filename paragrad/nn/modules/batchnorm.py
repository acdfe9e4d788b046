"""BatchNorm1d, BatchNorm2d and BatchNorm3d (PyTorch's torch/nn/modules/batchnorm.py,
_NormBase/_BatchNorm): per-channel normalization with batch statistics in training and running
statistics (buffers) in eval."""
from __future__ import annotations

from ... import dtypes as dt
from ...ops import empty, ones, tensor, zeros
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter


class _BatchNorm(Module):
    """momentum=None keeps a cumulative moving average (factor 1 / num_batches_tracked);
    track_running_stats=False always normalizes with the batch statistics."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dt.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        init.norm_affine_init_(self.weight, self.bias)

    def _check_input_dim(self, x):
        raise NotImplementedError(f"{type(self).__name__} must implement _check_input_dim(x)")

    def forward(self, x):
        return self._normalize(x, F.batch_norm)

    def forward_relu(self, x, residual=None):
        """relu(self(x) + residual), residual optional, as one op (F.batch_norm_relu): the
        normalization, the add and the ReLU in one pass where the backend fuses them
        (paragrad's ResNet blocks use it). Forward hooks of this module don't run."""
        return self._normalize(x, F.batch_norm_relu, residual=residual)

    def _normalize(self, x, op, **fused):
        self._check_input_dim(x)
        factor = 0.0 if self.momentum is None else self.momentum
        count = self.training and self.track_running_stats and self.num_batches_tracked is not None
        if count:
            if self.momentum is None:   # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item() + 1)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_buffers = not self.training or self.track_running_stats
        out = op(x, self.running_mean if use_buffers else None,
                 self.running_var if use_buffers else None, self.weight, self.bias,
                 bn_training, factor, self.eps, **fused)
        if count:                       # after the op, so a call that raises changes nothing
            self.num_batches_tracked.add_(1)
        return out

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Input (N, C) or (N, C, L)."""

    def _check_input_dim(self, x):
        if x.ndim not in (2, 3):
            raise ValueError(f"BatchNorm1d: expected 2D or 3D input (got {x.ndim}D input of "
                             f"size {list(x.shape)})")


class BatchNorm2d(_BatchNorm):
    """Input (N, C, H, W)."""

    def _check_input_dim(self, x):
        if x.ndim != 4:
            raise ValueError(f"BatchNorm2d: expected 4D input (got {x.ndim}D input of size "
                             f"{list(x.shape)})")


class BatchNorm3d(_BatchNorm):
    """Input (N, C, D, H, W)."""

    def _check_input_dim(self, x):
        if x.ndim != 5:
            raise ValueError(f"BatchNorm3d: expected 5D input (got {x.ndim}D input of size "
                             f"{list(x.shape)})")
