"""pg.compile, torch.compile's front door: the same signature, argument checks and returned
objects (an nn.Module comes back wrapped in an OptimizedModule whose state_dict keys start with
`_orig_mod.`, as nanoGPT's checkpoints expect; a function comes back as a new function), so an
unmodified PyTorch script that calls torch.compile runs under `paragrad run`.

What it compiles: a module called with CUDA tensors runs its forward and backward as captured
CUDA graphs, one pair per call signature (captured_module.py: the first call warms up, the
second records, later calls replay; what capture can't take runs eagerly with a warning). That
is paragrad's compiler for every mode but "max-autotune-no-cudagraphs" and the "eager" and
"aot_eager" backends (what torch's inductor gains by fusing kernels, paragrad gains by
launching the whole forward or backward at once). Those, the CPU, disable=True and plain
functions (which may read parameters that aren't their arguments, whose gradients a captured
backward would miss) run eagerly.
"""
from __future__ import annotations

import functools

from .captured_module import CapturedModule
from .nn.module import Module

# torch.compile's modes and the backend names a script may pass (torch._dynamo.list_backends())
MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
BACKENDS = ("inductor", "eager", "aot_eager", "cudagraphs")
# the modes and backends that ask for no CUDA graphs: they run eagerly
_WITHOUT_GRAPHS = ("max-autotune-no-cudagraphs", "eager", "aot_eager")


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None,  # noqa: A001
            disable=False):
    """model as torch.compile returns it: an nn.Module wrapped in an OptimizedModule, a function
    in a new function, or, with model None, a decorator that does so; disable=True returns
    model itself. mode must be one of torch's (MODES) and not given with options; backend one
    of BACKENDS, None meaning "inductor" (a callable backend, which torch hands an FX graph, is
    refused). A module's calls on CUDA run as captured graphs (see the module's docstring) but
    with mode="max-autotune-no-cudagraphs" or backend "eager" / "aot_eager"; fullgraph, dynamic
    and options change nothing."""
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
        return OptimizedModule(model, graphs=mode not in _WITHOUT_GRAPHS and backend not in _WITHOUT_GRAPHS)

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        return model(*args, **kwargs)
    return compiled


class OptimizedModule(Module):
    """What compile returns for an nn.Module (torch's OptimizedModule): the original is its
    submodule `_orig_mod` (so state_dict keys start with `_orig_mod.`, parameters are the
    original's, train()/eval() and to() reach it), calling it runs the original (through
    captured graphs where `graphs`), and attributes it lacks are the original's
    (model.generate, model.config)."""

    def __init__(self, mod, graphs=True):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_captured", CapturedModule(mod) if graphs else None)

    def forward(self, *args, **kwargs):
        captured = self.__dict__.get("_captured")
        return (captured or self._orig_mod)(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            mod = self.__dict__.get("_modules", {}).get("_orig_mod")
            if mod is None:         # (not initialized yet: a copy or unpickling in progress)
                raise
            return getattr(mod, name)
