"""The Linear+activation fusion of nn.Sequential: the one place where paragrad runs a Sequential
otherwise than module by module.

What it rewrites: in a Sequential's forward, each run of consecutive Linear modules, each
optionally followed by a ReLU or a GELU(approximate='tanh'), is run as fused ops instead of one
module call each:
- a run of two or more Linears (Linear [act] Linear [act] ...) becomes one `mlp` op, when the
  input's backend has the fused mlp path (CUDA);
- otherwise a Linear directly followed by its activation becomes one `linear_act` op.
Anything else (other modules, a lone Linear) is called as usual.

When: only modules whose type is exactly Linear, ReLU or GELU (not subclasses) and that have no
hooks (forward, pre-forward or backward) take part, so a hooked module is always called, and
the fused ops compute what the modules would (the same parameters, the same gradients).

The switch: `paragrad.nn.Sequential.fuse_linear_chains` (True by default). Set it to False on
the class (every Sequential) or on one Sequential instance to run the modules one by one:

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model.fuse_linear_chains = False      # this model: module by module
    nn.Sequential.fuse_linear_chains = False   # every Sequential
"""
from __future__ import annotations

from ...ops.neural.linear import linear_act, mlp
from ...tensor import Tensor
from .activation import GELU, ReLU
from .linear import Linear


def fused_forward(mods, x):
    """x through the modules `mods` in order, with the runs described above fused."""
    i = 0
    while i < len(mods):
        chain, j = _linear_chain(mods, i)
        if len(chain) >= 2 and isinstance(x, Tensor) and x._backend.fast("mlp") is not None:
            x = mlp(x, chain)        # Linear [act] Linear [act] ...: one fused op
            i = j
        elif chain and chain[0][2] is not None:     # Linear then its activation: one op
            w, b, act = chain[0]
            x = linear_act(x, w, b, act)
            i += 2
        else:
            x = mods[i](x)
            i += 1
    return x


def _plain(m):
    return not m._has_hooks()


def _linear_chain(mods, i):
    """The longest run of hook-free Linear modules from i, each optionally followed by a
    hook-free ReLU or GELU(approximate='tanh'), the fusions the mlp / linear_act ops run:
    -> ([(weight, bias, act), ...], index after the run)."""
    chain = []
    while i < len(mods) and type(mods[i]) is Linear and _plain(mods[i]):
        act = _activation(mods[i + 1]) if i + 1 < len(mods) else None
        chain.append((mods[i].weight, mods[i].bias, act))
        i += 2 if act else 1
    return chain, i


def _activation(m):
    """The linear_act name of a fusable activation module, else None."""
    if not _plain(m):
        return None
    if type(m) is ReLU:
        return "relu"
    if type(m) is GELU and m.approximate == "tanh":
        return "gelu_tanh"
    return None
