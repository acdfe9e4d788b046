"""cuDNN's recurrent layers (paragrad/backends/cuda/cudnn_rnn.py) against PyTorch's nn.LSTM, nn.GRU
and nn.RNN holding the same weights: outputs, final states and every gradient (input, initial
states, each parameter) for a random cotangent, in float32 and float64, one and two layers, both
directions, LSTM projections, no biases, and padded batches of unsorted lengths (PyTorch's packed
sequences). PyTorch runs on CUDA where it can (its own cuDNN path, TF32 off as paragrad's default),
else on the CPU. Marked `gpu` (run by scripts/gpu-check); skipped without CuPy."""
import warnings

import numpy as np
import pytest
import torch

cupy = pytest.importorskip("cupy", reason="cuDNN's recurrent layers need CuPy (the CUDA backend)")

from paragrad.backends.cuda import cudnn_library, cudnn_rnn  # noqa: E402
from paragrad.dtypes import bfloat16  # noqa: E402

pytestmark = pytest.mark.gpu

REF_DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-11)}
MODES = ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"]


@pytest.fixture(autouse=True)
def _cudnn_and_exact_torch():
    """cuDNN must load on a GPU machine (a failure names what was tried); PyTorch's cuDNN RNN off
    TF32 (torch.backends.cudnn.allow_tf32 is on by default) to compare with paragrad's float32."""
    cudnn_library.load()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.backends.cudnn.allow_tf32 = old


def _module(mode, input_size, hidden, layers=1, bidirectional=False, proj=0, bias=True):
    kw = dict(num_layers=layers, bidirectional=bidirectional, bias=bias)
    if mode.startswith("RNN_"):
        kw["nonlinearity"] = mode[4:].lower()
    if proj:
        kw["proj_size"] = proj
    torch.manual_seed(0)
    cls = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU}.get(mode, torch.nn.RNN)
    return cls(input_size, hidden, **kw).double()


class Case:
    """One configuration: random inputs and cotangents (float64 on the host), PyTorch's results
    and paragrad's cuDNN results for them."""

    def __init__(self, mode, layers=1, bidirectional=False, proj=0, bias=True, lengths=None, L=7, N=5, n_in=6, H=8,
                 seed=0):
        self.mode, self.lengths = mode, lengths
        self.m = _module(mode, n_in, H, layers, bidirectional, proj, bias)
        self.kw = dict(hidden_size=H, proj_size=proj, num_layers=layers, bidirectional=bidirectional)
        D, out = 2 if bidirectional else 1, proj or H
        rng = np.random.default_rng(seed)
        self.x = rng.standard_normal((L, N, n_in))
        self.h0 = rng.standard_normal((layers * D, N, out))
        self.c0 = rng.standard_normal((layers * D, N, H)) if mode == "LSTM" else None
        self.dy = rng.standard_normal((L, N, D * out))
        self.dhy = rng.standard_normal(self.h0.shape)
        self.dcy = rng.standard_normal(self.c0.shape) if mode == "LSTM" else None

    def torch(self, dtype):
        """(y, hy, cy, dx, dh0, dc0, dweights) from PyTorch, as float64 NumPy arrays."""
        tdt = getattr(torch, dtype)
        m = self.m.to(REF_DEVICE, tdt)
        m.zero_grad()

        def t(a, grad=False):
            return None if a is None else torch.tensor(a, dtype=tdt, device=REF_DEVICE, requires_grad=grad)
        x, h0, c0 = t(self.x, True), t(self.h0, True), t(self.c0, True)
        inp = x
        if self.lengths is not None:
            inp = torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor(self.lengths), enforce_sorted=False)
        y, state = m(inp, (h0, c0) if self.mode == "LSTM" else h0)
        if self.lengths is not None:
            y, _ = torch.nn.utils.rnn.pad_packed_sequence(y, total_length=self.x.shape[0])
        hy, cy = state if self.mode == "LSTM" else (state, None)
        loss = (y * t(self.dy)).sum() + (hy * t(self.dhy)).sum()
        if cy is not None:
            loss = loss + (cy * t(self.dcy)).sum()
        loss.backward()

        def n(a):
            return None if a is None else a.detach().double().cpu().numpy()
        return (n(y), n(hy), n(cy), n(x.grad), n(h0.grad), n(c0.grad if c0 is not None else None),
                [n(p.grad) for p in m._flat_weights])

    def weights(self, dtype):
        return [_dev(p.detach().double().cpu().numpy(), dtype) for p in self.m._flat_weights]

    def forward(self, dtype, need_backward=True, training=True, dropout=0.0, **kw):
        return cudnn_rnn.rnn_forward(self.mode, _dev(self.x, dtype), _dev(self.h0, dtype), _dev(self.c0, dtype),
                                     self.weights(dtype), dropout=dropout, training=training,
                                     seq_lengths=self.lengths, need_backward=need_backward, **self.kw, **kw)

    def paragrad(self, dtype, dhy=True):
        """The same seven results from cudnn_rnn."""
        y, hy, cy, ctx = self.forward(dtype)
        dx, dh0, dc0, dws = cudnn_rnn.rnn_backward(ctx, _dev(self.dy, dtype), _dev(self.dhy, dtype) if dhy else None,
                                                   _dev(self.dcy, dtype) if dhy else None)
        return tuple(_host(a) for a in (y, hy, cy, dx, dh0, dc0)) + ([_host(w) for w in dws],)


def _dev(a, dtype):
    if a is None:
        return None
    return cupy.asarray(a.astype(bfloat16.np if dtype == "bfloat16" else dtype))


def _host(a):
    return None if a is None else a.get().astype(np.float64)


NAMES = ("y", "hy", "cy", "dx", "dh0", "dc0")


def _compare(got, want, rtol, atol):
    """Every result within tolerance; atol scales with the result's largest magnitude (a weight
    gradient sums over every step and row: its float32 rounding grows with its size)."""
    def close(g, w, what):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * max(1.0, float(np.abs(w).max(initial=0))),
                                   err_msg=what)
    for name, g, w in zip(NAMES, got[:6], want[:6]):
        if w is None:
            assert g is None, name
        else:
            close(g, w, name)
    assert len(got[6]) == len(want[6])
    for i, (g, w) in enumerate(zip(got[6], want[6])):
        assert g.shape == w.shape, (i, g.shape, w.shape)
        close(g, w, f"gradient of parameter {i}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, False), (1, True), (2, True)])
@pytest.mark.parametrize("mode", MODES)
def test_matches_torch(mode, layers, bidirectional, dtype):
    case = Case(mode, layers, bidirectional)
    _compare(case.paragrad(dtype), case.torch(dtype), **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_lstm_projection_matches_torch(bias, bidirectional, dtype):
    case = Case("LSTM", 2, bidirectional, proj=5, bias=bias)
    _compare(case.paragrad(dtype), case.torch(dtype), **TOL[dtype])


@pytest.mark.parametrize("mode", MODES)
def test_without_biases_matches_torch(mode):
    case = Case(mode, 2, True, bias=False)
    _compare(case.paragrad("float64"), case.torch("float64"), **TOL["float64"])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("lengths", [[7, 6, 4, 4, 1], [3, 7, 1, 5, 7]], ids=["sorted", "unsorted"])
@pytest.mark.parametrize("mode", MODES)
def test_padded_sequences_match_packed_torch(mode, lengths, dtype):
    """Each sequence runs its own number of steps (the reverse direction from its own end): hy is
    its state after its last step, y and dx are zero past it; PyTorch's packed sequences."""
    case = Case(mode, 2, True, lengths=lengths)
    got = case.paragrad(dtype)
    _compare(got, case.torch(dtype), **TOL[dtype])
    past = np.arange(7)[:, None] >= np.asarray(lengths)[None, :]
    assert (got[0][past] == 0).all() and (got[3][past] == 0).all()


def test_lstm_projection_with_lengths_matches_torch():
    case = Case("LSTM", 2, True, proj=3, lengths=[2, 7, 5, 1, 6])
    _compare(case.paragrad("float64"), case.torch("float64"), **TOL["float64"])


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_missing_state_gradients_count_as_zeros(mode):
    case = Case(mode, 2, True)
    case.dhy = np.zeros_like(case.dhy)
    case.dcy = None if case.dcy is None else np.zeros_like(case.dcy)
    _compare(case.paragrad("float64", dhy=False), case.torch("float64"), **TOL["float64"])


def test_inference_mode_matches_training_forward():
    case = Case("LSTM", 2, True)
    y, hy, cy, ctx = case.forward("float64", need_backward=False, training=False, dropout=0.5)
    assert ctx is None
    want = case.torch("float64")
    for g, w in zip((y, hy, cy), want[:3]):
        np.testing.assert_allclose(_host(g), w, **TOL["float64"])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_close_to_float64(dtype):
    case = Case("LSTM", 2, True)
    out = case.forward(dtype)
    if out is None:
        assert dtype == "bfloat16", "cuDNN declined a float16 RNN"
        pytest.skip("this cuDNN declines bfloat16 recurrent layers (the caller composes them instead)")
    y, hy, cy, ctx = out
    dx, dh0, dc0, dws = cudnn_rnn.rnn_backward(ctx, _dev(case.dy, dtype), _dev(case.dhy, dtype), _dev(case.dcy, dtype))
    assert y.dtype == dx.dtype == dws[0].dtype and y.dtype.name == dtype
    want = case.torch("float64")
    for name, g, w in zip(NAMES, (y, hy, cy, dx, dh0, dc0), want):
        g = _host(g)
        assert np.linalg.norm(g - w) <= 3e-2 * np.linalg.norm(w), name
    for i, (g, w) in enumerate(zip(dws, want[6])):
        assert np.linalg.norm(_host(g) - w) <= 3e-2 * np.linalg.norm(w), f"gradient of parameter {i}"


def test_dropout_between_layers_draws_from_cudnn_state():
    """Dropout changes the output; the same dropout seed draws the same masks again (the state is
    re-initialized when the seed changes); the backward follows the forward's masks."""
    case = Case("LSTM", 3, False, H=32, N=4)
    plain = _host(case.forward("float64", need_backward=False)[0])
    first = case.forward("float64", dropout=0.5, dropout_seed=11)
    other = _host(case.forward("float64", dropout=0.5, dropout_seed=12)[0])
    again = _host(case.forward("float64", dropout=0.5, dropout_seed=11)[0])
    y = _host(first[0])
    assert not np.allclose(y, plain) and not np.allclose(y, other)
    np.testing.assert_array_equal(y, again)
    dx, dh0, dc0, dws = cudnn_rnn.rnn_backward(first[3], _dev(case.dy, "float64"), None, None)
    assert all(np.isfinite(_host(a)).all() for a in [dx, dh0, dc0] + dws)
    with pytest.raises(RuntimeError, match="each forward serves one backward"):
        cudnn_rnn.rnn_backward(first[3], _dev(case.dy, "float64"), None, None)


def test_two_layers_of_one_shape_keep_their_own_weights():
    """Two modules of one configuration (an encoder and a decoder) run forward, then backward in
    reverse order: each backward sees the weights its forward ran with."""
    a, b = Case("GRU", 2, True, seed=1), Case("GRU", 2, True, seed=2)
    b.m = _module("GRU", 6, 8, 2, True)
    with torch.no_grad():
        for p in b.m.parameters():
            p.mul_(-0.5)
    ya = a.forward("float64")
    yb = b.forward("float64")
    got_b = cudnn_rnn.rnn_backward(yb[3], _dev(b.dy, "float64"), _dev(b.dhy, "float64"), None)
    got_a = cudnn_rnn.rnn_backward(ya[3], _dev(a.dy, "float64"), _dev(a.dhy, "float64"), None)
    for case, fwd, bwd in ((a, ya, got_a), (b, yb, got_b)):
        got = tuple(_host(t) for t in fwd[:3] + bwd[:3]) + ([_host(w) for w in bwd[3]],)
        _compare(got, case.torch("float64"), **TOL["float64"])


def test_new_shapes_build_descriptors_and_old_ones_reuse_them():
    cudnn_rnn._setups.clear()       # (what earlier tests built; nothing pending holds on to it)
    cudnn_rnn._datas.clear()

    def run_and_count(case):
        _compare(case.paragrad("float64"), case.torch("float64"), **TOL["float64"])
        return len(cudnn_rnn._setups), len(cudnn_rnn._datas)
    small, wide = Case("LSTM", 2, True, L=5, N=3), Case("LSTM", 2, True, L=9, N=6)
    assert run_and_count(small) == (1, 1)
    assert run_and_count(wide) == (1, 2)    # one configuration: its RNN descriptor and layout again
    assert run_and_count(Case("LSTM", 2, True, L=9, N=6, lengths=[9, 2, 3, 9, 1, 4])) == (1, 3)
    assert run_and_count(small) == (1, 3)   # every descriptor reused
    assert run_and_count(Case("LSTM", 2, True, L=5, N=3, H=10)) == (2, 4)


def test_declines_what_cudnn_does_not_run():
    case = Case("GRU")
    assert cudnn_rnn.rnn_forward("GRU", cupy.ones((3, 2, 6), dtype=cupy.int32), None, None, case.weights("float64"),
                                 dropout=0.0, training=False, need_backward=False, **case.kw) is None
    assert cudnn_rnn.rnn_forward("GRU", cupy.ones((0, 2, 6)), None, None, case.weights("float64"), dropout=0.0,
                                 training=False, need_backward=False, **case.kw) is None


def test_bad_arguments_raise_clear_errors():
    case = Case("LSTM", 2)
    x, w = _dev(case.x, "float64"), case.weights("float64")
    common = dict(dropout=0.0, training=False, need_backward=False, **case.kw)
    with pytest.raises(ValueError, match="2-layer LSTM has 8 parameters"):
        cudnn_rnn.rnn_forward("LSTM", x, None, None, w[:-1], **common)
    with pytest.raises(ValueError, match="weight_ih_l1 has shape"):
        cudnn_rnn.rnn_forward("LSTM", x, None, None, w[:4] + [w[4][:, :3]] + w[5:], **common)
    with pytest.raises(RuntimeError, match="not the same dtype"):
        cudnn_rnn.rnn_forward("LSTM", x.astype(cupy.float32), None, None, w, **common)
    with pytest.raises(RuntimeError, match="expected hidden size"):
        cudnn_rnn.rnn_forward("LSTM", x, cupy.zeros((1, 5, 8)), None, w, **common)
    with pytest.raises(ValueError, match="seq_lengths has 2 entries"):
        cudnn_rnn.rnn_forward("LSTM", x, None, None, w, seq_lengths=[1, 2], **common)
    with pytest.raises(ValueError, match="every sequence length"):
        cudnn_rnn.rnn_forward("LSTM", x, None, None, w, seq_lengths=[8, 1, 1, 1, 1], **common)
