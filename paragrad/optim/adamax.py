"""Adamax (PyTorch's update): Adam with the infinity norm, a running max of |gradient| in place
of the second moment."""
from __future__ import annotations

from ..ops import maximum
from .optimizer import SingleTensorOptimizer, _cpu_step, check_hyper, zeros_like_buf


class Adamax(SingleTensorOptimizer):
    """Adamax: Adam with a running max of |gradient| (the infinity norm) in place of the second
    moment; as torch.optim.Adamax.
    differentiable=True raises RuntimeError; foreach and capturable are accepted but change nothing
    (one parameter at a time, step counts on the CPU: step() can't be captured by pg.jit)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        check_hyper("Adamax", lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        self._check_implementation(foreach, None, differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _init_state(self, p, group):
        return {"step": _cpu_step(), "exp_avg": zeros_like_buf(p), "exp_inf": zeros_like_buf(p)}

    def _update(self, p, grad, st, g, step):
        beta1, beta2 = g["betas"]
        grad = self._weight_decay(p, grad, g)
        st["exp_avg"].lerp_(grad, 1 - beta1)
        st["exp_inf"].copy_(maximum(st["exp_inf"].mul_(beta2), grad.abs().add_(g["eps"])))
        p.addcdiv_(st["exp_avg"], st["exp_inf"], value=-g["lr"] / (1 - beta1 ** step))
