"""SGD with momentum, dampening, Nesterov and weight decay (PyTorch's update rule)."""
from __future__ import annotations

from ..autograd import no_grad
from .optimizer import Optimizer, required


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, maximize=False):
        if lr is not required and lr < 0.0:
            raise ValueError(f"SGD: Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"SGD: Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"SGD: Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, maximize=maximize))

    @no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        for g in self.param_groups:
            lr, mom, damp, wd = g["lr"], g["momentum"], g["dampening"], g["weight_decay"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                b, w = p._backend, p._data
                grad = p.grad._data
                if g["maximize"]:
                    grad = b.unary("neg", grad)
                if wd:
                    grad = b.binary("add", grad, b.binary("mul", w, wd))
                if mom:
                    st = self.state.setdefault(p, {})
                    buf = st.get("momentum_buffer")
                    if buf is None:
                        st["momentum_buffer"] = buf = p.grad.detach().clone()
                        b.copy_(buf._data, grad)
                    else:
                        b.binary("mul", buf._data, mom, out=buf._data)
                        b.binary("add", buf._data, b.binary("mul", grad, 1 - damp) if damp else grad,
                                 out=buf._data)
                    grad = b.binary("add", grad, b.binary("mul", buf._data, mom)) if g["nesterov"] \
                        else buf._data
                b.binary("sub", w, b.binary("mul", grad, _lr(lr)), out=w)
        return loss


def _lr(lr):
    """The learning rate as a Python float (a 0-d tensor lr is read once per step)."""
    return float(lr)
