"""TransformerEncoder(Layer), TransformerDecoder(Layer) and Transformer against PyTorch's with the
same weights: outputs and gradients for every layer option (norm_first, batch_first,
activations, masks, final norm), independent layer copies, init, the square subsequent mask
and the errors."""
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


def load(p, t):
    assert list(p.state_dict()) == list(t.state_dict())
    p.load_state_dict({k: pg.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return p.eval(), t.eval()


def decoder_pair(layer_kw, num_layers=2, norm=False):
    torch.manual_seed(0)
    tl = torch.nn.TransformerDecoderLayer(**layer_kw)
    t = torch.nn.TransformerDecoder(tl, num_layers, norm=torch.nn.LayerNorm(layer_kw["d_model"]) if norm else None)
    kw = dict(layer_kw)
    if kw.get("activation") is torch.tanh:
        kw["activation"] = pg.tanh
    pl = pg.nn.TransformerDecoderLayer(**kw)
    p = pg.nn.TransformerDecoder(pl, num_layers, norm=pg.nn.LayerNorm(layer_kw["d_model"]) if norm else None)
    return load(p, t)


def compare(po, to, pins, tins, p, t):
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
    (po * po).sum().backward()
    (to * to).sum().backward()
    for (n, a), (_, b) in zip(p.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-3, atol=1e-4, err_msg=n)
    for a, b in zip(pins, tins):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-3, atol=1e-4)


def inputs(*shapes):
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return ([pg.tensor(x, requires_grad=True) for x in xs], [torch.tensor(x, requires_grad=True) for x in xs])


@pytest.mark.parametrize("layer_kw,norm,fkw", [
    (dict(d_model=8, nhead=2, dim_feedforward=16), False, {}),
    (dict(d_model=8, nhead=4, dim_feedforward=12, activation="gelu", norm_first=True, batch_first=True), True, {}),
    (dict(d_model=8, nhead=2, dim_feedforward=16), False, {"causal": True}),
    (dict(d_model=8, nhead=2, dim_feedforward=16, bias=False, activation=torch.tanh), True, {"padding": True}),
], ids=["post-norm", "pre-norm-gelu-batch-first", "causal-memory-mask", "no-bias-padding-callable"])
def test_decoder_matches_torch(layer_kw, norm, fkw):
    p, t = decoder_pair(layer_kw, norm=norm)
    assert comparable_repr(p.layers[0]) == repr(t.layers[0])
    bf = layer_kw.get("batch_first")
    (pt, pm), (tt, tm) = inputs((3, 5, 8) if bf else (5, 3, 8), (3, 4, 8) if bf else (4, 3, 8))
    kw_p, kw_t = {}, {}
    if fkw.get("causal"):
        m = np.triu(np.ones((5, 5), bool), 1)
        mm = rng.standard_normal((5, 4)).astype(np.float32)
        kw_p = {"tgt_mask": pg.nn.Transformer.generate_square_subsequent_mask(5), "tgt_is_causal": True,
                "memory_mask": pg.tensor(mm)}
        kw_t = {"tgt_mask": torch.tensor(m), "tgt_is_causal": True, "memory_mask": torch.tensor(mm)}
    if fkw.get("padding"):
        pad, mpad = np.zeros((3, 5), bool), np.zeros((3, 4), bool)
        pad[1, 3:] = True
        mpad[2, :2] = True
        kw_p = {"tgt_key_padding_mask": pg.tensor(pad), "memory_key_padding_mask": pg.tensor(mpad)}
        kw_t = {"tgt_key_padding_mask": torch.tensor(pad), "memory_key_padding_mask": torch.tensor(mpad)}
    compare(p(pt, pm, **kw_p), t(tt, tm, **kw_t), [pt, pm], [tt, tm], p, t)


@pytest.mark.parametrize("batch_first,norm_first", [(False, False), (True, True)])
@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_transformer_matches_torch(batch_first, norm_first):
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=12,
              batch_first=batch_first, norm_first=norm_first, activation="gelu")
    torch.manual_seed(0)
    p, t = load(pg.nn.Transformer(**kw), torch.nn.Transformer(**kw))
    # (ModuleList's repr here does not fold repeated layers into torch's "(0-1): 2 x ...")
    assert comparable_repr(p.decoder.layers[0]) == repr(t.decoder.layers[0])
    (ps, pt), (ts, tt) = inputs((2, 6, 8) if batch_first else (6, 2, 8), (2, 4, 8) if batch_first else (4, 2, 8))
    pad = np.zeros((2, 6), bool)
    pad[0, 4:] = True
    po = p(ps, pt, tgt_mask=pg.nn.Transformer.generate_square_subsequent_mask(4),
           src_key_padding_mask=pg.tensor(pad), memory_key_padding_mask=pg.tensor(pad), tgt_is_causal=True)
    to = t(ts, tt, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4),
           src_key_padding_mask=torch.tensor(pad), memory_key_padding_mask=torch.tensor(pad), tgt_is_causal=True)
    compare(po, to, [ps, pt], [ts, tt], p, t)


def test_transformer_init_mask_and_errors():
    m = pg.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    assert len(m.encoder.layers) == 1 and m.encoder.norm is not None and m.decoder.norm is not None
    w = m.decoder.layers[0].linear1.weight.detach().numpy()
    assert np.abs(w).max() <= np.sqrt(6 / (8 + 8)) + 1e-6          # xavier_uniform bound
    np.testing.assert_array_equal(pg.nn.Transformer.generate_square_subsequent_mask(4).numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())
    assert pg.nn.Transformer.generate_square_subsequent_mask(3, dtype=pg.float64).dtype is pg.float64
    src, tgt = pg.randn(5, 2, 8), pg.randn(4, 3, 8)
    with pytest.raises(RuntimeError, match="batch number"):
        m(src, tgt)
    with pytest.raises(RuntimeError, match="feature number"):
        m(src, pg.randn(4, 2, 6))
    with pytest.raises(RuntimeError, match="relu/gelu"):
        pg.nn.TransformerDecoderLayer(8, 2, activation="tanh")
    dec = pg.nn.TransformerDecoder(pg.nn.TransformerDecoderLayer(8, 2, 16), 3)
    assert len(dec.layers) == 3 and dec.layers[0].linear1.weight is not dec.layers[1].linear1.weight
