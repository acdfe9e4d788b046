"""RAdam (PyTorch's update): Adam whose adaptive step is switched on, rectified, once the
variance of the adaptive learning rate is tractable (rho_t > 5); before that, momentum SGD.
decoupled_weight_decay=True shrinks the weights as AdamW."""
from __future__ import annotations

from .optimizer import SingleTensorOptimizer, _cpu_step, check_hyper, zeros_like_buf


class RAdam(SingleTensorOptimizer):
    """RAdam: Adam with its adaptive step rectified, used once the variance is tractable
    (rho_t > 5), momentum SGD before; as torch.optim.RAdam.
    differentiable=True raises RuntimeError; foreach and capturable are accepted but change nothing
    (one parameter at a time, step counts on the CPU: step() can't be captured by pg.jit)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        check_hyper("RAdam", lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        self._check_implementation(foreach, None, differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, foreach=foreach,
                                      maximize=maximize, capturable=capturable, differentiable=differentiable))

    def _init_state(self, p, group):
        return {"step": _cpu_step(), "exp_avg": zeros_like_buf(p), "exp_avg_sq": zeros_like_buf(p)}

    def _update(self, p, grad, st, g, step):
        (beta1, beta2), lr = g["betas"], g["lr"]
        grad = self._weight_decay(p, grad, g)
        st["exp_avg"].lerp_(grad, 1 - beta1)
        st["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1, bias_correction2 = 1 - beta1 ** step, 1 - beta2 ** step
        corrected = st["exp_avg"] / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = bias_correction2 ** 0.5 / st["exp_avg_sq"].sqrt().add_(g["eps"])
            p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
        else:
            p.add_(corrected * lr, alpha=-1.0)
