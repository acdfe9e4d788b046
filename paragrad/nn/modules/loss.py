"""Loss modules (PyTorch's torch/nn/modules/loss.py): thin wrappers over nn.functional that hold
the options. An invalid reduction raises ValueError when the module is built (torch's, when it
is called)."""
from __future__ import annotations

from .. import functional as F
from ..module import Module
from .distance import PairwiseDistance


class _Loss(Module):
    """reduction, or PyTorch's deprecated size_average / reduce flags, which override it
    when given (F._legacy_reduction)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        reduction = F._legacy_reduction(size_average, reduce, reduction)
        F._check_reduction(reduction, type(self).__name__)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """Cross-entropy of logits (class dim 1) against class indices or class probabilities, with
    weight, ignore_index and label_smoothing; as torch.nn.CrossEntropyLoss."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood -input[n, target[n]] (times weight[target[n]]) of log-probabilities
    (class dim 1) against class indices; as torch.nn.NLLLoss."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error, (input - target)^2 reduced by reduction; as torch.nn.MSELoss."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error, |input - target| reduced by reduction; as torch.nn.L1Loss."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross-entropy of logits (sigmoid folded in, in a form that does not overflow), with
    optional weight and pos_weight; as torch.nn.BCEWithLogitsLoss."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities, -(t log(x) + (1 - t) log(1 - x)), each log clamped
    at -100; as torch.nn.BCELoss.
    Input outside [0, 1] is not checked (torch raises RuntimeError): its loss is NaN."""

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Smooth L1 loss: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, d = input - target;
    as torch.nn.SmoothL1Loss."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Huber loss: 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), d = input - target;
    as torch.nn.HuberLoss."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, self.reduction, self.delta)


class KLDivLoss(Module):
    """Pointwise KL divergence target (log(target) - input), input being log-probabilities (target
    too with log_target=True); as torch.nn.KLDivLoss ('batchmean' divides the sum by the batch size).
    reduction='mean' does not give torch's warning."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__()
        reduction = F._legacy_reduction(size_average, reduce, reduction)
        if reduction not in ("none", "mean", "sum", "batchmean"):
            raise ValueError(f"KLDivLoss: {reduction} is not a valid value for reduction")
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class MarginRankingLoss(_Loss):
    """Ranking loss max(0, -target * (input1 - input2) + margin), target 1 or -1;
    as torch.nn.MarginRankingLoss."""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """Hinge embedding loss: input where target == 1, max(0, margin - input) where target == -1;
    as torch.nn.HingeEmbeddingLoss."""

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss log(1 + exp(-target * input)), target 1 or -1;
    as torch.nn.SoftMarginLoss."""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """Cosine embedding loss: 1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin)
    where target == -1; as torch.nn.CosineEmbeddingLoss."""

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """Triplet loss max(0, d(a, p) - d(a, n) + margin), d the pairwise p-norm distance (swap: the
    smaller of d(a, n) and d(p, n)); as torch.nn.TripletMarginLoss."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, self.margin, self.p, self.eps, self.swap,
                                     reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss max(0, d(a, p) - d(a, n) + margin) with d = distance_function (default
    nn.PairwiseDistance()); as torch.nn.TripletMarginWithDistanceLoss."""

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        # (a module by default, so it prints as a child, as torch's)
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative, distance_function=self.distance_function,
                                                   margin=self.margin, swap=self.swap, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss: per sample, the sum over classes i != y of
    max(0, margin - x[y] + x[i])^p (times weight[y]), divided by the number of classes;
    as torch.nn.MultiMarginLoss."""

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        self.p, self.margin = p, margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss over the target classes (target's indices up to the first -1) against
    the others, divided by the number of classes; as torch.nn.MultiLabelMarginLoss."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label logistic loss: per sample, the mean over classes of each class's binary
    cross-entropy of logits (times weight); as torch.nn.MultiLabelSoftMarginLoss."""

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, self.weight, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood: exp(input) - target * input (log_input=True), else
    input - target * log(input + eps); full adds Stirling's term; as torch.nn.PoissonNLLLoss."""

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, self.log_input, self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood 0.5 (log(v) + (input - target)^2 / v), v = max(var, eps)
    (full adds 0.5 log(2 pi)); as torch.nn.GaussianNLLLoss."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)
