"""RMSprop (PyTorch's update): a running average of squared gradients scales each step;
centered=True also subtracts the squared running mean of the gradient, momentum adds a
velocity buffer."""
from __future__ import annotations

from .optimizer import SingleTensorOptimizer, _cpu_step, check_hyper, zeros_like_buf


class RMSprop(SingleTensorOptimizer):
    """RMSprop: steps divided by the root of a running average of squared gradients (centered:
    minus the squared running mean; momentum: a velocity buffer); as torch.optim.RMSprop.
    differentiable=True raises RuntimeError; foreach and capturable are accepted but change nothing
    (one parameter at a time, step counts on the CPU: step() can't be captured by pg.jit)."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, capturable=False, foreach=None, maximize=False, differentiable=False):
        check_hyper("RMSprop", lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        self._check_implementation(foreach, None, differentiable)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, capturable=capturable,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable))

    def _init_state(self, p, group):
        st = {"step": _cpu_step(), "square_avg": zeros_like_buf(p)}
        if group["momentum"] > 0:
            st["momentum_buffer"] = zeros_like_buf(p)
        if group["centered"]:
            st["grad_avg"] = zeros_like_buf(p)
        return st

    def _update(self, p, grad, st, g, step):
        alpha, lr = g["alpha"], g["lr"]
        grad = self._weight_decay(p, grad, g)
        st["square_avg"].mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if g["centered"]:
            st["grad_avg"].lerp_(grad, 1 - alpha)
            avg = st["square_avg"].addcmul(st["grad_avg"], st["grad_avg"], value=-1).sqrt_()
        else:
            avg = st["square_avg"].sqrt()
        avg = avg.add_(g["eps"])
        if g["momentum"] > 0:
            buf = st["momentum_buffer"]
            buf.mul_(g["momentum"]).addcdiv_(grad, avg)
            p.add_(buf, alpha=-lr)
        else:
            p.addcdiv_(grad, avg, value=-lr)
