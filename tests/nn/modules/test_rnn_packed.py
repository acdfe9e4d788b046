"""nn.RNN / nn.LSTM / nn.GRU on a PackedSequence against PyTorch with the same weights: the packed
output (padded back), h_n, c_n and every gradient (input, hx, each weight and bias) in float64,
for tanh / relu RNNs, LSTMs with and without projections and GRUs, 1-2 layers, bidirectional,
batch_first, unsorted lengths, hx given or not; the recurrent op with batch sizes against finite
differences and against its unpacked self (values and double backward); no_grad, dropout between
layers, the fast-path seam's row-sliced buffers, and the errors."""
import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as trnn

import paragrad as pg
from paragrad.nn.utils import rnn as prnn
from paragrad.ops.neural.recurrent import recurrent_sequence
from tests.helpers import RECURRENT_STEPS, fake_recurrent_steps, graph_size

H_IN, HID = 3, 4


def pair(cls, device, **kw):
    torch.manual_seed(0)
    t = getattr(torch.nn, cls)(H_IN, HID, dtype=torch.float64, **kw)
    p = getattr(pg.nn, cls)(H_IN, HID, dtype=pg.float64, device=device, **kw)
    p.load_state_dict({k: pg.tensor(v.detach().numpy(), device=device) for k, v in t.state_dict().items()})
    return p, t


def hidden(cls, kw, n, rng):
    """hx as NumPy arrays: h0, or (h0, c0) for LSTM."""
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    h0 = rng.standard_normal((layers, n, kw.get("proj_size") or HID))
    return (h0, rng.standard_normal((layers, n, HID))) if cls == "LSTM" else h0


def leaves(a, device):
    """(paragrad leaf, torch leaf), or a tuple of such pairs regrouped per library."""
    if isinstance(a, tuple):
        return tuple(zip(*(leaves(e, device) for e in a)))
    return pg.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)


def as_list(h):
    return list(h) if isinstance(h, tuple) else [h]


def close(a, b, what):
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-10, err_msg=what)


def run_packed(lib, m, x, lengths, hx, batch_first, enforce_sorted):
    """pack -> layer -> pad: [padded output, h_n(, c_n)] and the packed output."""
    nn_rnn = trnn if lib is torch else prnn
    packed = nn_rnn.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    out, h = m(packed) if hx is None else m(packed, hx)
    padded, out_lengths = nn_rnn.pad_packed_sequence(out, batch_first=batch_first)
    assert out_lengths.tolist() == list(lengths)
    return [padded, *as_list(h)], out


CONFIGS = [  # (class, ctor kwargs, lengths; unsorted ones packed with enforce_sorted=False)
    ("RNN", dict(), [5, 3, 3, 1]),
    ("RNN", dict(nonlinearity="relu", num_layers=2), [2, 5, 1, 4]),
    ("RNN", dict(bidirectional=True, batch_first=True), [4, 4, 2]),
    ("RNN", dict(nonlinearity="relu", bidirectional=True), [1, 3, 5, 2]),
    ("LSTM", dict(), [5, 4, 2, 2, 1]),
    ("LSTM", dict(num_layers=2, bidirectional=True), [3, 5, 1, 5]),
    ("LSTM", dict(proj_size=2, bidirectional=True, batch_first=True), [2, 4, 3]),
    ("LSTM", dict(proj_size=3, num_layers=2), [5, 5, 5]),
    ("LSTM", dict(bias=False, bidirectional=True), [4, 1, 3, 1]),
    ("GRU", dict(), [4, 2, 1]),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True), [2, 5, 3, 1]),
    ("GRU", dict(bias=False, bidirectional=True), [5, 3, 3]),
]


@pytest.mark.filterwarnings("ignore:LSTM with projections")
@pytest.mark.parametrize("with_hx", [False, True], ids=["no-hx", "hx"])
@pytest.mark.parametrize("cls,kw,lengths", CONFIGS,
                         ids=[f"{c}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'plain'}-{'-'.join(map(str, ls))}"
                              for c, kw, ls in CONFIGS])
def test_packed_layers_and_every_gradient_match_torch(device, cls, kw, lengths, with_hx):
    p, t = pair(cls, device, **kw)
    rng = np.random.default_rng(sum(lengths))
    batch_first = kw.get("batch_first", False)
    n, steps = len(lengths), max(lengths) + 1           # (a padded step more than the longest)
    x = rng.standard_normal((n, steps, H_IN) if batch_first else (steps, n, H_IN))
    px, tx = leaves(x, device)
    ph, th = leaves(hidden(cls, kw, n, rng), device) if with_hx else (None, None)
    sorted_ = lengths == sorted(lengths, reverse=True)
    po, p_packed = run_packed(pg, p, px, lengths, ph, batch_first, sorted_)
    to, t_packed = run_packed(torch, t, tx, lengths, th, batch_first, sorted_)
    assert p_packed.batch_sizes.tolist() == t_packed.batch_sizes.tolist()
    for name in ("sorted_indices", "unsorted_indices"):
        a, b = getattr(p_packed, name), getattr(t_packed, name)
        assert (a is None) == (b is None) and (a is None or a.tolist() == b.tolist()), name
    assert tuple(p_packed.data.shape) == tuple(t_packed.data.shape)
    for i, (a, b) in enumerate(zip(po, to)):
        assert tuple(a.shape) == tuple(b.shape), (i, a.shape, b.shape)
        close(a, b, f"output {i}")
    # a random cotangent on every output (the padded positions' weights reach nothing)
    for outs, lib in ((po, pg), (to, torch)):
        total = 0
        for i, o in enumerate(outs):
            w = np.random.default_rng(10 + i).standard_normal(tuple(o.shape))
            total = total + (o * (lib.tensor(w, device=device) if lib is pg else torch.tensor(w))).sum()
        total.backward()
    close(px.grad, tx.grad, "input grad")
    for i, (a, b) in enumerate(zip(as_list(ph) if with_hx else [], as_list(th) if with_hx else [])):
        close(a.grad, b.grad, f"hx[{i}] grad")
    for (name, a), (_, b) in zip(p.named_parameters(), t.named_parameters()):
        close(a.grad, b.grad, name)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_packed_output_node_names_match_torch(device, cls):
    """Against torch on the same device: on CUDA both run the stack as one cuDNN node."""
    if device != "cpu" and not torch.cuda.is_available():
        pytest.skip(f"torch without {device}: its {device} node names are unknown here")
    p, t = pair(cls, device)
    t = t.to(device)
    x = np.random.default_rng(0).standard_normal((4, 3, H_IN))
    names = []
    for lib, m, nn_rnn in ((pg, p, prnn), (torch, t, trnn)):
        xs = lib.tensor(x, requires_grad=True, device=device)
        for sort in (True, False):
            out, h = m(nn_rnn.pack_padded_sequence(xs, [4, 2, 1] if sort else [2, 4, 1], enforce_sorted=sort))
            names.append((type(out.data.grad_fn).__name__, type(as_list(h)[0].grad_fn).__name__))
    assert names[:2] == names[2:]


def test_equal_lengths_match_the_unpacked_layer(device):
    """All sequences full length: the packed path computes what the padded one does."""
    for cls in ("LSTM", "GRU", "RNN"):
        p, _ = pair(cls, device, num_layers=2, bidirectional=True)
        x = pg.tensor(np.random.default_rng(1).standard_normal((4, 3, H_IN)), device=device)
        padded = as_list(p(x)[1]) + [p(x)[0]]
        out, h = p(prnn.pack_padded_sequence(x, [4, 4, 4]))
        packed = as_list(h) + [prnn.pad_packed_sequence(out)[0]]
        for a, b in zip(padded, packed):
            np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-12, atol=1e-12)


def test_no_grad_gives_the_same_outputs(device):
    for cls in ("LSTM", "GRU", "RNN"):
        kw = dict(num_layers=2, bidirectional=True, **({"proj_size": 2} if cls == "LSTM" else {}))
        p, _ = pair(cls, device, **kw)
        x = pg.tensor(np.random.default_rng(2).standard_normal((5, 4, H_IN)), device=device, requires_grad=True)
        packed = prnn.pack_padded_sequence(x, [2, 5, 1, 3], enforce_sorted=False)
        recorded = [prnn.pad_packed_sequence(p(packed)[0])[0]] + as_list(p(packed)[1])
        with pg.no_grad():
            out, h = p(packed)
            plain = [prnn.pad_packed_sequence(out)[0]] + as_list(h)
        for a, b in zip(recorded, plain):
            assert b.grad_fn is None and not b.requires_grad
            np.testing.assert_allclose(a.detach().cpu().numpy(), b.cpu().numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode,reverse", [("LSTM", False), ("LSTM", True), ("GRU", True), ("RNN_TANH", False)])
def test_op_double_backward_matches_per_row_runs(device, mode, reverse):
    """create_graph through the op with batch sizes: the gradient of a gradient norm equals the
    sum of those of each row run alone over its length (whose op double backward matches torch:
    test_rnn_sequence.py)."""
    sizes, hid = (3, 2, 1), 2
    lengths = [sum(s > i for s in sizes) for i in range(sizes[0])]
    gates = {"LSTM": 4, "GRU": 3}.get(mode, 1) * hid
    rng = np.random.default_rng(7)
    gi, h0, w_hh, b_hh, c0, w_out = (rng.standard_normal(s) for s in (
        (len(sizes), sizes[0], gates), (sizes[0], hid), (gates, hid), (gates,), (sizes[0], hid),
        (len(sizes), sizes[0], hid)))

    def grads_of(batch_sizes, arrays, w):
        """d/d(inputs) of |d loss / d gi|^2, loss = sum(out * w) + |h_n|^2 (+ |c_n|^2), NumPy."""
        ts = [pg.tensor(a, device=device, requires_grad=True) for a in arrays]
        out, *finals = recurrent_sequence(mode, ts[0], ts[1], ts[4] if mode == "LSTM" else None, ts[2], ts[3],
                                          reverse=reverse, batch_sizes=batch_sizes)
        loss = (out * pg.tensor(w, device=device)).sum() + sum((f * f).sum() for f in finals)
        (g,) = pg.autograd.grad(loss, ts[0], create_graph=True)
        (g * g).sum().backward()
        return [t.grad.cpu().numpy() if t.grad is not None else np.zeros(t.shape) for t in ts]

    packed = grads_of(sizes, (gi, h0, w_hh, b_hh, c0), w_out)
    summed = [np.zeros_like(a) for a in (gi, h0, w_hh, b_hh, c0)]
    for i, n in enumerate(lengths):
        row = grads_of(None, (gi[:n, i:i + 1], h0[i:i + 1], w_hh, b_hh, c0[i:i + 1]), w_out[:n, i:i + 1])
        summed[0][:n, i:i + 1] += row[0]
        summed[1][i:i + 1] += row[1]
        summed[2] += row[2]
        summed[3] += row[3]
        summed[4][i:i + 1] += row[4]
    for name, a, b in zip(("gi", "h0", "w_hh", "b_hh", "c0"), packed, summed):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10, err_msg=name)


def test_dropout_between_layers(device):
    """dropout=1 zeroes the first layer's output in training: the second layer then sees zeros,
    as torch's does; in eval the dropout is off."""
    p, t = pair("LSTM", device, num_layers=2, dropout=1.0)
    x = np.random.default_rng(4).standard_normal((4, 3, H_IN))
    for train in (True, False):
        p.train(train)
        t.train(train)
        po, _ = run_packed(pg, p, pg.tensor(x, device=device), [4, 3, 1], None, False, True)
        to, _ = run_packed(torch, t, torch.tensor(x), [4, 3, 1], None, False, True)
        for a, b in zip(po, to):
            close(a, b, f"train={train}")


def test_graph_size_does_not_grow_with_the_sequence(device):
    m = pg.nn.GRU(H_IN, HID, num_layers=2, bidirectional=True, device=device)
    sizes = []
    for steps in (2, 40):
        x = pg.randn(steps, 3, H_IN, device=device, requires_grad=True)
        sizes.append(graph_size(m(prnn.pack_padded_sequence(x, [steps, steps - 1, 1]))[0].data))
    assert sizes[0] == sizes[1] < 40, sizes


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
def test_op_runs_each_row_over_its_own_length(device, mode, reverse):
    """Row i of a packed batch gives what the op gives on that row's sequence alone: its outputs
    over its length, zeros past it, and its final state."""
    sizes, hid = (4, 3, 1), 2
    lengths = [sum(s > i for s in sizes) for i in range(sizes[0])]
    gates = {"LSTM": 4, "GRU": 3}.get(mode, 1) * hid
    rng = np.random.default_rng(5)
    gi, h0, c0 = (pg.tensor(rng.standard_normal(s), device=device)
                  for s in ((len(sizes), sizes[0], gates), (sizes[0], hid), (sizes[0], hid)))
    c0 = c0 if mode == "LSTM" else None
    w_hh = pg.tensor(rng.standard_normal((gates, hid)) * 0.5, device=device)
    out, *finals = recurrent_sequence(mode, gi, h0, c0, w_hh, None, None, reverse, batch_sizes=sizes)
    for i, n in enumerate(lengths):
        alone, *own = recurrent_sequence(mode, gi[:n, i:i + 1], h0[i:i + 1], None if c0 is None else c0[i:i + 1],
                                         w_hh, None, None, reverse)
        np.testing.assert_allclose(out[:n, i].cpu().numpy(), alone[:, 0].cpu().numpy(), rtol=1e-12, atol=1e-12)
        assert not out[n:, i].cpu().numpy().any()
        for a, b in zip(finals, own):
            np.testing.assert_allclose(a[i].cpu().numpy(), b[0].cpu().numpy(), rtol=1e-12, atol=1e-12)


def test_op_refuses_batch_sizes_that_do_not_fit(device):
    gi, h0, w = pg.zeros(3, 2, 2, device=device), pg.zeros(2, 2, device=device), pg.zeros(2, 2, device=device)
    for sizes in ([2, 1], [2, 2, 1, 1], [2, 1, 2], [1, 1, 1], [2, 1, 0]):
        with pytest.raises(RuntimeError, match="batch_sizes"):
            recurrent_sequence("RNN_TANH", gi, h0, None, w, batch_sizes=sizes)



def test_fast_path_seam_gets_contiguous_rows_of_each_step(device, monkeypatch):
    """A packed batch hands each per-step fast path C-contiguous (n_t, ...) buffers, n_t the
    step's batch size, as the unpacked one hands (N, ...): a kernel taking them (here running the
    composition itself) gives torch's results."""
    rows = {}

    def check(name, args):
        bufs = [a for a in args if hasattr(a, "shape") and a.ndim == 2]
        assert all(a.flags.c_contiguous for a in bufs), name
        rows.setdefault(name, set()).update(a.shape[0] for a in bufs)
    fake_recurrent_steps(monkeypatch, device, check)
    lengths = [3, 5, 1, 4]
    for cls in ("LSTM", "GRU", "RNN"):
        p, t = pair(cls, device, bidirectional=True)
        x = np.random.default_rng(6).standard_normal((5, 4, H_IN))
        px, tx = leaves(x, device)
        po, _ = run_packed(pg, p, px, lengths, None, False, False)
        to, _ = run_packed(torch, t, tx, lengths, None, False, False)
        for outs in (po, to):
            sum((o * o).sum() for o in outs).backward()
        for i, (a, b) in enumerate(zip(po, to)):
            close(a, b, f"{cls} output {i}")
        close(px.grad, tx.grad, f"{cls} input grad")
        for (name, a), (_, b) in zip(p.named_parameters(), t.named_parameters()):
            close(a.grad, b.grad, f"{cls} {name}")
    assert rows == {name: {4, 3, 2, 1} for name in RECURRENT_STEPS}      # the batch sizes (4, 3, 3, 2, 1)


def test_errors(device):
    packed = prnn.pack_sequence([pg.ones(3, H_IN, device=device), pg.ones(2, H_IN, device=device)])
    m = pg.nn.LSTM(H_IN, HID, device=device)
    with pytest.raises(ValueError, match="does not match weight dtype"):
        m(packed.double())
    with pytest.raises(RuntimeError, match="input must have 2 dimensions, got 3"):
        m(prnn.PackedSequence(pg.ones(5, 1, H_IN, device=device), packed.batch_sizes))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
        pg.nn.GRU(H_IN + 1, HID, device=device)(packed)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 2, 4\), got \[1, 3, 4\]"):
        m(packed, (pg.zeros(1, 3, HID, device=device), pg.zeros(1, 3, HID, device=device)))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \[1, 2, 5\]"):
        pg.nn.GRU(H_IN, HID, device=device)(packed, pg.zeros(1, 2, HID + 1, device=device))
    with pytest.raises(TypeError, match="PackedSequence"):
        pg.nn.LSTMCell(H_IN, HID, device=device)(packed)
    with pytest.raises(TypeError, match="PackedSequence"):
        pg.nn.RNN(H_IN, HID, device=device)((packed.data, packed.batch_sizes.tolist()))
