"""NAdam (PyTorch's update): Adam with Nesterov momentum, whose momentum coefficient warms up
with the step count (momentum_decay); decoupled_weight_decay=True shrinks the weights as AdamW."""
from __future__ import annotations

from ..ops import tensor
from .optimizer import SingleTensorOptimizer, _cpu_step, check_hyper, zeros_like_buf


class NAdam(SingleTensorOptimizer):
    """NAdam: Adam with Nesterov momentum whose coefficient warms up with momentum_decay
    (decoupled_weight_decay=True: AdamW's weight decay); as torch.optim.NAdam.
    differentiable=True raises RuntimeError; foreach and capturable are accepted but change nothing
    (one parameter at a time, step counts on the CPU: step() can't be captured by pg.jit)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        check_hyper("NAdam", lr=lr, eps=eps, betas=betas, weight_decay=weight_decay, momentum_decay=momentum_decay)
        self._check_implementation(foreach, None, differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, foreach=foreach,
                                      maximize=maximize, capturable=capturable, differentiable=differentiable))

    def _init_state(self, p, group):
        return {"step": _cpu_step(), "mu_product": tensor(1.0, device="cpu"), "exp_avg": zeros_like_buf(p),
                "exp_avg_sq": zeros_like_buf(p)}

    def _update(self, p, grad, st, g, step):
        (beta1, beta2), lr = g["betas"], g["lr"]
        grad = self._weight_decay(p, grad, g)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * g["momentum_decay"]))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * g["momentum_decay"]))
        st["mu_product"].mul_(mu)                   # (a float32 CPU scalar, as PyTorch keeps it)
        mu_product = st["mu_product"].item()
        st["exp_avg"].lerp_(grad, 1 - beta1)
        st["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = st["exp_avg_sq"].div(1 - beta2 ** step).sqrt().add_(g["eps"])
        p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
        p.addcdiv_(st["exp_avg"], denom, value=-lr * mu_next / (1.0 - mu_product * mu_next))
