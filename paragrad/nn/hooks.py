"""Backward hooks (Module.register_full_backward_hook / register_full_backward_pre_hook,
PyTorch's): identity autograd nodes around one module call. The node on the outputs sees the
gradients w.r.t. the outputs (grad_output; pre-hooks may replace them), the node on the inputs
sees the gradients w.r.t. the inputs (grad_input), and the full hooks run there: hook(module,
grad_input, grad_output) may return a replacement grad_input (tensor inputs that don't require
grad get zeros there, other arguments None). When no input requires grad the full hooks run at
the outputs' node, with grad_input all None, and warn, as in PyTorch."""
from __future__ import annotations

import warnings

from ..autograd import Function
from ..ops import zeros_like
from ..tensor import Tensor


class _Call:
    """The state of one module call's backward: which inputs are wrapped, grad_output."""

    def __init__(self, module, args):
        self.module, self.n_inputs = module, len(args)
        # positions of the inputs that require grad; the other tensor inputs get zero gradients
        self.wrapped_inputs = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad)
        self.constant_inputs = {i: a for i, a in enumerate(args) if isinstance(a, Tensor) and not a.requires_grad}
        self.grad_output = None

    def on_outputs(self, grads):
        for hook in list(self.module._backward_pre_hooks.values()):
            r = hook(self.module, grads)
            if r is not None:
                grads = tuple(r) if isinstance(r, (tuple, list)) else (r,)
        self.grad_output = grads
        if not self.wrapped_inputs and self.module._backward_hooks:
            warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                          "outputs since no inputs require gradients.")
            self._run_full_hooks((None,) * self.n_inputs)
        return grads

    def on_inputs(self, grads):
        full = [None] * self.n_inputs
        for pos, t in self.constant_inputs.items():
            full[pos] = zeros_like(t)
        for pos, g in zip(self.wrapped_inputs, grads):
            full[pos] = g
        full = self._run_full_hooks(tuple(full))
        return tuple(full[pos] for pos in self.wrapped_inputs)

    def _run_full_hooks(self, grad_input):
        for hook in list(self.module._backward_hooks.values()):
            r = hook(self.module, grad_input, self.grad_output)
            if r is not None:
                r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
                if len(r) != len(grad_input):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got "
                                       f"{len(r)}, but expected {len(grad_input)}")
                grad_input = r
        return grad_input


class _Identity(Function):
    """Passes tensors through; its backward hands their gradients to call.on_outputs/on_inputs."""

    @staticmethod
    def forward(ctx, call, side, *xs):
        ctx.call, ctx.side = call, side
        ctx.set_materialize_grads(False)
        return xs

    @staticmethod
    def backward(ctx, *grads):
        handler = ctx.call.on_outputs if ctx.side == "outputs" else ctx.call.on_inputs
        return (None, None) + tuple(handler(grads))


def wrap_inputs(module, args):
    """-> (call, args with the tensors that require grad passed through the inputs' node)."""
    call = _Call(module, args)
    if not call.wrapped_inputs:
        return call, args
    passed = _Identity.apply(call, "inputs", *(args[i] for i in call.wrapped_inputs))
    args = list(args)
    for i, t in zip(call.wrapped_inputs, passed):
        args[i] = t
    return call, tuple(args)


def wrap_outputs(call, out):
    """The module's output(s) with the tensors that require grad passed through the outputs' node."""
    outs = out if isinstance(out, tuple) else (out,)
    positions = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
    if not positions:
        return out
    passed = _Identity.apply(call, "outputs", *(outs[i] for i in positions))
    outs = list(outs)
    for i, t in zip(positions, passed):
        outs[i] = t
    return tuple(outs) if isinstance(out, tuple) else outs[0]
