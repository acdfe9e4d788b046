"""Adagrad (PyTorch's update): each coordinate's step shrinks with its summed squared
gradients; lr_decay lowers the learning rate with the step count. Its state exists from
construction, as PyTorch's."""
from __future__ import annotations

from ..ops import full_like
from .optimizer import SingleTensorOptimizer, _cpu_step, check_hyper


class Adagrad(SingleTensorOptimizer):
    """Adagrad: each coordinate's step divided by the root of its summed squared gradients, the
    rate lowered by lr_decay with the step count (state made at construction); as
    torch.optim.Adagrad.
    differentiable=True raises RuntimeError; foreach and fused are accepted but change nothing
    (one parameter at a time, step counts on the CPU: step() can't be captured by pg.jit)."""

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_hyper("Adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                    initial_accumulator_value=initial_accumulator_value, eps=eps)
        self._check_implementation(foreach, fused, differentiable)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      fused=fused))
        for g in self.param_groups:
            for p in g["params"]:
                self.state[p] = self._init_state(p, g)

    def _init_state(self, p, group):
        return {"step": _cpu_step(), "sum": full_like(p, group["initial_accumulator_value"]).detach()}

    def _update(self, p, grad, st, g, step):
        grad = self._weight_decay(p, grad, g)
        clr = g["lr"] / (1 + (step - 1) * g["lr_decay"])
        st["sum"].addcmul_(grad, grad, value=1)
        std = st["sum"].sqrt().add_(g["eps"])
        p.addcdiv_(grad, std, value=-clr)
