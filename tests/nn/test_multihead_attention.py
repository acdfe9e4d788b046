"""nn.MultiheadAttention against PyTorch's with the same weights: outputs, attention weights
and every parameter's gradient, for batch_first, unbatched, kdim/vdim, no bias, bool and float
masks, key padding; state_dict names; init; errors."""
import numpy as np
import pytest
import torch

import paragrad as pg

rng = np.random.default_rng(0)


def pair(*args, **kw):
    t = torch.nn.MultiheadAttention(*args, **kw)
    p = pg.nn.MultiheadAttention(*args, **kw)
    p.load_state_dict({k: pg.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return p, t


CAUSAL = np.triu(np.ones((5, 5), bool), 1)
PAD = np.zeros((3, 5), bool)
PAD[0, 3:] = True
CASES = {
    "default": ((8, 2), {}, [(5, 3, 8)] * 3, {}),
    "batch_first-per-head": ((8, 2), {"batch_first": True}, [(3, 5, 8), (3, 4, 8), (3, 4, 8)],
                             {"average_attn_weights": False}),
    "kdim-vdim": ((8, 4), {"kdim": 6, "vdim": 5}, [(5, 3, 8), (4, 3, 6), (4, 3, 5)], {}),
    "causal-bool-nobias": ((8, 2), {"bias": False}, [(5, 3, 8)] * 3, {"attn_mask": CAUSAL, "is_causal": True}),
    "float-mask-key-padding": ((8, 2), {}, [(5, 3, 8)] * 3,
                               {"key_padding_mask": PAD, "attn_mask": np.triu(np.full((5, 5), -1e9, np.float32), 1)}),
    "unbatched-no-weights": ((8, 2), {}, [(5, 8)] * 3, {"need_weights": False}),
}


@pytest.mark.parametrize("name", CASES)
def test_multihead_attention_matches_torch(name):
    args, kw, shapes, fkw = CASES[name]
    p, t = pair(*args, **kw)
    assert list(p.state_dict()) == list(t.state_dict()) and repr(p) == repr(t)
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    conv = lambda lib, v: lib.tensor(v) if isinstance(v, np.ndarray) else v  # noqa: E731
    pin = [pg.tensor(x, requires_grad=True) for x in xs]
    tin = [torch.tensor(x, requires_grad=True) for x in xs]
    po, pw = p(*pin, **{k: conv(pg, v) for k, v in fkw.items()})
    to, tw = t(*tin, **{k: conv(torch, v) for k, v in fkw.items()})
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert (pw is None) == (tw is None)
    cot = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    loss_p, loss_t = (po * pg.tensor(cot)).sum(), (to * torch.tensor(cot)).sum()
    if tw is not None:
        np.testing.assert_allclose(pw.detach().numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)
        loss_p, loss_t = loss_p + (pw * pw).sum(), loss_t + (tw * tw).sum()
    loss_p.backward()
    loss_t.backward()
    for (n, pp), (_, tp) in zip(p.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(pp.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=n)
    for a, b in zip(pin, tin):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_init_and_errors():
    pg.manual_seed(0)
    m = pg.nn.MultiheadAttention(16, 4)
    assert not m.in_proj_bias.detach().numpy().any() and not m.out_proj.bias.detach().numpy().any()
    bound = np.sqrt(6 / (16 + 48))      # xavier_uniform on the (3E, E) in_proj_weight
    assert np.abs(m.in_proj_weight.detach().numpy()).max() <= bound
    for make in (lambda lib: lib.nn.MultiheadAttention(10, 3),
                 lambda lib: lib.nn.MultiheadAttention(8, 2)(lib.ones(4, 2, 8), lib.ones(4, 2, 8),
                                                            lib.ones(4, 2, 8), is_causal=True),
                 lambda lib: lib.nn.MultiheadAttention(8, 2)(lib.ones(4, 2, 6), lib.ones(4, 2, 6), lib.ones(4, 2, 6))):
        with pytest.raises(Exception) as e:
            make(torch)
        with pytest.raises(e.type):
            make(pg)
