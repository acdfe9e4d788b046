"""Sequential's Linear+activation fusion (modules/sequential_fusion.py): a module with a backward
hook is called on its own, and fuse_linear_chains = False runs the modules one by one with the
same results."""
from __future__ import annotations

import numpy as np
import pytest

import paragrad as pg
import paragrad.nn as nn


def test_backward_hooks_keep_a_linear_chain_unfused():
    """Sequential runs Linear(+activation) chains as one fused op; a module with a backward
    hook must be called on its own, so the hook fires."""
    seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    fired = []
    seq[2].register_full_backward_hook(lambda m, gi, go: fired.append(tuple(gi[0].shape)))
    seq(pg.ones(5, 4, requires_grad=True)).sum().backward()
    assert fired == [(5, 4)]


@pytest.mark.parametrize("off", ["instance", "class"])
def test_fusion_switched_off_runs_the_modules_one_by_one(off, monkeypatch):
    """fuse_linear_chains = False (on one Sequential or on the class): every module's forward
    runs, and the output and gradients are those of the fused run."""
    def build():
        pg.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.GELU("tanh"), nn.Linear(8, 2))
    calls = []

    def spy(cls):
        forward = cls.forward
        monkeypatch.setattr(cls, "forward", lambda self, x: calls.append(cls.__name__) or forward(self, x))
    for cls in (nn.Linear, nn.ReLU, nn.GELU):
        spy(cls)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    results = []
    for fuse in (True, False):
        seq = build()
        if not fuse:
            if off == "instance":
                seq.fuse_linear_chains = False
            else:
                monkeypatch.setattr(nn.Sequential, "fuse_linear_chains", False)
        calls.clear()
        xp = pg.tensor(x, requires_grad=True)
        y = seq(xp)
        y.sum().backward()
        results.append((calls[:], y.detach().numpy(), xp.grad.numpy(), [p.grad.numpy() for p in seq.parameters()]))
    (fused_calls, *fused), (plain_calls, *plain) = results
    assert plain_calls == ["Linear", "ReLU", "Linear", "GELU", "Linear"]
    assert "ReLU" not in fused_calls and "GELU" not in fused_calls      # Linear+activation fused
    np.testing.assert_allclose(fused[0], plain[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fused[1], plain[1], rtol=1e-6, atol=1e-6)
    for a, b in zip(fused[2], plain[2]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
