"""pg.cuda.make_graphed_callables, as torch.cuda.make_graphed_callables: each callable (a
module or a function) runs its forward, and its backward, as CUDA graphs recorded once, up
front, from sample arguments (paragrad/captured_module.py does the recording and replaying).

Differences from torch, both on the safe side: each call returns fresh output tensors (torch
returns the graph's static outputs, which the next call overwrites), and each callable's graphs
have their own memory (torch may share one pool between the callables, which then must run in
the order they were recorded; `pool` is therefore refused).
"""
from __future__ import annotations

from ..captured_module import CapturedModule
from ..nn.module import Module
from ..tensor import Tensor


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None):
    """callables: a module or function, or a tuple of them; sample_args: a tuple of tensors for
    each (for one callable, its tuple). Each runs num_warmup_iters eager forward+backward calls
    on its sample arguments (on a side stream, gradients discarded: dropout and BatchNorm
    statistics see them, as in torch), then its forward and backward are recorded. Returns the
    graphed callables in the same form: a module comes back as itself with its forward replaced
    (while it is in the training mode it was recorded in; in the other mode its own forward
    runs), a function as a new function. Later calls copy their arguments into the graph's
    inputs: tensors of the sample arguments' shapes, dtypes and requires_grad (others are
    recorded anew)."""
    if pool is not None:
        raise RuntimeError("make_graphed_callables: pool (one memory pool shared with other graphs) is not "
                           "supported: paragrad gives each callable's graphs their own memory")
    single = not isinstance(callables, tuple)
    if single:
        callables, sample_args = (callables,), (sample_args,)
    if len(callables) != len(sample_args):
        raise ValueError(f"make_graphed_callables: {len(callables)} callables but {len(sample_args)} "
                         f"tuples of sample_args")
    for c, args in zip(callables, sample_args):
        _check(c, args)
    graphed = tuple(_graph(c, args, num_warmup_iters, allow_unused_input) for c, args in zip(callables, sample_args))
    return graphed[0] if single else graphed


def _check(c, args):
    if not isinstance(args, tuple) or not all(isinstance(a, Tensor) for a in args):
        got = sorted({type(a).__name__ for a in args}) if isinstance(args, tuple) else [type(args).__name__]
        raise TypeError("make_graphed_callables: sample_args for each callable must be a tuple containing only "
                        f"Tensors. Other types are not allowed; got {', '.join(got)}")
    if not args or any(a.device.type != "cuda" for a in args):
        raise RuntimeError("make_graphed_callables: sample_args must be CUDA tensors (at least one), got "
                           f"devices {[str(a.device) for a in args]}")
    if isinstance(c, Module):
        if any(m._has_hooks() for m in c.modules()):
            raise RuntimeError("make_graphed_callables: Modules must not have hooks registered at the time they "
                               "are passed. However, registering hooks on modules after passing them through "
                               "make_graphed_callables is allowed.")
        if any(p.device.type != "cuda" for p in c.parameters()):
            raise RuntimeError("make_graphed_callables: the module's parameters must be on the GPU")
    elif not callable(c):
        raise TypeError(f"make_graphed_callables: expected a Module or a function, got {type(c).__name__}")


def _graph(c, args, warmup, allow_unused_input):
    name = f"make_graphed_callables({type(c).__name__ if isinstance(c, Module) else getattr(c, '__name__', type(c).__name__)})"
    if not isinstance(c, Module):
        captured = CapturedModule(None, name, fn=c)
        captured.prime(args, warmup, allow_unused_input)
        return captured
    forward, training = c.forward, c.training
    captured = CapturedModule(c, name, fn=forward)
    captured.prime(args, warmup, allow_unused_input)

    def graphed_forward(*a, **kw):
        return captured(*a, **kw) if c.training == training else forward(*a, **kw)
    c.forward = graphed_forward
    return c
