"""paragrad.nn.functional: the stateless forms of the layers and losses (PyTorch's F)."""
from __future__ import annotations

import math
import warnings

from .. import capture
from .. import dtypes as dt
from ..autograd import Function
from ..ops import pad, sigmoid, tanh  # noqa: F401
from ..ops.neural.conv import conv1d, conv2d  # noqa: F401  (F.conv1d, F.conv2d)
from ..ops.neural.attention import scaled_dot_product_attention  # noqa: F401  (F.scaled_dot_product_attention)
from ..ops.creation import zeros
from ..ops.neural.embedding import embedding  # noqa: F401  (F.embedding)
from .functional_composites import _legacy_reduction  # noqa: F401  (also the loss modules')
from .functional_composites import _warn_target_size
from .functional_composites import (cosine_similarity, group_norm, huber_loss, interpolate, kl_div,  # noqa: F401
                               normalize, pairwise_distance, rms_norm, smooth_l1_loss)
from .functional_losses import (cosine_embedding_loss, gaussian_nll_loss, hinge_embedding_loss,  # noqa: F401
                               margin_ranking_loss, multi_margin_loss, multilabel_margin_loss,
                               multilabel_soft_margin_loss, poisson_nll_loss, soft_margin_loss,
                               triplet_margin_loss, triplet_margin_with_distance_loss)
from .functional_activation import (celu, celu_, elu, elu_, gelu, glu, hardshrink,  # noqa: F401
                                    hardsigmoid, hardswish, hardtanh, hardtanh_, leaky_relu,
                                    leaky_relu_, log_softmax, logsigmoid, mish, prelu, relu, relu6,
                                    relu_, rrelu, rrelu_, selu, selu_, silu, softmax, softmin,
                                    softplus, softshrink, softsign, tanhshrink, threshold,
                                    threshold_)
from ..ops.neural.linear import linear
from ..ops._common import same_device
from ..ops.indexing.index_bounds import known
from ..ops.neural.softmax import check_targets, cross_entropy_indices
from ..ops.neural.regression_loss import regression_loss
from ..ops.neural.layer_norm import layer_norm  # noqa: F401  (F.layer_norm)
from ..ops.neural.pool import (adaptive_avg_pool1d, adaptive_avg_pool2d, avg_pool1d, avg_pool2d,  # noqa: F401
                        max_pool1d, max_pool2d)
from ..ops.neural.pool import (adaptive_max_pool1d, adaptive_max_pool2d, lp_pool1d, lp_pool2d, max_unpool1d, max_unpool2d)
from ..ops.neural.batch_norm import batch_norm  # noqa: F401  (F.batch_norm)
from ..random import default_generator
from ..tensor import Tensor, _wrap

_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction, op):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: {reduction} is not a valid value for reduction "
                         f"(expected one of {_REDUCTIONS})")


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def dropout(input, p=0.5, training=True, inplace=False, generator=None):
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only)."""
    return _masked_dropout(input, p, training, inplace, tuple(input.shape), generator)


def _masked_dropout(input, p, training, inplace, mask_shape, generator=None):
    """input * keep / (1 - p), keep ~ Bernoulli(1 - p) of mask_shape (broadcast over input)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    g = generator or default_generator(input.device)
    keep = input._backend.bernoulli(g._state, 1.0 - p, mask_shape, input.dtype, input.device.index)
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


def one_hot(tensor, num_classes=-1):
    if not isinstance(tensor, Tensor) or tensor.dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor "
                           f"(got {getattr(tensor, 'dtype', type(tensor).__name__)})")
    if num_classes == -1:
        num_classes = int(tensor.max()) + 1 if tensor.numel() else 0
    if tensor.numel() and (int(tensor.min()) < 0 or int(tensor.max()) >= num_classes):
        raise RuntimeError(f"one_hot: Class values must be non-negative and smaller than "
                           f"num_classes ({num_classes})")
    out = zeros(tuple(tensor.shape) + (num_classes,), dtype=dt.int64, device=tensor.device)
    return out.scatter(-1, tensor.unsqueeze(-1), 1)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of class indices: input (N, C, ...) or (C,) log-probabilities."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, "nll_loss")
    same_device("nll_loss", input, target, weight)
    if target.dtype.is_floating_point:
        raise RuntimeError(f"nll_loss: expected target of integer (class index) dtype, got {target.dtype}")
    if input.ndim == 1:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
        squeeze = True
    else:
        squeeze = False
    if input.ndim < 2 or tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
        raise ValueError(f"nll_loss: expected target of shape {(input.shape[0],) + tuple(input.shape[2:])} "
                         f"for input of shape {tuple(input.shape)}, got {tuple(target.shape)}")
    n_classes = input.shape[1]
    if target.numel() and not capture.active():     # (no host reads inside pg.jit)
        check_targets(target, n_classes, ignore_index, "nll_loss")
    r = known(target)
    if weight is None and r is not None and not r[0] <= ignore_index <= r[1]:
        # no target is ignore_index (their known range excludes it): the plain negative pick
        loss = -input.gather(1, target.long().unsqueeze(1)).squeeze(1)      # (N, ...)
        if reduction != "none":
            return loss.mean() if reduction == "mean" else loss.sum()
        return loss.squeeze(0) if squeeze else loss
    ignored = target == ignore_index
    safe = target.masked_fill(ignored, 0).long()
    picked = -input.gather(1, safe.unsqueeze(1)).squeeze(1)          # (N, ...)
    w = weight[safe] if weight is not None else None
    keep = (~ignored).to(input.dtype)
    w = keep if w is None else w * keep
    # masked_fill (not only w = 0) so that ignored targets get exactly zero loss and gradient,
    # even when the mean divides by a zero total weight (all ignored: nan loss, zero gradient)
    loss = (picked * w).masked_fill(ignored, 0.0)
    if reduction == "mean":
        return loss.sum() / w.sum()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if squeeze else loss


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross-entropy of logits input (N, C, ...) or (C,) against class indices or class
    probabilities, with PyTorch's weighting, ignore_index and label smoothing rules."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, "cross_entropy")
    same_device("cross_entropy", input, target, weight)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    if (input.ndim == 2 and weight is None and label_smoothing == 0.0 and reduction != "none"
            and not target.dtype.is_floating_point and target.ndim == 1
            and target.shape[0] == input.shape[0] and input.dtype.is_floating_point):
        return cross_entropy_indices(input, target, ignore_index, reduction)   # the fused common case
    class_dim = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, class_dim)
    n_classes = input.shape[class_dim]
    wshape = [1] * input.ndim
    wshape[class_dim] = n_classes
    if target.dtype.is_floating_point:          # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"cross_entropy: soft target shape {tuple(target.shape)} must match "
                               f"input shape {tuple(input.shape)}")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        terms = logp * target
        if weight is not None:
            terms = terms * weight.reshape(wshape)
        loss = -terms.sum(class_dim)
        if reduction == "mean":
            return loss.sum() / (loss.numel() if input.ndim > 1 else 1)
        return _reduce(loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0.0:
        return nll
    ignored = target == ignore_index
    smooth = -(logp * weight.reshape(wshape)).sum(class_dim) if weight is not None else -logp.sum(class_dim)
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == "mean":
        if weight is not None:
            safe = target.masked_fill(ignored, 0)
            denom = (weight[safe] * (~ignored).to(weight.dtype)).sum()
        else:
            denom = (~ignored).sum()
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / n_classes)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error; with weight (input's shape), each term weighted and the mean taken
    over the total weight, as PyTorch."""
    _warn_target_size(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is None:
        out = regression_loss("mse", input, target, reduction)
        if out is not None:
            return out
    d = input - target
    return _pointwise_loss("mse_loss", d * d, weight, input, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error; weight as in mse_loss."""
    _warn_target_size(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is None:
        out = regression_loss("l1", input, target, reduction)
        if out is not None:
            return out
    return _pointwise_loss("l1_loss", (input - target).abs(), weight, input, reduction)


def _pointwise_loss(op, loss, weight, input, reduction):
    _check_reduction(reduction, op)
    if weight is None:
        return _reduce(loss, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError(f"{op}: Weights and input must have the same size (weight {tuple(weight.shape)}, "
                         f"input {tuple(input.shape)}).")
    loss = loss * weight
    return loss.sum() / weight.sum() if reduction == "mean" else _reduce(loss, reduction)


class _BCEWithLogits(Function):
    """Elementwise (1-y)x + (1+(pw-1)y) * log(1+exp(-x)), in the form that never overflows, with
    PyTorch's closed-form gradients: composing them from abs/clamp would give the wrong
    subgradient at x = 0 and lose sigmoid(x) - y to cancellation for large |x|."""

    @staticmethod
    def forward(ctx, x, y, pos_weight):
        softplus_neg = _softplus_neg(x)
        ctx.save_for_backward(x, y, pos_weight)
        if pos_weight is None:
            return (1 - y) * x + softplus_neg
        return (1 - y) * x + (1 + (pos_weight - 1) * y) * softplus_neg

    @staticmethod
    def backward(ctx, g):
        x, y, pw = ctx.saved_tensors
        gx = gy = None
        if ctx.needs_input_grad[0]:
            if pw is None:
                gx = g * (x.sigmoid() - y)
            else:
                gx = g * ((1 + (pw - 1) * y) * x.sigmoid() - pw * y)
            gx = _sum_to(gx, x.shape)
        if ctx.needs_input_grad[1]:
            # d/dy = -x + (pw - 1) * log(1 + exp(-x))
            gy = -x if pw is None else (pw - 1) * _softplus_neg(x) - x
            gy = _sum_to(g * gy, y.shape)
        return gx, gy, None


def _softplus_neg(x):
    """log(1 + exp(-x)) = log1p(exp(-|x|)) + max(-x, 0): finite for any x."""
    return (-x.abs()).exp().log1p() + (-x).clamp(min=0)


def _sum_to(g, shape):
    """Reduce a broadcast gradient back to `shape`."""
    if tuple(g.shape) == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    g = g.sum(tuple(range(lead))) if lead else g
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    return g.sum(dims, keepdim=True) if dims else g


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """log-sigmoid form that never overflows: (1-y)x + (1+(pw-1)y) * (log1p(exp(-|x|)) + max(-x, 0)),
    with the gradients sigmoid(x) - y (times the weights) computed directly, as PyTorch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"binary_cross_entropy_with_logits: Target size ({tuple(target.shape)}) "
                         f"must be the same as input size ({tuple(input.shape)})")
    loss = _BCEWithLogits.apply(input, target, pos_weight)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, "binary_cross_entropy")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"binary_cross_entropy: Using a target size ({tuple(target.shape)}) that is "
                         f"different to the input size ({tuple(input.shape)}) is deprecated. Please "
                         f"ensure they have the same size.")
    # PyTorch clamps the log terms at -100 so that log(0) stays finite
    loss = -(target * input.log().clamp(min=-100) + (1 - target) * (1 - input).log().clamp(min=-100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)

# functional forms kept in modules of their own, each listing its exports in __all__
from .functional_conv_extra import *  # noqa: E402,F401,F403
from .functional_more import *  # noqa: E402,F401,F403


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return adaptive_max_pool1d(input, output_size, True)
from .embedding_bag import embedding_bag  # noqa: E402,F401  (F.embedding_bag)
