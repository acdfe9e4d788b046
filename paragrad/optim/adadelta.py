"""Adadelta (PyTorch's update): steps scaled by the ratio of running RMS of past updates to
running RMS of gradients, times lr (1.0 by default)."""
from __future__ import annotations

from .optimizer import SingleTensorOptimizer, _cpu_step, check_hyper, zeros_like_buf


class Adadelta(SingleTensorOptimizer):
    """Adadelta: each step is lr times the ratio of the running RMS of past updates to the
    running RMS of the gradients; as torch.optim.Adadelta.
    differentiable=True raises RuntimeError; foreach and capturable are accepted but change nothing
    (one parameter at a time, step counts on the CPU: step() can't be captured by pg.jit)."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_hyper("Adadelta", lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)
        self._check_implementation(foreach, None, differentiable)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      capturable=capturable, maximize=maximize,
                                      differentiable=differentiable))

    def _init_state(self, p, group):
        return {"step": _cpu_step(), "square_avg": zeros_like_buf(p), "acc_delta": zeros_like_buf(p)}

    def _update(self, p, grad, st, g, step):
        rho, eps = g["rho"], g["eps"]
        grad = self._weight_decay(p, grad, g)
        st["square_avg"].mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = st["square_avg"].add(eps).sqrt_()
        delta = st["acc_delta"].add(eps).sqrt_().div_(std).mul_(grad)
        st["acc_delta"].mul_(rho).addcmul_(delta, delta, value=1 - rho)
        p.add_(delta, alpha=-g["lr"])
