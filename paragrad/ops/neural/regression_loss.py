"""mse_loss, l1_loss, smooth_l1_loss and huber_loss of two float tensors of one shape and dtype
as ONE recorded node: the forward on buffers, the backward one derivative of d = input - target,
scaled. Composed of Tensor ops each loss recorded 2 to 8 nodes (sub, abs, lt, mul, where,
mean), and that per-op cost was most of a small regression step: smooth_l1_loss of 32 values
took 52 us against torch's 9 (pytorch/examples' regression script, CPU).

The values are torch's, in torch's order of operations: mse (x - y)^2, l1 |x - y|, smooth_l1
0.5 z z / beta where z < beta else z - 0.5 beta, huber 0.5 z z where z < delta else
delta (z - 0.5 delta), z = |x - y|; derivatives 2d, sign(d), clamp(d / beta, -1, 1) (sign(d)
at beta 0) and clamp(d, -delta, delta). Double backward (create_graph) recomputes d as a
Tensor op, so the gradient is itself differentiable.
"""
from __future__ import annotations

import math

from ... import autograd
from ...autograd import Node, node_class, record
from ...tensor import _wrap
from .._common import snapshot

KINDS = ("mse", "l1", "smooth_l1", "huber")


class RegressionLossBackward(Node):
    def backward(self, g):
        a, t, d = self.saved
        if autograd.is_grad_enabled():      # (create_graph: d with a graph, differentiable)
            d = a - t
        kind, p = self.kind, self.param
        if kind == "mse":
            slope = d * 2
        elif kind == "l1" or (kind == "smooth_l1" and p == 0):
            slope = d.sign()
        elif kind == "smooth_l1":
            slope = (d / p).clamp(-1, 1)
        else:
            slope = d.clamp(-p, p)
        if self.reduction == "mean":
            g = g / self.n
        gi = slope * g
        return (gi if a._requires_grad else None, -gi if t._requires_grad else None)


# torch's name for each loss's node: one node of its own, except l1_loss (and smooth_l1_loss at
# beta 0, which is l1_loss), composed as |input - target| then the reduction
_NODES = {kind: node_class(RegressionLossBackward, name) for kind, name in (
    ("mse", "MseLossBackward0"), ("smooth_l1", "SmoothL1LossBackward0"), ("huber", "HuberLossBackward0"),
    ("mean", "MeanBackward0"), ("sum", "SumBackward0"), ("none", "AbsBackward0"))}


def regression_loss(kind, input, target, reduction, param=None):
    """The loss as one node, or None where the composite must do it (shapes or dtypes that
    differ, integer tensors, a reduction other than mean/sum/none)."""
    a, t = input, target
    if (a._data.shape != t._data.shape or a.dtype is not t.dtype or not a.dtype.is_floating_point
            or a._device is not t._device or reduction not in ("mean", "sum", "none")):
        return None
    b = a._backend
    d = b.binary("sub", a._data, t._data)
    if kind == "mse":
        loss = b.binary("mul", d, d)
    elif kind == "l1" or (kind == "smooth_l1" and param == 0):
        loss = b.unary("abs", d)
    else:
        z = b.unary("abs", d)
        quad = b.binary("mul", b.binary("mul", z, 0.5), z)      # 0.5 z z (/ beta)
        if kind == "smooth_l1":
            quad = b.binary("div", quad, param)
            lin = b.binary("sub", z, 0.5 * param)
        else:
            lin = b.binary("mul", b.binary("sub", z, 0.5 * param), param)
        loss = b.where(b.binary("lt", z, param), quad, lin)
    out = _wrap(loss, a.dtype, a._device)
    if reduction != "none":
        with autograd.no_grad():
            out = out.mean() if reduction == "mean" else out.sum()
    if autograd.needs_grad(a, t):
        node = _NODES[reduction if kind == "l1" or (kind == "smooth_l1" and param == 0) else kind]()
        node.saved = (snapshot(a), snapshot(t), _wrap(d, a.dtype, a._device))
        node.kind, node.param, node.reduction, node.n = kind, param, reduction, math.prod(a._data.shape)
        record(node, (a, t), out)
    return out
