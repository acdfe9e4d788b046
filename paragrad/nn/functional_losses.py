"""The margin, embedding and likelihood losses of PyTorch's F, composed from differentiable
Tensor ops (the classification and regression ones are in functional.py / functional_extra.py).
size_average / reduce are PyTorch's deprecated arguments: accepted, and used as PyTorch does
when given."""
from __future__ import annotations

import math

from ..ops import where
from .functional_extra import _norm, _reduce, cosine_similarity


def _reduction(size_average, reduce, reduction):
    """PyTorch's legacy_get_string: the deprecated flags override reduction when given."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


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
