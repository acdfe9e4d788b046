"""random_windows inside a training step captured by pg.jit on a GPU: the step draws its own
batch on the device, new windows on every replay. Marked `gpu` (scripts/gpu-check)."""
import numpy as np
import pytest

import paragrad as pg
import paragrad.nn.functional as F
from paragrad.data import TokenDataset, random_windows

pytestmark = pytest.mark.gpu

N, V, B, T = 5000, 97, 4, 16


def test_a_captured_step_draws_its_own_windows(tmp_path):
    path = tmp_path / "tokens.bin"
    (np.arange(N) % V).astype("<u2").tofile(path)
    tokens = TokenDataset(path).tokens_on_device("cuda")
    generator = pg.Generator("cuda").manual_seed(1)
    model = pg.nn.Sequential(pg.nn.Embedding(V, 16), pg.nn.Linear(16, V)).to("cuda")
    opt = pg.optim.AdamW(model.parameters(), lr=1e-2)

    def train_step(loss_scale):
        x, y = random_windows(tokens, B, T, generator=generator)                # (B, T) each
        loss = F.cross_entropy(model(x).reshape(B * T, V), y.reshape(B * T)) * loss_scale
        opt.zero_grad()
        loss.backward()
        opt.step()
        return x, y, loss

    # pg.jit captures on the device of its tensor arguments: a step that takes none runs eagerly
    step = pg.jit(train_step)
    one = pg.ones((), device="cuda")
    starts, losses = [], []
    for _ in range(6):
        x, y, loss = (t.detach().cpu().numpy() for t in step(one))
        assert np.array_equal(x % V, (x[:, :1] + np.arange(T)) % V)           # consecutive tokens
        assert np.array_equal((x + 1) % V, y)                                  # y: the next ones
        starts.append(tuple(x[:, 0]))
        losses.append(float(loss))
    assert step.graph_nodes() > 0
    assert len(set(starts)) == len(starts)                                     # new draws each call
    assert losses[-1] < losses[0]                                              # it trains
