"""Full backward hooks and pre-hooks (nn/hooks.py) against torch.nn.Module's: what they see,
replacing gradients, removal, and the warning when no input requires grad."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn as nn


def _record_backward_hooks(lib, m, log):
    as_list = lambda gs: [None if g is None else g.tolist() for g in gs]  # noqa: E731
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", as_list(go))))
    return m.register_full_backward_hook(lambda mod, gi, go: log.append(("full", as_list(gi), as_list(go))))


def test_full_backward_hooks_match_torch():
    logs, grads = [], []
    for lib in (torch, pg):
        class Mix(lib.nn.Module):
            def forward(self, a, b, k):
                return a * b * k, (a + b).sum()
        log = []
        m = Mix()
        _record_backward_hooks(lib, m, log)
        a, b = lib.tensor([1.0, 2.0], requires_grad=True), lib.tensor([3.0, 4.0])
        o1, o2 = m(a, b, 2.0)
        (o1 * lib.tensor([1.0, -1.0])).sum().backward()
        logs.append(log)
        grads.append(a.grad.tolist())
    assert logs[0] == logs[1] and grads[0] == grads[1]


def test_full_backward_hooks_replace_gradients_and_remove():
    for lib in (torch, pg):
        lin = lib.nn.Linear(3, 2)
        pre = lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 10,))
        full = lin.register_full_backward_hook(lambda m, gi, go: (gi[0] + 1,))
        x = lib.ones(1, 3, requires_grad=True)
        lin(x).sum().backward()
        w = lin.weight.detach().numpy()
        np.testing.assert_allclose(x.grad.numpy(), 10 * w.sum(0, keepdims=True) + 1, rtol=1e-6)
        np.testing.assert_allclose(lin.weight.grad.numpy(), np.full((2, 3), 10.0))   # parameters see go * 10
        pre.remove()
        full.remove()
        x.grad = None
        lin(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), w.sum(0, keepdims=True), rtol=1e-6)


def test_full_backward_hook_without_input_grads_warns_and_fires_at_the_outputs():
    seen = []
    lin = nn.Linear(3, 2)
    lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, [g.tolist() for g in go])))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        lin(pg.ones(1, 3)).sum().backward()
    assert seen == [((None,), [[[1.0, 1.0]]])]
    with pytest.raises(RuntimeError, match="invalid number of grad_input"):
        lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
        lin(pg.ones(1, 3, requires_grad=True)).sum().backward()
