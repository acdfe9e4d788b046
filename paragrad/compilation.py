"""pg.compile, torch.compile's front door: the same signature, argument checks and returned
objects (an nn.Module comes back wrapped in an OptimizedModule whose state_dict keys start with
`_orig_mod.`, as nanoGPT's checkpoints expect; a function comes back as a new function), so an
unmodified PyTorch script that calls torch.compile runs under `paragrad run`.

What it does not do yet: compile. The returned callable runs the model eagerly, with the
results eager code gives, on every device. Capturing a compiled module's forward and backward
as CUDA graphs is the planned CUDA path; today a whole training step is captured by pg.jit.
"""
from __future__ import annotations

import functools

from .nn.module import Module

# torch.compile's modes and the backend names a script may pass (torch._dynamo.list_backends())
MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
BACKENDS = ("inductor", "eager", "aot_eager", "cudagraphs")


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None,  # noqa: A001
            disable=False):
    """model as torch.compile returns it: an nn.Module wrapped in an OptimizedModule, a function
    in a new function, or, with model None, a decorator that does so; disable=True returns
    model itself. mode must be one of torch's (MODES) and not given with options; backend one
    of BACKENDS, None meaning "inductor" (a callable backend, which torch hands an FX graph, is
    refused). The result
    runs model eagerly (see the module's docstring): fullgraph, dynamic and options change
    nothing."""
    if model is None:
        def decorate(model):
            return compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, disable=disable)
        return decorate
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    if callable(backend) and not isinstance(backend, str):
        raise RuntimeError("compile: a callable backend is handed a torch.fx graph, which paragrad does "
                           f"not build; use one of the backend names {', '.join(BACKENDS)}")
    if backend is not None and backend not in BACKENDS:
        raise RuntimeError(f"Invalid backend: {backend!r}, paragrad takes one of: {', '.join(BACKENDS)}")
    if not callable(model):
        raise RuntimeError(f"compile: expected a Module or a function to optimize, got {type(model).__name__}")
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model)

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        return model(*args, **kwargs)
    return compiled


class OptimizedModule(Module):
    """What compile returns for an nn.Module (torch's OptimizedModule): the original is its
    submodule `_orig_mod` (so state_dict keys start with `_orig_mod.`, parameters are the
    original's, train()/eval() and to() reach it), calling it runs the original's forward,
    and attributes it lacks are the original's (model.generate, model.config)."""

    def __init__(self, mod):
        super().__init__()
        self._orig_mod = mod

    def forward(self, *args, **kwargs):
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            mod = self.__dict__.get("_modules", {}).get("_orig_mod")
            if mod is None:         # (not initialized yet: a copy or unpickling in progress)
                raise
            return getattr(mod, name)
