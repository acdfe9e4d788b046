"""F.embedding_bag / nn.EmbeddingBag against torch: every mode, padding_idx, 1-D input with
offsets (include_last_offset too, empty bags), 2-D input, per_sample_weights (values and
gradients), the module's repr, state and from_pretrained, and torch's argument errors."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import assert_close

W = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
INPUTS = {
    "offsets": (np.array([1, 2, 0, 4, 0]), np.array([0, 2, 2, 4]), {}),
    "last-offset": (np.array([1, 2, 0, 4, 0]), np.array([0, 2, 2, 4, 5]), {"include_last_offset": True}),
    "2d": (np.array([[1, 2, 3], [0, 5, 5]]), None, {}),
}


@pytest.mark.parametrize("padding_idx", [None, 0])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("case", INPUTS)
def test_embedding_bag_matches_torch(case, mode, padding_idx, device):
    x, off, kw = INPUTS[case]
    tw, pw = torch.tensor(W, requires_grad=True), pg.tensor(W, device=device, requires_grad=True)
    t = torch.nn.functional.embedding_bag(torch.tensor(x), tw, None if off is None else torch.tensor(off),
                                          mode=mode, padding_idx=padding_idx, **kw)
    p = pg.nn.functional.embedding_bag(pg.tensor(x, device=device), pw,
                                       None if off is None else pg.tensor(off, device=device),
                                       mode=mode, padding_idx=padding_idx, **kw)
    assert_close(p, t, 1e-6, 1e-5)
    g = np.random.default_rng(1).standard_normal(tuple(t.shape)).astype(np.float32)
    t.backward(torch.tensor(g))
    p.backward(pg.tensor(g, device=device))
    assert_close(pw.grad, tw.grad, 1e-6, 1e-5)


def test_per_sample_weights(device):
    x, off = np.array([1, 2, 3, 4]), np.array([0, 3])
    psw = np.random.default_rng(2).standard_normal(4).astype(np.float32)
    tp, pp = torch.tensor(psw, requires_grad=True), pg.tensor(psw, device=device, requires_grad=True)
    t = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(W), mode="sum")(torch.tensor(x), torch.tensor(off), tp)
    p = pg.nn.EmbeddingBag.from_pretrained(pg.tensor(W, device=device), mode="sum")(
        pg.tensor(x, device=device), pg.tensor(off, device=device), pp)
    assert_close(p, t, 1e-6, 1e-5)
    t.sum().backward()
    p.sum().backward()
    assert_close(pp.grad, tp.grad, 1e-6, 1e-5)


def test_module_repr_state_and_errors():
    for kw in ({}, {"mode": "max", "padding_idx": 0}, {"mode": "sum", "max_norm": 1.0}):
        assert repr(pg.nn.EmbeddingBag(5, 3, **kw)) == repr(torch.nn.EmbeddingBag(5, 3, **kw))
    bag = pg.nn.EmbeddingBag(5, 3, padding_idx=2)
    assert list(bag.state_dict()) == ["weight"] and not bag.weight[2].detach().numpy().any()
    assert not pg.nn.EmbeddingBag.from_pretrained(pg.tensor(W)).weight.requires_grad
    x, off = pg.tensor([1, 2, 3]), pg.tensor([0, 1])
    for call, exc in ((lambda: pg.nn.functional.embedding_bag(x, pg.tensor(W), off, mode="max",
                                                               per_sample_weights=pg.ones(3)), NotImplementedError),
                      (lambda: pg.nn.functional.embedding_bag(x, pg.tensor(W)), ValueError),
                      (lambda: pg.nn.functional.embedding_bag(x.reshape(1, 3), pg.tensor(W), off), ValueError),
                      (lambda: pg.nn.functional.embedding_bag(x, pg.tensor(W), pg.tensor([1, 2])), ValueError),
                      (lambda: pg.nn.EmbeddingBag(5, 3, mode="median"), ValueError)):
        with pytest.raises(exc):
            call()
