"""Adam and AdamW (with amsgrad), following PyTorch's single-tensor update order so that
results agree with it step by step."""
from __future__ import annotations

import math

from .. import capture
from .. import dtypes as dt
from ..autograd import no_grad
from ..tensor import Tensor, _wrap, bump_version
from .optimizer import Optimizer, check_hyper, zeros_like_buf


class Adam(Optimizer):
    """PyTorch's Adam. decoupled_weight_decay=True makes it AdamW (weight decay shrinks the
    weights instead of adding to the gradient). foreach / fused choose the implementation as in
    PyTorch (see Optimizer._use_multi_tensor); capturable is accepted and always true here: the
    step counts live on the parameters' device, so a step can be captured by pg.jit."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        check_hyper(type(self).__name__, lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        self._check_implementation(foreach, fused, differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable,
                                      fused=fused, decoupled_weight_decay=decoupled_weight_decay))

    _step_supports_amp_scaling = True

    @no_grad()
    def step(self, closure=None):
        loss = self._closure(closure)
        found_inf, skip = self._found_inf_buffer(), None
        for g, params in self._groups_with_grads():
            states = [self._state_of(p, g["amsgrad"]) for p in params]
            beta1, beta2 = g["betas"]
            hyper = dict(beta1=beta1, beta2=beta2, eps=g["eps"], weight_decay=g["weight_decay"],
                         decoupled=bool(g["decoupled_weight_decay"]), amsgrad=g["amsgrad"],
                         maximize=g["maximize"])
            bufs = ([p._data for p in params], [p.grad._data for p in params],
                    [st["exp_avg"]._data for st in states], [st["exp_avg_sq"]._data for st in states],
                    [st["max_exp_avg_sq"]._data if g["amsgrad"] else None for st in states])
            b = params[0]._backend
            fast = b.fast("adam_step")
            # a fused multi-tensor update when the backend has one (reading the step counts and
            # the learning rate on the device; it returns False when it can't take these
            # buffers); else one parameter at a time
            if not (fast is not None and self._use_multi_tensor(g) and all(p._backend is b for p in params)
                    and fast(*bufs, [st["step"]._data for st in states],
                             lr=self._lr_buffer(g, params[0]), found_inf=found_inf, **hyper)):
                skip = self._skipped_by_scaler() if skip is None else skip
                for i, p in enumerate(params if not skip else ()):
                    t = _next_step(states[i]["step"])
                    adam_update(p._backend, *(col[i] for col in bufs), t, self._scratch(p),
                                lr=float(g["lr"]), **hyper)
            for p in params:        # the parameters were written in place
                bump_version(p)
        return loss

    def _state_of(self, p, amsgrad):
        st = self.state.get(p)
        if st is None:
            self._new_state(p, "Adam's state")
            st = self.state[p] = {"step": _step_tensor(0, p), "exp_avg": zeros_like_buf(p),
                                  "exp_avg_sq": zeros_like_buf(p)}
        elif not isinstance(st["step"], Tensor):       # a step count saved as a number
            st["step"] = _step_tensor(st["step"], p)
        if amsgrad and "max_exp_avg_sq" not in st:
            self._new_state(p, "Adam's max_exp_avg_sq")
            st["max_exp_avg_sq"] = zeros_like_buf(p)
        return st


def _step_tensor(n, p):
    """A step count as PyTorch keeps it: a float32 0-d tensor, here on the parameter's device
    so that a fused update can advance it there (and a captured step with it)."""
    return _wrap(p._backend.full((), float(n), dt.float32, p.device.index), dt.float32, p.device)


def _next_step(step):
    """Advance a step-count tensor by one for the unfused update; -> the new count (a host read)."""
    if step.device.type != "cpu":
        capture.forbid_sync("the unfused Adam update (it needs the step count on the host)")
    b = step._backend
    b.binary("add", step._data, 1, out=step._data)
    return int(b.to_numpy(step._data))


def adam_update(b, w, grad, m, v, vmax, t, s, *, lr, beta1, beta2, eps, weight_decay, decoupled,
                amsgrad, maximize):
    """One Adam/AdamW step for one parameter, in place on backend buffers; `s` is a scratch
    buffer of w's shape. Backends' `fast_adam_step` fast paths must compute the same."""
    if maximize:
        grad = b.unary("neg", grad)
    if weight_decay:
        if decoupled:
            b.binary("mul", w, 1 - lr * weight_decay, out=w)
        else:
            grad = b.binary("add", grad, b.binary("mul", w, weight_decay))
    # m += (1 - beta1) * (grad - m)      (PyTorch's lerp)
    b.binary("sub", grad, m, out=s)
    b.binary("mul", s, 1 - beta1, out=s)
    b.binary("add", m, s, out=m)
    # v = beta2 * v + (1 - beta2) * grad^2
    b.binary("mul", v, beta2, out=v)
    b.binary("mul", grad, grad, out=s)
    b.binary("mul", s, 1 - beta2, out=s)
    b.binary("add", v, s, out=v)
    if amsgrad:
        b.binary("maximum", vmax, v, out=vmax)
        v = vmax
    # w -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps), with the bias
    # corrections folded into two scalars: 4 passes instead of 6 (the result differs from
    # PyTorch's order of operations only by float rounding)
    c2 = math.sqrt(1 - beta2 ** t)
    b.unary("sqrt", v, out=s)
    b.binary("add", s, eps * c2, out=s)
    b.binary("div", m, s, out=s)
    b.binary("mul", s, lr * c2 / (1 - beta1 ** t), out=s)
    b.binary("sub", w, s, out=w)


class AdamW(Adam):
    """Adam with decoupled weight decay (PyTorch's AdamW)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)
