"""The recurrent sequence op (ops/neural/recurrent.py: one node per layer and direction, BPTT on
buffers) through nn.LSTM / nn.GRU / nn.RNN against PyTorch: outputs, final states and every
gradient (input, h0, c0, each weight and bias) under a random cotangent on every output or on
some of them; the node itself against float64 finite differences; no_grad, double backward,
the graph's size, in-place writes to outputs, and the fast-path seam's signatures."""
import numpy as np
import pytest
import torch

import paragrad as pg
from paragrad.backends.base import fast_paths
from paragrad.ops.neural.recurrent import recurrent_sequence
from tests.helpers import fake_recurrent_steps, fd_check, graph_size

L, N, H_IN, HID = 5, 3, 4, 6


def pair(cls, device, dtype, **kw):
    torch.manual_seed(0)
    t = getattr(torch.nn, cls)(H_IN, HID, dtype=getattr(torch, dtype), **kw)
    p = getattr(pg.nn, cls)(H_IN, HID, dtype=getattr(pg, dtype), device=device, **kw)
    p.load_state_dict({k: pg.tensor(v.detach().numpy(), device=device) for k, v in t.state_dict().items()})
    return p, t


def inputs(cls, kw, dtype, seed=0):
    """x (L, N, H_in) and hx (h0 or (h0, c0)) as NumPy arrays."""
    rng = np.random.default_rng(seed)
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    x = rng.standard_normal((L, N, H_IN)).astype(dtype)
    h0 = rng.standard_normal((layers, N, kw.get("proj_size") or HID)).astype(dtype)
    if cls != "LSTM":
        return x, h0
    return x, (h0, rng.standard_normal((layers, N, HID)).astype(dtype))


def leaves(a, device):
    if isinstance(a, tuple):
        return tuple(zip(*(leaves(e, device) for e in a)))
    return pg.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)


def outputs(res):
    out, h = res
    return [out, *h] if isinstance(h, tuple) else [out, h]


def weighted_sum(outs, use, seed=1):
    """sum(out_i * w_i) over the outputs `use` picks, w_i random (the same for both libraries)."""
    rng = np.random.default_rng(seed)
    total = 0
    for i, o in enumerate(outs):
        w = rng.standard_normal(tuple(o.shape))
        if i in use:
            total = total + (o * (pg.tensor(w, dtype=o.dtype, device=o.device) if isinstance(o, pg.Tensor)
                                  else torch.tensor(w, dtype=o.dtype))).sum()
    return total


def close(a, b, what, dtype):
    tol = 1e-10 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().numpy(), rtol=tol * 10, atol=tol, err_msg=what)


CONFIGS = [  # (class, ctor kwargs, dtype, outputs the loss reads: 0 out, 1 h_n, 2 c_n)
    ("LSTM", dict(num_layers=2, bidirectional=True), "float32", (0, 1, 2)),
    ("LSTM", dict(num_layers=2, bidirectional=True, proj_size=3), "float32", (0, 1, 2)),
    ("LSTM", dict(num_layers=2), "float64", (0, 1, 2)),
    ("LSTM", dict(num_layers=1, proj_size=2), "float64", (1,)),
    ("LSTM", dict(num_layers=2, bias=False), "float32", (2,)),
    ("GRU", dict(num_layers=2, bidirectional=True), "float32", (0, 1)),
    ("GRU", dict(num_layers=2), "float64", (1,)),
    ("GRU", dict(bias=False), "float32", (0, 1)),        # (no b_hn: the kernels' null bias)
    ("RNN", dict(num_layers=2, nonlinearity="tanh", bidirectional=True), "float32", (0, 1)),
    ("RNN", dict(num_layers=2, nonlinearity="relu"), "float64", (0,)),
]


@pytest.mark.filterwarnings("ignore:LSTM with projections")
@pytest.mark.parametrize("cls,kw,dtype,use", CONFIGS,
                         ids=[f"{c}-{'-'.join(f'{k}={v}' for k, v in kw.items())}-{d}-uses{''.join(map(str, u))}"
                              for c, kw, d, u in CONFIGS])
def test_layers_and_every_gradient_match_torch(device, cls, kw, dtype, use):
    p, t = pair(cls, device, dtype, **kw)
    x, hx = inputs(cls, kw, dtype)
    (px, tx), (ph, th) = leaves(x, device), leaves(hx, device)
    po, to = outputs(p(px, ph)), outputs(t(tx, th))
    for i, (a, b) in enumerate(zip(po, to)):
        close(a, b, f"output {i}", dtype)
    weighted_sum(po, use).backward()
    weighted_sum(to, use).backward()
    close(px.grad, tx.grad, "input grad", dtype)
    for i, (a, b) in enumerate(zip(ph if isinstance(ph, tuple) else (ph,), th if isinstance(th, tuple) else (th,))):
        close(a.grad, b.grad, f"hx[{i}] grad", dtype)
    for (name, a), (_, b) in zip(p.named_parameters(), t.named_parameters()):
        close(a.grad, b.grad, name, dtype)


MODES = [("LSTM", False, False), ("LSTM", True, True), ("GRU", True, False), ("GRU", False, False),
         ("RNN_TANH", True, False), ("RNN_RELU", False, False)]


@pytest.mark.parametrize("mode,reverse,proj", MODES, ids=[f"{m}-{'rev' if r else 'fwd'}{'-proj' if p else ''}"
                                                          for m, r, p in MODES])
@pytest.mark.parametrize("sizes", [None, (3, 2, 2, 1)], ids=["padded", "packed"])
def test_node_matches_finite_differences(device, mode, reverse, proj, sizes):
    """recurrent_sequence itself, every input differentiated, float64; `sizes`: a packed
    batch's step sizes (the padded batch then runs step t on its first sizes[t] rows)."""
    seq, n, hid = (3, 2, 3) if sizes is None else (len(sizes), sizes[0], 3)
    gates = {"LSTM": 4, "GRU": 3}.get(mode, 1) * hid
    p = 2 if proj else hid
    shapes = [(seq, n, gates), (n, p), (gates, p), (gates,)]
    if mode == "LSTM":
        shapes += [(n, hid)] + ([(p, hid)] if proj else [])

    def fn(gi, h0, w_hh, b_hh, c0=None, w_hr=None):
        return recurrent_sequence(mode, gi, h0, c0, w_hh, b_hh, w_hr, reverse=reverse, batch_sizes=sizes)
    fd_check(fn, shapes, device=device, low=-1.5, high=1.5)


def test_no_grad_gives_the_same_outputs(device):
    for cls in ("LSTM", "GRU", "RNN"):
        kw = dict(num_layers=2, bidirectional=True)
        p, _ = pair(cls, device, "float64", **kw)
        x, hx = inputs(cls, kw, "float64")
        px = pg.tensor(x, device=device, requires_grad=True)
        ph = tuple(pg.tensor(a, device=device) for a in hx) if cls == "LSTM" else pg.tensor(hx, device=device)
        recorded = outputs(p(px, ph))
        with pg.no_grad():
            plain = outputs(p(px, ph))
        for a, b in zip(recorded, plain):
            assert b.grad_fn is None and not b.requires_grad
            np.testing.assert_allclose(a.detach().cpu().numpy(), b.cpu().numpy(), rtol=1e-12, atol=1e-12)


def test_graph_size_does_not_grow_with_the_sequence(device):
    m = pg.nn.LSTM(H_IN, HID, num_layers=2, bidirectional=True, device=device)
    sizes = [graph_size(m(pg.randn(steps, N, H_IN, device=device))[0]) for steps in (2, 40)]
    assert sizes[0] == sizes[1] < 40, sizes


def test_double_backward_matches_torch(device, monkeypatch):
    """create_graph through the node: the gradient of a gradient norm, as torch computes it (the
    per-layer op: a backend's whole-stack call, cuDNN's, has no double backward, as torch's)."""
    monkeypatch.setattr(pg.zeros(1, device=device)._backend, "fast_rnn", None, raising=False)
    for cls in ("GRU", "LSTM"):
        p, t = pair(cls, device, "float64")
        x, _ = inputs(cls, {}, "float64")
        px, tx = leaves(x, device)
        grads = []
        for lib, m, xi in ((pg, p, px), (torch, t, tx)):
            out = m(xi)[0]
            w = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)), dtype=out.dtype)
            if lib is pg:
                w = w.to(device)
            (gx,) = lib.autograd.grad((out * w).sum(), xi, create_graph=True)
            (gx * gx).sum().backward()
            grads.append([xi.grad] + [q.grad for q in m.parameters()])
        for a, b in zip(*grads):
            close(a, b, f"{cls} second-order grad", "float64")


def test_in_place_write_to_an_output_keeps_gradients_right(device):
    """The outputs own their memory (not the buffers the backward reads), as torch's CPU LSTM."""
    p, t = pair("LSTM", device, "float64")
    x, _ = inputs("LSTM", {}, "float64")
    (px, tx) = leaves(x, device)
    for m, xi in ((p, px), (t, tx)):
        out, (h, c) = m(xi)
        out.mul_(2.0)
        h.add_(1.0)
        (out.sum() + (h * c).sum()).backward()
    close(px.grad, tx.grad, "input grad", "float64")


def test_hidden_dtype_mismatch_raises(device):
    m = pg.nn.GRU(H_IN, HID, device=device)
    with pytest.raises(RuntimeError, match="not the same dtype"):
        m(pg.zeros(L, N, H_IN, device=device), pg.zeros(1, N, HID, dtype=pg.float64, device=device))


_SEAM = {  # fast path -> (its positional arguments' shapes, given N and H), as documented
    "lstm_cell_forward": lambda n, h: [(n, 4 * h), (n, 4 * h), (n, h), (n, 4 * h), (n, h), (n, h), (n, h)],
    "lstm_cell_backward": lambda n, h: [(n, h), (n, h), (n, 4 * h), (n, h), (n, h), (n, 4 * h), (n, h)],
    "gru_cell_forward": lambda n, h: [(n, 3 * h), (n, 3 * h), (h,), (n, h), (n, 3 * h), (n, h), (n, h)],
    "gru_cell_backward": lambda n, h: [(n, h), (n, h), (n, 3 * h), (n, h), (n, 3 * h), (n, 3 * h), (n, h)],
    "rnn_cell_forward": lambda n, h: [(n, h), (n, h), (n, h), "tanh"],
    "rnn_cell_backward": lambda n, h: [(n, h), (n, h), (n, h), "tanh"],
}


@pytest.mark.parametrize("taken", [False, True], ids=["declined", "taken"])
def test_fast_path_seam(device, monkeypatch, taken):
    """Each per-step fast path is looked up through backend.fast() with the documented
    arguments; a declining one (False) leaves the composition to run, a taking one (True) is
    trusted: here it runs the composition itself, so the results must not change."""
    calls = {}
    fake_recurrent_steps(monkeypatch, device, lambda name, args: calls.setdefault(
        name, [tuple(a.shape) if hasattr(a, "shape") else a for a in args]), taken)
    for cls in ("LSTM", "GRU", "RNN"):
        p, t = pair(cls, device, "float64")
        x, hx = inputs(cls, {}, "float64")
        (px, tx), (ph, th) = leaves(x, device), leaves(hx, device)
        po, to = outputs(p(px, ph)), outputs(t(tx, th))
        weighted_sum(po, range(3)).backward()
        weighted_sum(to, range(3)).backward()
        for a, b in zip(po, to):
            close(a, b, f"{cls} output", "float64")
        for (name, a), (_, b) in zip(p.named_parameters(), t.named_parameters()):
            close(a.grad, b.grad, f"{cls} {name}", "float64")
    assert calls == {name: shapes(N, HID) for name, shapes in _SEAM.items()}
    with fast_paths(False):     # the switch turns the seam off
        calls.clear()
        pg.nn.LSTM(H_IN, HID, device=device)(pg.randn(L, N, H_IN, device=device))
        assert not calls


def test_whole_stack_call_refuses_double_backward_clearly(device):
    """Where the backend runs the stack in one call (cuDNN), create_graph raises as torch's
    cuDNN path does, naming the way out; a second backward is refused too."""
    m = pg.nn.LSTM(H_IN, HID, num_layers=2, device=device)
    if getattr(m.weight_ih_l0._backend, "fast_rnn", None) is None:
        pytest.skip(f"the {device} backend composes the stack per layer (double backward works there)")
    x = pg.randn(L, N, H_IN, device=device, requires_grad=True)
    out = m(x)[0].sum()
    with pytest.raises(RuntimeError, match="double backwards is not supported"):
        pg.autograd.grad(out, x, create_graph=True)
    out = m(x)[0].sum()
    out.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()
