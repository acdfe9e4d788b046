"""Binary cross-entropy, on probabilities (binary_cross_entropy) and on logits
(binary_cross_entropy_with_logits): each an elementwise node with PyTorch's closed-form
gradients, then the weights and the reduction, named as torch's one node."""
from __future__ import annotations

from ... import autocast_state
from ...autograd import Node, needs_grad, no_grad, record, rename
from ...ops._common import snapshot
from ...ops.autocast_policy import cast
from .loss import _apply_reduction, _check_reduction, _legacy_reduction


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """log-sigmoid form that never overflows: (1-y)x + (1+(pw-1)y) * (log1p(exp(-|x|)) + max(-x, 0)),
    with the gradients sigmoid(x) - y (times the weights) computed directly, as PyTorch."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, target, weight, pos_weight = cast("binary_cross_entropy_with_logits", input, target, weight, pos_weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"binary_cross_entropy_with_logits: Target size ({tuple(target.shape)}) "
                         f"must be the same as input size ({tuple(input.shape)})")
    loss = _bce_with_logits(input, target, pos_weight)
    if weight is None and reduction == "none":
        return loss
    # torch weighs and reduces inside its one node
    loss = _apply_reduction(loss if weight is None else loss * weight, reduction)
    return rename(loss, "BinaryCrossEntropyWithLogitsBackward0", input, target)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross-entropy between probabilities input and target,
    -(t * log(x) + (1 - t) * log(1 - x)) with each log clamped at -100, optionally weighted, then
    reduced; as torch.nn.functional.binary_cross_entropy, with its gradients: for the input
    (x - t) / max(x (1 - x), 1e-12), finite at x = 0 and 1; for the target -logit(x). Input
    outside [0, 1] is not checked (torch raises RuntimeError): its loss is NaN."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, target, weight = cast("binary_cross_entropy", input, target, weight)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, "binary_cross_entropy")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"binary_cross_entropy: Using a target size ({tuple(target.shape)}) that is "
                         f"different to the input size ({tuple(input.shape)}) is deprecated. Please "
                         f"ensure they have the same size.")
    x, t = input, target
    with no_grad():     # PyTorch clamps the log terms at -100 so that log(0) stays finite
        loss = -(t * x.log().clamp(min=-100) + (1 - t) * (1 - x).log().clamp(min=-100))
    if needs_grad(x, t):
        node = _BinaryCrossEntropy()
        node.saved = (snapshot(x), snapshot(t))
        record(node, (x, t), loss)
    if weight is not None:
        loss = loss * weight
    # (torch's is one node)
    return rename(_apply_reduction(loss, reduction), "BinaryCrossEntropyBackward0", input, target)


class _BinaryCrossEntropy(Node):
    """The elementwise loss's gradients, PyTorch's formulas (the composed logs' would be NaN for
    the input at x = 0 or 1: the clamp's zero times log's infinite slope)."""
    def backward(self, g):
        x, t = self.saved
        edges = self.next_edges
        gx = g * (x - t) / (x * (1 - x)).clamp(min=_EPSILON) if edges[0] is not None else None
        gt = -g * (x.log() - (1 - x).log()) if edges[1] is not None else None     # -logit(x)
        return gx, gt


_EPSILON = 1e-12        # (torch's, in binary_cross_entropy_backward)


def _bce_with_logits(x, y, pos_weight):
    """Elementwise (1-y)x + (1+(pw-1)y) * log(1+exp(-x)), in the form that never overflows, as
    one recorded node with PyTorch's closed-form gradients: composing them from abs/clamp would
    give the wrong subgradient at x = 0 and lose sigmoid(x) - y to cancellation for large |x|."""
    with no_grad():
        softplus_neg = _softplus_neg(x)
        if pos_weight is None:
            loss = (1 - y) * x + softplus_neg
        else:
            loss = (1 - y) * x + (1 + (pos_weight - 1) * y) * softplus_neg
    if needs_grad(x, y, pos_weight):
        node = BinaryCrossEntropyWithLogitsBackward0()
        node.saved = (snapshot(x), snapshot(y)) + ((snapshot(pos_weight),) if pos_weight is not None else ())
        record(node, (x, y, pos_weight), loss)
    return loss


class BinaryCrossEntropyWithLogitsBackward0(Node):
    def backward(self, g):
        x, y, *pw = self.saved
        pw = pw[0] if pw else None
        edges = self.next_edges
        gx = gy = None
        if edges[0] is not None:
            if pw is None:
                gx = g * (x.sigmoid() - y)
            else:
                gx = g * ((1 + (pw - 1) * y) * x.sigmoid() - pw * y)
            gx = _fit(gx, x)
        if edges[1] is not None:
            # d/dy = -x + (pw - 1) * log(1 + exp(-x))
            gy = -x if pw is None else (pw - 1) * _softplus_neg(x) - x
            gy = _fit(g * gy, y)
        return gx, gy, None


def _fit(g, t):
    """A gradient summed over t's broadcast dims and in t's dtype (what autograd.Function did
    for this node's gradients)."""
    g = _sum_to(g, t.shape)
    return g if g.dtype is t.dtype else g.to(t.dtype)


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
