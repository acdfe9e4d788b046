"""F's losses (PyTorch's torch.nn.functional losses), by family: the reduction helpers; the
classification losses (nll_loss, cross_entropy with PyTorch's weighting, ignore_index and label
smoothing rules, the binary cross-entropies); the regression losses (mse, l1, smooth_l1, huber:
one node each where ops/neural/regression_loss.py takes them) and kl_div; then the margin, embedding
and likelihood losses, composed from differentiable Tensor ops. size_average / reduce are
PyTorch's deprecated arguments: accepted, and used as PyTorch does when given."""
from __future__ import annotations

import math
import warnings

from ... import autocast_state, capture
from ... import dtypes as dt
from ...autograd import rename
from ...ops import arange, clamp_min, cumprod, minimum, scatter_add, softplus, where, zeros_like
from ...ops import full as full_like
from ...ops._common import check_tensor, same_device
from ...ops.conversion import _TYPE_NAMES
from ...ops.indexing.index_bounds import known
from ...ops.neural.softmax import check_targets, cross_entropy_indices
from ...ops.neural.regression_loss import regression_loss
from ...ops.linalg.vector_norm import vector_norm
from .activation import log_softmax
from .distance import pairwise_distance
from ...ops.autocast_policy import cast, runs_in


def _legacy_reduction(size_average, reduce, reduction):
    """PyTorch's deprecated size_average / reduce flags override reduction when either is given
    (its _Reduction.legacy_get_string)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction, op):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: {reduction} is not a valid value for reduction "
                         f"(expected one of {_REDUCTIONS})")


def _apply_reduction(loss, reduction):
    """loss reduced as `reduction` (already checked by _check_reduction) asks."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _reduce(loss, reduction, op):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: {reduction} is not a valid value for reduction")


def _warn_target_size(input, target):
    """torch's warning for the pointwise regression losses, whose target broadcasts silently:
    a (N, 1) prediction against an (N,) target averages an N x N grid."""
    if input.shape != target.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
                      f"Please ensure they have the same size.", stacklevel=3)


# ---- classification --------------------------------------------------------------------------


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of class indices: input (N, C, ...) or (C,) log-probabilities."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, target, weight = cast("nll_loss", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = _nll_loss(input, target, weight, ignore_index, reduction)
    # torch's node: nll_loss for (C,) and (N, C) input, nll_loss2d for more dims (other than 4,
    # run as a (N, C, 1, -1) view, whose unreduced loss is viewed back)
    d = input.ndim
    name = "NllLossBackward0" if d <= 2 else "ViewBackward0" if reduction == "none" and d != 4 \
        else "NllLoss2DBackward0"
    return rename(loss, name, input)


def _nll_loss(input, target, weight, ignore_index, reduction):
    _check_reduction(reduction, "nll_loss")
    same_device("nll_loss", input, target, weight)
    _check_class_target(target, input, "nll_loss")
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


def _check_class_target(target, input, op):
    """Class indices are int64, or uint8 for a (C,) or (N, C) input, as torch's nll_loss
    kernels take them (its nll_loss2d, for more dims, only int64)."""
    if target.dtype is dt.int64 or (target.dtype is dt.uint8 and input.ndim <= 2):
        return
    if target.dtype is dt.uint8:
        raise RuntimeError(f"{op}: expected scalar type Long but found Byte")
    raise RuntimeError(f"{op}: expected target dtype to be Long or Byte, but got "
                       f"{_TYPE_NAMES.get(target.dtype.name, target.dtype.name)}")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross-entropy of logits input (N, C, ...) or (C,) against class indices or class
    probabilities, with PyTorch's weighting, ignore_index and label smoothing rules."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, "cross_entropy")
    check_tensor(input, "cross_entropy")
    check_tensor(target, "cross_entropy", "target")
    same_device("cross_entropy", input, target, weight)      # (the casts below keep devices)
    if not target.dtype.is_floating_point:      # class indices (else class probabilities)
        _check_class_target(target, input, "cross_entropy")
    fused = (input.ndim == 2 and weight is None and label_smoothing == 0.0 and reduction != "none"
             and not target.dtype.is_floating_point and target.ndim == 1
             and target.shape[0] == input.shape[0] and input.dtype.is_floating_point)
    upcast = False
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        # half logits in float32: the fused kernels read them as they are (no cast's pass)
        upcast = (fused and input.dtype in (dt.bfloat16, dt.float16) and runs_in("cross_entropy", input)
                  is dt.float32 and None not in (input._backend.fast("cross_entropy"),
                                                   input._backend.fast("cross_entropy_backward")))
        if not upcast:
            input, target, weight = cast("cross_entropy", input, target, weight)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    if fused:
        return cross_entropy_indices(input, target, ignore_index, reduction, upcast)   # the fused common case
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
        if reduction == "mean":      # (torch's ends in its division by a number: DivBackward1)
            return rename(loss.sum() / (loss.numel() if input.ndim > 1 else 1), "DivBackward1", input)
        # (and otherwise in the negation, torch taking it after the sum)
        return rename(_apply_reduction(loss, reduction), "NegBackward0", input)
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


def _difference_loss(kind, input, target, size_average, reduce, reduction, weight, term):
    """mse_loss / l1_loss: one recorded op (ops/neural/regression_loss.py) where it applies,
    else term(input - target) weighted and reduced."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is None:
        out = regression_loss(kind, input, target, reduction)
        if out is not None:
            return out
    out = _pointwise_loss(f"{kind}_loss", term(input - target), weight, input, reduction)
    # torch's mse_loss is one node unless weighted; its l1_loss is this composition too
    return rename(out, "MseLossBackward0", input, target) if kind == "mse" and weight is None else out


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error; with weight (input's shape), each term weighted and the mean taken
    over the total weight, as PyTorch."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, target = cast("mse_loss", input, target)
    _warn_target_size(input, target)         # (here: the warning names the caller's line)
    return _difference_loss("mse", input, target, size_average, reduce, reduction, weight,
                            lambda d: d * d)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error; weight as in mse_loss."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, target = cast("l1_loss", input, target)
    _warn_target_size(input, target)
    return _difference_loss("l1", input, target, size_average, reduce, reduction, weight,
                            lambda d: d.abs())


def _pointwise_loss(op, loss, weight, input, reduction):
    _check_reduction(reduction, op)
    if weight is None:
        return _apply_reduction(loss, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError(f"{op}: Weights and input must have the same size (weight {tuple(weight.shape)}, "
                         f"input {tuple(input.shape)}).")
    loss = loss * weight
    return loss.sum() / weight.sum() if reduction == "mean" else _apply_reduction(loss, reduction)


# ---- regression and KL divergence ------------------------------------------------------------


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta = 0: the L1 loss)."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, target = cast("smooth_l1_loss", input, target)
    _warn_target_size(input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    out = regression_loss("smooth_l1", input, target, _legacy_reduction(size_average, reduce, reduction), beta)
    if out is not None:
        return out
    d = (input - target).abs()
    loss = d if beta == 0 else where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    loss = _reduce(loss, _legacy_reduction(size_average, reduce, reduction), "smooth_l1_loss")
    # torch's is one node, but at beta 0 the l1_loss composition
    return loss if beta == 0 else rename(loss, "SmoothL1LossBackward0", input, target)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, target = cast("huber_loss", input, target)
    _warn_target_size(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is None:
        out = regression_loss("huber", input, target, reduction, delta)
        if out is not None:
            return out
    d = (input - target).abs()
    loss = where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    if weight is not None:      # torch's weighted form is this composition too
        return _reduce(loss * weight, reduction, "huber_loss")
    return rename(_reduce(loss, reduction, "huber_loss"), "HuberLossBackward0", input, target)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) pointwise: target (log target - input), 0 where target is 0;
    reduction 'batchmean' divides the sum by the batch size (the true KL divergence)."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, target = cast("kl_div", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        pos = target > 0
        safe = where(pos, target, target * 0 + 1)       # log(1) = 0 off the support: no NaN
        loss = target * safe.log() - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction, "kl_div")


# ---- margin, embedding and likelihood losses -------------------------------------------------


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin)."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input1, input2, target = cast("margin_ranking_loss", input1, input2, target)
    loss = clamp_min(-target * (input1 - input2) + margin, 0)      # (torch's clamp_min)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction), "margin_ranking_loss")


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target == 1, max(0, margin - input) where target == -1 (summed, as PyTorch,
    for any other target value)."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, target = cast("hinge_embedding_loss", input, target)
    loss = (margin - input).clamp(min=0).masked_fill(target == 1, 0) + input.masked_fill(target == -1, 0)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction), "hinge_embedding_loss")


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input))."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, target = cast("soft_margin_loss", input, target)
    loss = _reduce(softplus(-target * input), _legacy_reduction(size_average, reduce, reduction), "soft_margin_loss")
    return rename(loss, "SoftMarginLossBackward0", input, target)    # (torch's: one node)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1
    (cosine along the last dim, PyTorch's eps 1e-12 inside its norms)."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input1, input2, target = cast("cosine_embedding_loss", input1, input2, target)
    dim = input1.ndim - 1
    eps = 1e-12
    prod = (input1 * input2).sum(dim)
    mag = ((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)
    cos = prod / mag.sqrt()
    zero = cos * 0
    loss = where(target == 1, 1 - cos, zero) + where(target == -1, (cos - margin).clamp(min=0), zero)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction), "cosine_embedding_loss")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, d(a, p) - d(a, n) + margin), d the pairwise p-distance (+eps); swap uses the
    smaller of d(a, n) and d(p, n)."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        anchor, positive, negative = cast("triplet_margin_loss", anchor, positive, negative)
    dp = vector_norm(anchor - positive + eps, p, -1, False)
    dn = vector_norm(anchor - negative + eps, p, -1, False)
    if swap:
        dn = dn.minimum(vector_norm(positive - negative + eps, p, -1, False))
    loss = clamp_min(dp - dn + margin, 0)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction), "triplet_margin_loss")


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d any distance (default: pairwise_distance);
    swap uses min(d(a, n), d(p, n)) for the negative distance."""
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: margin must be greater than 0, got {margin}")
    d = distance_function if distance_function is not None else pairwise_distance
    dist_pos, dist_neg = d(anchor, positive), d(anchor, negative)
    if swap:
        dist_neg = minimum(dist_neg, d(positive, negative))
    loss = clamp_min(dist_pos - dist_neg + margin, 0)
    return _reduce(loss, reduction, "triplet_margin_with_distance_loss")


def _class_rows(input, target, op):
    """input as (N, C) and target as (N,) int64 (a 1-D input is one sample)."""
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
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, target, weight = cast("multi_margin_loss", input, target, weight)
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
    not_y = arange(x.shape[1], device=x.device).reshape(1, -1) != t2
    loss = (term * not_y.to(term.dtype)).sum(1) / x.shape[1]          # (N,)
    if input.ndim == 1:
        loss = loss.reshape(())
    loss = _reduce(loss, _legacy_reduction(size_average, reduce, reduction), op)
    return rename(loss, "MultiMarginLossBackward0", input)     # (torch's: one node)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Per sample: sum over target classes j (target's entries up to the first -1) and non-target
    classes i of max(0, 1 - (x[j] - x[i])), divided by the number of classes."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, target = cast("multilabel_margin_loss", input, target)
    op = "multilabel_margin_loss"
    x, t = _class_rows(input, target, op)
    t = t.reshape(x.shape)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}: inconsistent target size: {list(target.shape)} for input of size "
                           f"{list(input.shape)}")
    valid = cumprod((t >= 0).to(x.dtype), 1)                         # entries before the first -1
    safe_t = t.clamp(min=0)
    is_target = scatter_add(zeros_like(x), 1, safe_t, valid) > 0    # (N, C) class j is a target
    x_j = x.gather(1, safe_t)                                        # (N, C): x of each target entry
    margins = (1 - (x_j.unsqueeze(2) - x.unsqueeze(1))).clamp(min=0)  # (N, entries, classes)
    mask = valid.unsqueeze(2) * (~is_target).unsqueeze(1).to(x.dtype)
    loss = (margins * mask).sum((1, 2)) / x.shape[1]
    if input.ndim == 1:
        loss = loss.reshape(())
    loss = _reduce(loss, _legacy_reduction(size_average, reduce, reduction), op)
    return rename(loss, "MultilabelMarginLossBackward0", input)     # (torch's: one node)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per sample, the mean over classes of the binary logistic loss of each class."""
    loss = target * softplus(-input) + (1 - target) * softplus(input)
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.ndim - 1) / input.shape[-1]        # (torch's form: the mean over classes)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction), "multilabel_soft_margin_loss")


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(input) - target * input (log_input), else input - target * log(input + eps); full
    adds Stirling's approximation of log(target!) where target > 1."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, target = cast("poisson_nll_loss", input, target)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = where(target > 1, target, target * 0 + 1)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(target > 1, stirling, stirling * 0)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction), "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) if full);
    var of input's shape, or with its last dim 1, or one dim fewer (one variance per sample)."""
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
