"""SGD with momentum, dampening, Nesterov and weight decay (PyTorch's update rule)."""
from __future__ import annotations

from ..autograd import no_grad
from ..tensor import bump_version
from .optimizer import Optimizer, check_hyper, required, zeros_like_buf


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening, Nesterov momentum, weight
    decay and maximize, as torch.optim.SGD:

        g = grad (-grad with maximize) + weight_decay * p
        b = momentum * b + (1 - dampening) * g  (b = g at the first step)
        g = g + momentum * b if nesterov else b;  p -= lr * g

    Each step updates all parameters of a group in one call on backends with a fused `sgd_step`
    (CUDA); foreach / fused / differentiable are accepted for PyTorch's signature."""
    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False, fused=None):
        check_hyper("SGD", nan_ok=True, **({} if lr is required else {"lr": lr}), momentum=momentum,
                    weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum requires a momentum and zero dampening")
        self._check_implementation(foreach, fused, differentiable)
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                                      foreach=foreach, differentiable=differentiable, fused=fused))

    _step_supports_amp_scaling = True

    @no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        found_inf, skip = self._found_inf_buffer(), None
        for g, params in self._groups_with_grads():
            mom = g["momentum"]
            firsts, bufs = [], []
            for p in params:
                st = self.state.setdefault(p, {})
                buf = st.get("momentum_buffer") if mom else None
                firsts.append(mom != 0 and buf is None)
                if mom and buf is None:           # filled with the first gradient below
                    self._new_state(p, "SGD's momentum buffer")
                    buf = st["momentum_buffer"] = zeros_like_buf(p)
                bufs.append(buf._data if buf is not None else None)
            hyper = dict(momentum=mom, dampening=g["dampening"], weight_decay=g["weight_decay"],
                         nesterov=g["nesterov"], maximize=g["maximize"])
            cols = ([p._data for p in params], [p.grad._data for p in params], bufs, firsts)
            b = params[0]._backend
            fast = b.fast("sgd_step")
            # fused: the learning rate is read on the device (see Optimizer._lr_buffer)
            if not (fast is not None and self._use_multi_tensor(g) and all(p._backend is b for p in params)
                    and fast(*cols, lr=self._lr_buffer(g, params[0]), found_inf=found_inf, **hyper)):
                skip = self._skipped_by_scaler() if skip is None else skip
                for i, p in enumerate(params if not skip else ()):
                    sgd_update(p._backend, *(col[i] for col in cols), lr=float(g["lr"]), **hyper)
            for p in params:        # the parameters were written in place
                bump_version(p)
        return loss


def sgd_update(b, w, grad, buf, first, *, lr, momentum, dampening, weight_decay, nesterov, maximize):
    """One SGD step for one parameter, in place (PyTorch's rule); backends' `fast_sgd_step`
    must compute the same."""
    if maximize:
        grad = b.unary("neg", grad)
    if weight_decay:
        grad = b.binary("add", grad, b.binary("mul", w, weight_decay))
    if momentum:
        if first:
            b.copy_(buf, grad)
        else:
            b.binary("mul", buf, momentum, out=buf)
            b.binary("add", buf, b.binary("mul", grad, 1 - dampening), out=buf)
        grad = b.binary("add", grad, b.binary("mul", buf, momentum)) if nesterov else buf
    b.binary("sub", w, b.binary("mul", grad, lr), out=w)
