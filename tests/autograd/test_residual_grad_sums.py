"""The residual stream's gradient sums in place: a residual add with dropout hands its incoming
gradient on unchanged (passes_grad), and layer_norm adds its dx into that buffer (add_into), so
a pre-LayerNorm stack sums the skip path and the branch with no separate add. The gradients must
be those of the plain ops, and nothing the user holds (a hook's argument, a retained .grad, an
autograd.grad result) may see a later in-place sum."""
import numpy as np
import pytest

import paragrad as pg
import paragrad.nn.functional as F
from paragrad.backends.base import fast_paths
from paragrad.ops.neural.layer_norm import NativeLayerNormBackward0
from tests.helpers import _np

N_BLOCKS, WIDTH = 3, 16


def _stack(device, fused, probe=None):
    """x -> 3 pre-LayerNorm residual blocks (x + dropout(linear(ln(x)))) -> sum of squares; the
    blocks' outputs h[i] are returned for probes (hooks, retain_grad, autograd.grad)."""
    rng = np.random.default_rng(0)
    x = pg.tensor(rng.standard_normal((4, 5, WIDTH)).astype(np.float32), device=device, requires_grad=True)
    lin = [pg.tensor(rng.standard_normal((WIDTH, WIDTH)).astype(np.float32) * 0.3, device=device,
                     requires_grad=True) for _ in range(N_BLOCKS)]
    pg.manual_seed(7)
    h, hs = x, []
    with fast_paths(fused):
        for w in lin:
            branch = F.layer_norm(h, (WIDTH,)) @ w
            h = F.residual_dropout(h, branch, 0.25)
            hs.append(h)
            if probe is not None:
                probe(h)
        loss = (h * h).sum()
    return x, lin, hs, loss


@pytest.fixture
def add_into_calls(monkeypatch):
    calls = []
    real = NativeLayerNormBackward0.add_into

    def counted(self, acc, g):
        r = real(self, acc, g)
        calls.append(r is not None)
        return r
    monkeypatch.setattr(NativeLayerNormBackward0, "add_into", counted)
    return calls


def test_stack_gradients_equal_the_plain_ops(device, add_into_calls):
    grads = []
    for fused in (True, False):
        x, lin, _, loss = _stack(device, fused)
        loss.backward()
        grads.append([_np(t.grad) for t in [x] + lin])
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # fused: every block's layer_norm added into the stream's buffer; plain: none could
    assert add_into_calls[:N_BLOCKS] == [True] * N_BLOCKS
    assert not any(add_into_calls[N_BLOCKS:])


def test_held_gradients_are_not_summed_into(device):
    """A hook keeping its gradient, a retained .grad and autograd.grad's results hold the
    stream's buffers; the sums after them must not change what they hold."""
    results = []
    for fused in (True, False):
        seen = []
        x, lin, hs, loss = _stack(device, fused, probe=lambda h: h.register_hook(seen.append))
        hs[1].retain_grad()
        loss.backward(retain_graph=True)
        got = [_np(g) for g in seen] + [_np(hs[1].grad), _np(x.grad)]
        got += [_np(g) for g in pg.autograd.grad(loss, [hs[0], x])]
        results.append(got)
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
