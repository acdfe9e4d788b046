"""TransformerEncoderLayer / TransformerEncoder against PyTorch's with the same weights (eval
mode: dropout off): post- and pre-norm, relu and gelu, batch_first, masks; gradients of every
parameter; state_dict keys and reprs."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import comparable_repr

rng = np.random.default_rng(0)


def pair(layer_kw, num_layers=2, norm=False):
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(**layer_kw)
    t = torch.nn.TransformerEncoder(tl, num_layers, norm=torch.nn.LayerNorm(layer_kw["d_model"]) if norm else None,
                                    enable_nested_tensor=False)
    pl = pg.nn.TransformerEncoderLayer(**layer_kw)
    p = pg.nn.TransformerEncoder(pl, num_layers, norm=pg.nn.LayerNorm(layer_kw["d_model"]) if norm else None)
    assert list(p.state_dict()) == list(t.state_dict())
    p.load_state_dict({k: pg.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return p.eval(), t.eval()


@pytest.mark.parametrize("layer_kw,norm,fkw", [
    (dict(d_model=8, nhead=2, dim_feedforward=16), False, {}),
    (dict(d_model=8, nhead=4, dim_feedforward=12, activation="gelu", norm_first=True, batch_first=True), True, {}),
    (dict(d_model=8, nhead=2, dim_feedforward=16), False, {"causal": True}),
    (dict(d_model=8, nhead=2, dim_feedforward=16, bias=False), True, {"padding": True}),
], ids=["post-norm", "pre-norm-gelu-batch-first", "causal", "no-bias-padding"])
def test_encoder_matches_torch(layer_kw, norm, fkw):
    p, t = pair(layer_kw, norm=norm)
    assert comparable_repr(p.layers[0]) == repr(t.layers[0])
    shape = (3, 5, 8) if layer_kw.get("batch_first") else (5, 3, 8)
    x = rng.standard_normal(shape).astype(np.float32)
    kw_p, kw_t = {}, {}
    if fkw.get("causal"):
        m = np.triu(np.ones((5, 5), bool), 1)
        kw_p, kw_t = {"mask": pg.tensor(m), "is_causal": True}, {"mask": torch.tensor(m), "is_causal": True}
    if fkw.get("padding"):
        pad = np.zeros((3, 5), bool)
        pad[1, 3:] = True
        kw_p, kw_t = {"src_key_padding_mask": pg.tensor(pad)}, {"src_key_padding_mask": torch.tensor(pad)}
    po, to = p(pg.tensor(x), **kw_p), t(torch.tensor(x), **kw_t)
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
    (po * po).sum().backward()
    (to * to).sum().backward()
    for (n, a), (_, b) in zip(p.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-3, atol=1e-4, err_msg=n)


def test_layers_are_independent_copies_and_bad_activation_is_refused():
    layer = pg.nn.TransformerEncoderLayer(8, 2, 16)
    enc = pg.nn.TransformerEncoder(layer, 3)
    assert len(enc.layers) == 3 and enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    with pytest.raises(RuntimeError, match="relu/gelu"):
        pg.nn.TransformerEncoderLayer(8, 2, activation="tanh")
