"""Adam and AdamW (with amsgrad), following PyTorch's single-tensor update order so that
results agree with it step by step."""
from __future__ import annotations

import math

from ..autograd import no_grad
from .optimizer import Optimizer, zeros_like_buf


class Adam(Optimizer):
    decoupled = False    # AdamW: weight decay shrinks the weights instead of adding to the gradient

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, maximize=False):
        if lr < 0.0:
            raise ValueError(f"{type(self).__name__}: Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"{type(self).__name__}: Invalid epsilon value: {eps}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"{type(self).__name__}: Invalid beta parameters: {betas}")
        if weight_decay < 0.0:
            raise ValueError(f"{type(self).__name__}: Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    @no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        for g in self.param_groups:
            beta1, beta2 = g["betas"]
            lr, eps, wd = float(g["lr"]), g["eps"], g["weight_decay"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = self.state.get(p)
                if st is None:
                    st = self.state[p] = {"step": 0, "exp_avg": zeros_like_buf(p),
                                          "exp_avg_sq": zeros_like_buf(p)}
                    if g["amsgrad"]:
                        st["max_exp_avg_sq"] = zeros_like_buf(p)
                b, w = p._backend, p._data
                grad = p.grad._data
                if g["maximize"]:
                    grad = b.unary("neg", grad)
                st["step"] += 1
                t = st["step"]
                if wd:
                    if self.decoupled:
                        b.binary("mul", w, 1 - lr * wd, out=w)
                    else:
                        grad = b.binary("add", grad, b.binary("mul", w, wd))
                m, v = st["exp_avg"]._data, st["exp_avg_sq"]._data
                # m += (1 - beta1) * (grad - m)      (PyTorch's lerp)
                b.binary("add", m, b.binary("mul", b.binary("sub", grad, m), 1 - beta1), out=m)
                # v = beta2 * v + (1 - beta2) * grad^2
                b.binary("mul", v, beta2, out=v)
                sq = b.binary("mul", grad, grad)
                b.binary("add", v, b.binary("mul", sq, 1 - beta2, out=sq), out=v)
                if g["amsgrad"]:
                    vmax = st["max_exp_avg_sq"]._data
                    b.binary("maximum", vmax, v, out=vmax)
                    v = vmax
                step_size = lr / (1 - beta1 ** t)
                denom = b.unary("sqrt", v)
                b.binary("div", denom, math.sqrt(1 - beta2 ** t), out=denom)
                b.binary("add", denom, eps, out=denom)
                upd = b.binary("div", m, denom, out=denom)
                b.binary("sub", w, b.binary("mul", upd, step_size, out=upd), out=w)
        return loss


class AdamW(Adam):
    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)
