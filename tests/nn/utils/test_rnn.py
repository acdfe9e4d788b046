"""nn.utils.rnn.pad_sequence / unpad_sequence against torch's: batch_first, padding_value,
padding_side, trailing dims, the round trip, gradients back to each sequence, and the errors."""
import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as trnn

import paragrad as pg
from paragrad.nn.utils import rnn as prnn


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_torch(batch_first, side, device):
    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((n, 3, 2)).astype(np.float32) for n in (2, 4, 1)]
    ts = [torch.tensor(s, requires_grad=True) for s in seqs]
    ps = [pg.tensor(s, device=device, requires_grad=True) for s in seqs]
    t = trnn.pad_sequence(ts, batch_first=batch_first, padding_value=-1.0, padding_side=side)
    p = prnn.pad_sequence(ps, batch_first=batch_first, padding_value=-1.0, padding_side=side)
    assert np.array_equal(p.detach().cpu().numpy(), t.detach().numpy())
    g = rng.standard_normal(tuple(t.shape)).astype(np.float32)
    t.backward(torch.tensor(g))
    p.backward(pg.tensor(g, device=device))
    for a, b in zip(ps, ts):
        np.testing.assert_array_equal(a.grad.cpu().numpy(), b.grad.numpy())
    if side == "right":
        back = prnn.unpad_sequence(p, pg.tensor([2, 4, 1]), batch_first=batch_first)
        assert [x.cpu().tolist() for x in back] == [x.tolist() for x in seqs]


def test_pad_sequence_errors():
    with pytest.raises(RuntimeError, match="trailing shape"):
        prnn.pad_sequence([pg.ones(2, 3), pg.ones(2, 4)])
    with pytest.raises(ValueError, match="padding_side"):
        prnn.pad_sequence([pg.ones(2)], padding_side="middle")
    assert tuple(prnn.pad_sequence(pg.ones(3, 2)).shape) == tuple(trnn.pad_sequence(torch.ones(3, 2)).shape)
