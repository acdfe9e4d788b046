"""The margin, embedding and likelihood losses of PyTorch's F, composed from differentiable
Tensor ops (the classification and regression ones are in functional.py / functional_composites.py).
size_average / reduce are PyTorch's deprecated arguments: accepted, and used as PyTorch does
when given."""
from __future__ import annotations

import math

from ..ops import where
from .functional_composites import _legacy_reduction as _reduction
from .functional_composites import _norm, _reduce, cosine_similarity


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    loss = (-target * (input1 - input2) + margin).clamp(min=0)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "margin_ranking_loss")


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target == 1, max(0, margin - input) where target == -1 (summed, as PyTorch,
    for any other target value)."""
    loss = (margin - input).clamp(min=0).masked_fill(target == 1, 0) + input.masked_fill(target == -1, 0)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "hinge_embedding_loss")


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input))."""
    from ..ops import softplus
    return _reduce(softplus(-target * input), _reduction(size_average, reduce, reduction), "soft_margin_loss")


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1
    (cosine along the last dim, PyTorch's eps 1e-12 inside its norms)."""
    dim = input1.ndim - 1
    eps = 1e-12
    prod = (input1 * input2).sum(dim)
    mag = ((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)
    cos = prod / mag.sqrt()
    zero = cos * 0
    loss = where(target == 1, 1 - cos, zero) + where(target == -1, (cos - margin).clamp(min=0), zero)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "cosine_embedding_loss")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, d(a, p) - d(a, n) + margin), d the pairwise p-distance (+eps); swap uses the
    smaller of d(a, n) and d(p, n)."""
    dp = _norm(anchor - positive + eps, p, -1, False)
    dn = _norm(anchor - negative + eps, p, -1, False)
    if swap:
        dn = dn.minimum(_norm(positive - negative + eps, p, -1, False))
    loss = (dp - dn + margin).clamp(min=0)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "triplet_margin_loss")


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d any distance (default: pairwise_distance);
    swap uses min(d(a, n), d(p, n)) for the negative distance."""
    from .functional_composites import pairwise_distance
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: margin must be greater than 0, got {margin}")
    d = distance_function if distance_function is not None else pairwise_distance
    dist_pos, dist_neg = d(anchor, positive), d(anchor, negative)
    if swap:
        from ..ops import minimum
        dist_neg = minimum(dist_neg, d(positive, negative))
    loss = (dist_pos - dist_neg + margin).clamp(min=0)
    return _reduce(loss, reduction, "triplet_margin_with_distance_loss")


def _class_rows(input, target, op):
    """input as (N, C) and target as (N,) int64 (a 1-D input is one sample)."""
    from .. import dtypes as dt
    if input.ndim not in (1, 2) or input.numel() == 0 and input.ndim != 2:
        raise RuntimeError(f"{op}: Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    x = input.unsqueeze(0) if input.ndim == 1 else input
    if target.dtype is not dt.int64:
        raise RuntimeError(f"{op}: expected scalar type Long but found {target.dtype}")
    return x, target


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Per sample: sum over classes i != y of max(0, margin - x[y] + x[i])^p (times weight[y]),
    divided by the number of classes."""
    op = "multi_margin_loss"
    if p not in (1, 2):
        raise ValueError(f"{op}: only p == 1 and p == 2 supported (got p={p})")
    x, t = _class_rows(input, target, op)
    if t.reshape(-1).shape[0] != x.shape[0]:
        raise RuntimeError(f"{op}: inconsistent target size: {list(target.shape)} for input of size "
                           f"{list(input.shape)}")
    t2 = t.reshape(-1, 1)                                            # (N, 1)
    x_y = x.gather(1, t2)                                            # (N, 1)
    term = (margin - x_y + x).clamp(min=0)                           # (N, C)
    if p == 2:
        term = term * term
    if weight is not None:
        if weight.requires_grad:
            raise RuntimeError(f"The function '{op}' is not differentiable with respect to argument "
                               f"'weight'. This input cannot have requires_grad True.")
        term = term * weight.gather(0, t2.reshape(-1)).reshape(-1, 1)
    from ..ops import arange
    not_y = arange(x.shape[1], device=x.device).reshape(1, -1) != t2
    loss = (term * not_y.to(term.dtype)).sum(1) / x.shape[1]          # (N,)
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, _reduction(size_average, reduce, reduction), op)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Per sample: sum over target classes j (target's entries up to the first -1) and non-target
    classes i of max(0, 1 - (x[j] - x[i])), divided by the number of classes."""
    op = "multilabel_margin_loss"
    x, t = _class_rows(input, target, op)
    t = t.reshape(x.shape)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}: inconsistent target size: {list(target.shape)} for input of size "
                           f"{list(input.shape)}")
    from ..ops import cumprod, scatter_add, zeros_like
    valid = cumprod((t >= 0).to(x.dtype), 1)                         # entries before the first -1
    safe_t = t.clamp(min=0)
    is_target = scatter_add(zeros_like(x), 1, safe_t, valid) > 0    # (N, C) class j is a target
    x_j = x.gather(1, safe_t)                                        # (N, C): x of each target entry
    margins = (1 - (x_j.unsqueeze(2) - x.unsqueeze(1))).clamp(min=0)  # (N, entries, classes)
    mask = valid.unsqueeze(2) * (~is_target).unsqueeze(1).to(x.dtype)
    loss = (margins * mask).sum((1, 2)) / x.shape[1]
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, _reduction(size_average, reduce, reduction), op)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per sample, the mean over classes of the binary logistic loss of each class."""
    from ..ops import softplus
    loss = target * softplus(-input) + (1 - target) * softplus(input)
    if weight is not None:
        loss = loss * weight
    loss = loss.mean(input.ndim - 1)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "multilabel_soft_margin_loss")


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(input) - target * input (log_input), else input - target * log(input + eps); full
    adds Stirling's approximation of log(target!) where target > 1."""
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = where(target > 1, target, target * 0 + 1)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(target > 1, stirling, stirling * 0)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) if full);
    var of input's shape, or with its last dim 1, or one dim fewer (one variance per sample)."""
    from ..ops.creation import full as full_like
    if not hasattr(var, "shape"):
        var = full_like(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    if tuple(var.shape) != tuple(input.shape):
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif not (input.shape[:-1] == var.shape[:-1] and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    v = var.clamp(min=eps)
    loss = 0.5 * (v.log() + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")
