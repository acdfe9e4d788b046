"""More of PyTorch's F, composed from differentiable Tensor ops: the Huber-type and KL losses,
similarities and distances, and RMS / group normalization."""
from __future__ import annotations

import math

from .. import dtypes as dt
from ..ops import where
from ..tensor import Tensor


def _reduce(loss, reduction, op):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: {reduction} is not a valid value for reduction")


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta = 0: the L1 loss)."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    loss = d if beta == 0 else where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = (input - target).abs()
    loss = where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _reduce(loss if weight is None else loss * weight, reduction, "huber_loss")


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) pointwise: target (log target - input), 0 where target is 0;
    reduction 'batchmean' divides the sum by the batch size (the true KL divergence)."""
    if log_target:
        loss = target.exp() * (target - input)
    else:
        pos = target > 0
        safe = where(pos, target, target * 0 + 1)       # log(1) = 0 off the support: no NaN
        loss = target * safe.log() - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction, "kl_div")


def _norm(x, p, dim, keepdim):
    a = x.abs()
    if p == math.inf:
        return a.amax(dim, keepdim=keepdim)
    return (a ** p).sum(dim, keepdim=keepdim) ** (1.0 / p)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    if out is not None:
        raise RuntimeError("normalize: out= is not supported by paragrad")
    return input / _norm(input, p, dim, True).clamp(min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1 . x2 / max(||x1|| ||x2||, eps) along dim (inputs broadcast)."""
    n1 = (x1 * x1).sum(dim)
    n2 = (x2 * x2).sum(dim)
    return (x1 * x2).sum(dim) / (n1 * n2).clamp(min=eps * eps).sqrt()


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim."""
    return _norm(x1 - x2 + eps, p, -1, keepdim)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2 over the trailing normalized_shape dims) + eps) * weight; eps None:
    the dtype's machine epsilon (PyTorch's default)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    n = len(normalized_shape)
    if tuple(input.shape[input.ndim - n:]) != tuple(normalized_shape):
        raise RuntimeError(f"rms_norm: Given normalized_shape={list(normalized_shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, normalized_shape))}], but got input "
                           f"of size {list(input.shape)}")
    if eps is None:
        eps = dt.finfo(input.dtype).eps
    dims = tuple(range(input.ndim - n, input.ndim))
    y = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return y if weight is None else y * weight


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize each of num_groups channel groups of an (N, C, *) input over its channels and
    positions (biased variance), then scale and shift per channel."""
    if not isinstance(input, Tensor) or input.ndim < 2:
        raise RuntimeError(f"group_norm: Expected at least 2 dimensions for input tensor but "
                           f"received {getattr(input, 'ndim', type(input).__name__)}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and num_groups={num_groups}")
    x = input.reshape(n, num_groups, -1)                            # (N, G, C/G * positions)
    mean = x.mean(2, keepdim=True)
    xc = x - mean
    y = (xc * ((xc * xc).mean(2, keepdim=True) + eps).rsqrt()).reshape(tuple(input.shape))
    shape = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y
