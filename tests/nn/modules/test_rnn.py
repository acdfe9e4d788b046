"""RNN / LSTM / GRU and RNNCell / LSTMCell / GRUCell against PyTorch's with the same weights:
outputs, final states and every parameter's (and the input's and hx's) gradient, for 1-2 layers,
bidirectional, batch_first, unbatched input, no bias, given hx, relu and LSTM projections;
parameter names / shapes / init range, reprs and error cases."""
import math
import warnings

import numpy as np
import pytest
import torch

import paragrad as pg

rng = np.random.default_rng(0)


def pair(cls, device, *args, **kw):
    torch.manual_seed(0)
    t = getattr(torch.nn, cls)(*args, **kw)
    p = getattr(pg.nn, cls)(*args, **kw, device=device)
    assert list(p.state_dict()) == list(t.state_dict())
    assert [tuple(v.shape) for v in p.state_dict().values()] == [tuple(v.shape) for v in t.state_dict().values()]
    p.load_state_dict({k: pg.tensor(v.detach().numpy(), device=device) for k, v in t.state_dict().items()})
    assert repr(p) == repr(t)
    return p, t


def leaf(a, device):
    return pg.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)


def close(a, b, msg="", tol=1e-5):
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().numpy(), rtol=10 * tol, atol=tol, err_msg=msg)


def flat(out):
    """(output, h) or (output, (h, c)) -> list of tensors."""
    o, h = out
    return [o, *h] if isinstance(h, tuple) else [o, h]


def loss(ts):
    total = 0
    for i, t in enumerate(ts):   # weight each output differently so every one's gradient matters
        total = total + (t * t).sum() * (i + 1) + t.sum()
    return total


def compare(p, t, pin, tin):
    """Run both, compare every output, backprop, compare input and parameter gradients."""
    po, to = flat(p(*pin)), flat(t(*tin))
    assert len(po) == len(to)
    for i, (a, b) in enumerate(zip(po, to)):
        assert tuple(a.shape) == tuple(b.shape), (i, a.shape, b.shape)
        close(a, b, f"output {i}")
    loss(po).backward()
    loss(to).backward()
    for i, (a, b) in enumerate(zip(pin, tin)):
        for x, y in (zip(a, b) if isinstance(a, tuple) else [(a, b)]):
            if x is not None and y.grad is not None:
                close(x.grad, y.grad, f"input {i} grad", 1e-4)
    for (n, a), (_, b) in zip(p.named_parameters(), t.named_parameters()):
        close(a.grad, b.grad, n, 1e-4)


CONFIGS = [  # (class, ctor kwargs, batched, hx given)
    ("RNN", dict(num_layers=1), True, False),
    ("RNN", dict(num_layers=2, nonlinearity="relu", bidirectional=True), True, True),
    ("RNN", dict(num_layers=2, bias=False, batch_first=True), False, True),
    ("LSTM", dict(num_layers=1), True, True),
    ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True), True, False),
    ("LSTM", dict(num_layers=2, bias=False), False, True),
    ("LSTM", dict(num_layers=2, proj_size=3, bidirectional=True), True, True),
    ("GRU", dict(num_layers=1, batch_first=True), True, True),
    ("GRU", dict(num_layers=2, bidirectional=True), False, False),
    ("GRU", dict(num_layers=2, bias=False, bidirectional=True), True, True),
]


@pytest.mark.filterwarnings("ignore:LSTM with projections")
@pytest.mark.parametrize("cls,kw,batched,with_hx", CONFIGS,
                         ids=[f"{c}-{'-'.join(f'{k}={v}' for k, v in kw.items())}-"
                              f"{'batched' if b else 'unbatched'}{'-hx' if h else ''}" for c, kw, b, h in CONFIGS])
def test_sequence_layers_match_torch(device, cls, kw, batched, with_hx):
    h_in, hidden, seq, n = 3, 5, 4, 2
    p, t = pair(cls, device, h_in, hidden, **kw)
    xs = (n, seq, h_in) if kw.get("batch_first") else (seq, n, h_in)
    if not batched:
        xs = (seq, h_in)
    px, tx = leaf(rng.standard_normal(xs).astype(np.float32), device)
    pin, tin = [px], [tx]
    if with_hx:
        d = 2 if kw.get("bidirectional") else 1
        lead = (d * kw.get("num_layers", 1),) + ((n,) if batched else ())
        ph, th = leaf(rng.standard_normal(lead + (kw.get("proj_size") or hidden,)).astype(np.float32), device)
        if cls == "LSTM":
            pc, tc = leaf(rng.standard_normal(lead + (hidden,)).astype(np.float32), device)
            ph, th = (ph, pc), (th, tc)
        pin.append(ph)
        tin.append(th)
    compare(p, t, pin, tin)


@pytest.mark.parametrize("cls,kw,batched,with_hx", [
    ("RNNCell", {}, True, True), ("RNNCell", dict(nonlinearity="relu", bias=False), False, True),
    ("RNNCell", {}, True, False),
    ("LSTMCell", {}, True, True), ("LSTMCell", dict(bias=False), False, True), ("LSTMCell", {}, False, False),
    ("GRUCell", {}, True, True), ("GRUCell", dict(bias=False), False, True), ("GRUCell", {}, True, False),
])
def test_cells_match_torch(device, cls, kw, batched, with_hx):
    h_in, hidden, n = 3, 4, 2
    p, t = pair(cls, device, h_in, hidden, **kw)
    lead = (n,) if batched else ()
    px, tx = leaf(rng.standard_normal(lead + (h_in,)).astype(np.float32), device)
    pin, tin = [px], [tx]
    if with_hx:
        ph, th = leaf(rng.standard_normal(lead + (hidden,)).astype(np.float32), device)
        if cls == "LSTMCell":
            pc, tc = leaf(rng.standard_normal(lead + (hidden,)).astype(np.float32), device)
            ph, th = (ph, pc), (th, tc)
        pin.append(ph)
        tin.append(th)
    po, to = p(*pin), t(*tin)
    po, to = (list(po), list(to)) if isinstance(to, tuple) else ([po], [to])
    for a, b in zip(po, to):
        assert tuple(a.shape) == tuple(b.shape)
        close(a, b)
    loss(po).backward()
    loss(to).backward()
    close(pin[0].grad, tin[0].grad, "input grad", 1e-4)
    for (name, a), (_, b) in zip(p.named_parameters(), t.named_parameters()):
        close(a.grad, b.grad, name, 1e-4)


def test_cell_steps_equal_one_layer_sequence(device):
    """An LSTM layer is its LSTMCell applied step by step (same weights)."""
    seq = pg.nn.LSTM(3, 4, device=device)
    cell = pg.nn.LSTMCell(3, 4, device=device)
    cell.load_state_dict({k[:-3]: v for k, v in seq.state_dict().items()})
    x = pg.randn(5, 2, 3, device=device)
    out, (h, c) = seq(x)
    state = None
    for step in range(5):
        state = cell(x[step], state)
        close(out[step], torch.tensor(state[0].detach().cpu().numpy()))
    close(h[0], torch.tensor(state[0].detach().cpu().numpy()))
    close(c[0], torch.tensor(state[1].detach().cpu().numpy()))


def test_init_range_and_parameter_layout():
    m = pg.nn.GRU(3, 16, num_layers=2, bidirectional=True)
    bound = 1 / math.sqrt(16)
    for name, w in m.named_parameters():
        a = w.detach().numpy()
        assert np.abs(a).max() <= bound and a.std() > bound / 4, name
    assert dict((n, tuple(w.shape)) for n, w in m.named_parameters())["weight_ih_l1_reverse"] == (48, 32)
    assert len(m.all_weights) == 4 and len(m.all_weights[0]) == 4
    lstm = pg.nn.LSTM(3, 8, proj_size=2)
    assert [n for n, _ in lstm.named_parameters()][-1] == "weight_hr_l0"
    assert tuple(lstm.weight_hh_l0.shape) == (32, 2)


def test_dropout_between_layers_only_in_training(device):
    m = pg.nn.GRU(3, 4, num_layers=2, dropout=0.5, device=device)
    x = pg.randn(6, 2, 3, device=device)
    m.eval()
    a, b = m(x)[0].detach().cpu().numpy(), m(x)[0].detach().cpu().numpy()
    np.testing.assert_array_equal(a, b)
    m.train()
    assert not np.allclose(m(x)[0].detach().cpu().numpy(), a)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pg.nn.RNN(3, 4, dropout=0.3)
    assert any("num_layers greater than 1" in str(x.message) for x in w)


def test_errors_match_torch():
    for mod in (torch, pg):
        with pytest.raises(ValueError, match="Unknown nonlinearity"):
            mod.nn.RNN(3, 4, nonlinearity="sigmoid")
        with pytest.raises(ValueError, match="only supported for LSTM"):
            mod.nn.GRU(3, 4, proj_size=2)
        with pytest.raises(ValueError, match="proj_size has to be smaller"):
            mod.nn.LSTM(3, 4, proj_size=4)
        with pytest.raises(ValueError, match="dropout should be a number"):
            mod.nn.LSTM(3, 4, dropout=1.5)
        with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
            mod.nn.LSTM(3, 0)
        with pytest.raises(TypeError, match="bias should be of type bool"):
            mod.nn.LSTM(3, 4, bias=1)
        m = mod.nn.RNN(3, 4)
        with pytest.raises(ValueError, match="Expected input to be 2D or 3D"):
            m(mod.zeros(2, 2, 2, 3))
        with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
            m(mod.zeros(5, 2, 4))
        with pytest.raises(RuntimeError, match="Expected hidden size"):
            m(mod.zeros(5, 2, 3), mod.zeros(1, 3, 4))
        with pytest.raises(RuntimeError, match="hx should also be 3-D"):
            m(mod.zeros(5, 2, 3), mod.zeros(2, 4))
        with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size"):
            mod.nn.LSTM(3, 4)(mod.zeros(5, 2, 3), (mod.zeros(1, 2, 4), mod.zeros(1, 2, 3)))
        with pytest.raises(ValueError, match="Expected input to be 1D or 2D"):
            mod.nn.GRUCell(3, 4)(mod.zeros(1, 2, 3))
        with pytest.raises(ValueError, match=r"Expected hx\[1\] to be 1D or 2D"):
            mod.nn.LSTMCell(3, 4)(mod.zeros(2, 3), (mod.zeros(2, 4), mod.zeros(1, 2, 4)))
    with pytest.raises(TypeError, match="PackedSequence"):
        pg.nn.LSTM(3, 4)((pg.zeros(5, 3), pg.tensor([2, 2, 1])))
