"""F's dropouts (PyTorch's torch.nn.functional dropouts): dropout, the channel-wise dropout1d /
2d / 3d, and alpha_dropout / feature_alpha_dropout for SELU networks; each draws its mask on the
input's backend from the device's default generator."""
from __future__ import annotations

import math
import warnings

from ... import autograd
from ...autograd import Node, grad_mode, node_class, record
from ...random import default_generator
from ...dtypes import result_type
from ...memory_format import follow_channels_last
from ...tensor import Tensor, _wrap


def dropout(input, p=0.5, training=True, inplace=False, generator=None):
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only)."""
    return _masked_dropout(input, p, training, inplace, tuple(input.shape), generator)


class DropoutBackward(Node):
    """dx = g * mask / (1 - p), mask saved by a backend's one-pass dropout."""

    def backward(self, g):
        fast = None if autograd.is_grad_enabled() else g._backend.fast("dropout_backward")
        dx = fast(g._data, self.mask, self.p) if fast is not None else None
        if dx is not None:
            return (_wrap(dx, g.dtype, g._device),)
        keep = _wrap(g._backend.cast(self.mask, g.dtype), g.dtype, g._device)
        return (g * keep * (1.0 / (1.0 - self.p)),)


def residual_dropout(residual, input, p=0.5, training=True, generator=None):
    """residual + dropout(input, p, training): a residual connection's add with the dropout of
    its branch (paragrad's; a transformer block's `x + dropout(branch)`). Values, gradients and
    random draws are those of the two ops; on a backend with the fused kernel it is one pass
    each way, and a bf16 branch of a float32 stream (autocast) joins it with no cast of its own."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    drop = training and p > 0.0
    fast = None
    if isinstance(residual, Tensor) and isinstance(input, Tensor) and residual.device == input.device \
            and residual.shape == input.shape and p < 1.0 and input.dtype.is_floating_point \
            and (drop or input.dtype is not residual.dtype) \
            and result_type(residual, input) is residual.dtype:
        fast = residual._backend.fast("residual_dropout")
    gen = (generator or default_generator(input.device)) if drop else None
    r = fast(residual._data, input._data, p if drop else 0.0, gen._state if drop else None) \
        if fast is not None else None
    if r is None:
        return residual + (dropout(input, p, training, generator=generator) if drop else input)
    y, mask = r
    out = _wrap(y, residual.dtype, residual.device)
    if grad_mode._enabled and (residual._requires_grad or input._requires_grad):
        node = _RESIDUAL_DROPOUT()
        node.mask, node.p, node.dtype = mask, p, input.dtype
        record(node, (residual, input), out)
    return out


class ResidualDropoutBackward(Node):
    """The residual's gradient is the incoming one itself (the engine keeps summing the stream's
    gradients into it); the branch's is g * mask / (1 - p) in the branch's dtype."""
    passes_grad = 0

    def backward(self, g):
        if self.next_edges[1] is None:
            return g, None
        if not grad_mode._enabled:
            fast = g._backend.fast("dropout_backward") if self.mask is not None else None
            d = fast(g._data, self.mask, self.p, self.dtype) if fast is not None else None
            if d is not None:
                return g, _wrap(d, self.dtype, g._device)
        gy = g.to(self.dtype)
        if self.mask is not None:
            keep = _wrap(g._backend.cast(self.mask, self.dtype), self.dtype, g._device)
            gy = gy * keep * (1.0 / (1.0 - self.p))
        return g, gy


# torch's names: its CPU dropout multiplies by the scaled mask, and the residual's add comes last
_DROPOUT = node_class(DropoutBackward, "MulBackward0")
_RESIDUAL_DROPOUT = node_class(ResidualDropoutBackward, "AddBackward0")


def _masked_dropout(input, p, training, inplace, mask_shape, generator=None):
    """input * keep / (1 - p), keep ~ Bernoulli(1 - p) of mask_shape (broadcast over input)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    g = generator or default_generator(input.device)
    b = input._backend
    fast = b.fast("dropout") if not inplace and p < 1.0 and mask_shape == tuple(input.shape) else None
    r = fast(input._data, p, g._state) if fast is not None and input.dtype.is_floating_point else None
    if r is not None:       # drawn, masked and scaled in one pass
        y, mask = r
        out = _wrap(y, input.dtype, input.device)
        if input._requires_grad and grad_mode._enabled:
            node = _DROPOUT()
            node.mask, node.p = mask, p
            record(node, (input,), out)
        return out
    keep = b.bernoulli(g._state, 1.0 - p, mask_shape, input.dtype, input.device.index)
    if input.device.type == "cpu" and mask_shape == tuple(input.shape):   # torch's mask lies as
        keep = follow_channels_last(b.contiguous, keep, input._data)       # its input (channels-last)
    scale = _wrap(keep, input.dtype, input.device) * (1.0 / (1.0 - p) if p < 1.0 else 0.0)
    return input.mul_(scale) if inplace else input * scale


def _feature_dropout(input, p, training, inplace, batched):
    """Zero whole channels: one mask value per (sample, channel) of a batched input, per channel
    (dim 0) of an unbatched one."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if batched and input.ndim < 2:
        raise RuntimeError(f"Feature dropout requires at least 2 dimensions in the input (got "
                           f"{input.ndim})")
    shape = tuple(input.shape)
    lead = 2 if batched else 1
    return _masked_dropout(input, p, training, inplace, shape[:lead] + (1,) * (len(shape) - lead))


def _warn_dims(op, ndim, expected, spatial):
    if ndim not in expected:
        warnings.warn(f"{op}: Received a {ndim}-D input to {op}, which is deprecated and will result "
                      f"in an error in a future release. To retain the behavior and silence this "
                      f"warning, please use dropout instead. Note that {op} exists to provide "
                      f"channel-wise dropout on inputs with {spatial} spatial dimensions, a channel "
                      f"dimension, and an optional batch dimension", stacklevel=3)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, L) or unbatched (C, L) input."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. "
                           f"Note that dropout1d exists to provide channel-wise dropout on inputs with "
                           f"1 spatial dimension, a channel dimension, and an optional batch dimension "
                           f"(i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, H, W) input. As PyTorch (for now), a 3-D input is read as
    (N, C, L) and other ranks are accepted with a warning, dims 0 and 1 being (N, C)."""
    _warn_dims("dropout2d", input.ndim, (3, 4), 2)
    return _feature_dropout(input, p, training, inplace, batched=True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, D, H, W) or unbatched (C, D, H, W) input."""
    _warn_dims("dropout3d", input.ndim, (4, 5), 3)
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 5)


# SELU's scale * alpha: the value SELU saturates to, where alpha dropout sends dropped units
_SELU_SATURATION = 1.7580993408473766


def _alpha_dropout(input, p, training, inplace, mask_shape):
    """Dropped units take SELU's saturation value, then an affine map a * x + b restores the
    mean and variance of a zero-mean unit-variance input (Klambauer et al.; PyTorch's a, b)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    g = default_generator(input.device)
    keep = _wrap(input._backend.bernoulli(g._state, 1.0 - p, mask_shape, input.dtype, input.device.index),
                 input.dtype, input.device)
    a = 1.0 / math.sqrt((_SELU_SATURATION ** 2 * p + 1) * (1 - p))
    b = (keep - 1) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
    scale = keep * a
    return input.mul_(scale).add_(b) if inplace else input * scale + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: keeps zero mean and unit variance (training only)."""
    return _alpha_dropout(input, p, training, inplace, tuple(input.shape))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout of whole channels: one mask value per (sample, channel) of (N, C, ...)."""
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input.shape)
    return _alpha_dropout(input, p, training, inplace, shape[:2] + (1,) * (len(shape) - 2))
