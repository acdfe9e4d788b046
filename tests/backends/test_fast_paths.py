"""Every fast path of backends/fast_paths.py against the composition it replaces, from one table:
each row runs an op (forward, backward with a random cotangent, or an optimizer step) on each
device of PARAGRAD_TEST_DEVICES with fast paths on, then inside `fast_paths(False)`, and the
results must agree. Where the backend has the fast path, the row also checks that the op asked
for it (a row that stopped reaching its kernel would otherwise compare the composition with
itself). The decompositions have no composition (base.py declares them as optional primitives;
test_primitives.py covers a backend without them).

Also: FastPaths documents exactly the names FAST_PATHS lists, and each backend's fast_* methods
take the documented arguments."""
import inspect

import numpy as np
import pytest

import paragrad as pg
import paragrad.nn.functional as F
from paragrad.backends import backend_for
from paragrad.backends.base import FAST_PATHS, Backend, fast_paths
from paragrad.backends.fast_paths import FastPaths

DECOMPOSITIONS = {n for n in FAST_PATHS if n.startswith("linalg_")}
ATOL = RTOL = 1e-5          # float32: a fused kernel may sum in another order than the composition


def _t(a, device, grad=True):
    return pg.tensor(np.asarray(a, np.float32), device=device, requires_grad=grad)


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _fwd_bwd(fn, inputs, rng):
    """fn(*inputs)'s value and the inputs' gradients for a random cotangent."""
    out = fn(*inputs)
    out.backward(pg.tensor(_rand(rng, *out.shape), device=out.device))
    return [out] + [t.grad for t in inputs]


def _op(fn, *shapes, int_inputs=()):
    """A row: fn over float inputs of these shapes (then the fixed non-float inputs)."""
    def run(device):
        rng = np.random.default_rng(0)
        xs = [_t(_rand(rng, *s), device) for s in shapes]
        extra = [pg.tensor(a, device=device) for a in int_inputs]
        return _fwd_bwd(lambda *t: fn(*t, *extra), xs, rng)
    return run


def _module(make, shape):
    """A row: a module built from seed 0, its output and its input's and parameters' gradients."""
    def run(device):
        pg.manual_seed(0)
        m = make().to(device)
        rng = np.random.default_rng(0)
        x = _t(_rand(rng, *shape), device)
        out = m(x)
        out = out[0] if isinstance(out, tuple) else out
        out.backward(pg.tensor(_rand(rng, *out.shape), device=device))
        return [out, x.grad] + [p.grad for p in m.parameters()]
    return run


def _per_step(row):
    """A row run with the backend's whole-stack recurrent call switched off, so that a recurrent
    layer reaches its per-step fast paths (the path the stack call declines to, and double
    backward's)."""
    def run(device):
        b = backend_for(device)
        b.fast_rnn = None           # (an instance attribute: backend.fast() then finds None)
        try:
            return row(device)
        finally:
            del b.fast_rnn
    return run


def _optimizer(make):
    """A row: three steps of an optimizer over two parameters, the parameters afterwards."""
    def run(device):
        rng = np.random.default_rng(0)
        ps = [_t(_rand(rng, 4, 3), device), _t(_rand(rng, 5), device)]
        opt = make(ps)
        for _ in range(3):
            for p in ps:
                p.grad = pg.tensor(_rand(rng, *p.shape), device=device)
            opt.step()
        return [p.detach() for p in ps]
    return run


def _unscale(device):
    """A row: GradScaler's unscale of two gradients, clean and then with an inf, and the SGD step
    it lets through or skips; the gradients, the flags and the parameters afterwards."""
    rng = np.random.default_rng(0)
    ps = [_t(_rand(rng, 4, 3), device), _t(_rand(rng, 5), device)]
    opt = pg.optim.SGD(ps, lr=0.1)
    scaler = pg.amp.GradScaler(device, init_scale=8.0)
    out = []
    for bad in (False, True):
        scaled = scaler.scale(sum((p * p).sum() for p in ps))
        opt.zero_grad()
        (scaled * (float("inf") if bad else 1.0)).backward()
        scaler.unscale_(opt)
        out += [p.grad.clone() for p in ps] + list(scaler._per_optimizer_states[id(opt)]["found_inf_per_device"].values())
        scaler.step(opt)
        scaler.update()
    return out + [p.detach() for p in ps]


def _clip(device):
    """A row: clip_grad_norm_ over three gradients, one of two chunks of the multi-tensor kernels
    (2,048 elements); the total norm and the clipped gradients."""
    rng = np.random.default_rng(0)
    ps = [_t(_rand(rng, 4, 3), device), _t(_rand(rng, 5), device), _t(_rand(rng, 2100), device)]
    for p in ps:
        p.grad = pg.tensor(_rand(rng, *p.shape), device=device)
    total = pg.nn.utils.clip_grad_norm_(ps, 1.0)
    return [total] + [p.grad for p in ps]


def _batch_norm(device):
    rng = np.random.default_rng(0)
    x, w, b = _t(_rand(rng, 4, 3, 5, 5), device), _t(_rand(rng, 3), device), _t(_rand(rng, 3), device)
    rm, rv = pg.zeros(3, device=device), pg.ones(3, device=device)
    got = _fwd_bwd(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=True), [x, w, b], rng)
    return got + [rm, rv]


_IDX = np.array([[1, 3, 1], [0, 4, 1]])
_TARGET = np.array([2, 0, 4, -100, 1])
_GELU_TANH = lambda: pg.nn.GELU(approximate="tanh")  # noqa: E731


def _seeded_dropout(x, p):
    pg.manual_seed(3)           # the same draws with the fast path and without it
    return F.dropout(x, p)

def _use_pieces(pieces):
    a, b, c = pieces
    return (a * 2).sum(1) + b.exp().sum(1) + (c * c).sum(1)


def _seeded_residual_dropout(r, y, p):
    pg.manual_seed(3)
    return F.residual_dropout(r, y, p)


def _float32_loss_of_bf16(x, y):
    """mse_loss under autocast runs in float32: both bf16 inputs cast up together (cast_many)."""
    with pg.autocast(x.device.type, dtype=pg.bfloat16):
        return F.mse_loss(x.to(pg.bfloat16), y.to(pg.bfloat16), reduction="none")


# fast path -> the row that reaches it (forward and backward pairs share a row)
ROWS = {
    "softmax": _op(lambda x: x.softmax(-1), (4, 7)),
    "log_softmax": _op(lambda x: x.log_softmax(-1), (4, 7)),
    "cross_entropy": _op(lambda x, t: F.cross_entropy(x, t), (5, 6), int_inputs=(_TARGET,)),
    "embedding_backward": _op(lambda w, i: F.embedding(i, w), (5, 3), int_inputs=(_IDX,)),
    "pow_scalar": _op(lambda x: x ** 3, (3, 4)),
    "roll": _op(lambda x: x.roll(2, 0), (5, 3)),
    "layer_norm": _op(lambda x, w, b: F.layer_norm(x, (6,), w, b), (3, 4, 6), (6,), (6,)),
    "linear_bias": _op(lambda x, w, b: F.linear(x, w, b), (2, 3, 8), (4, 8), (4,)),
    "linear_act": _module(lambda: pg.nn.Sequential(pg.nn.Linear(5, 4), _GELU_TANH()), (3, 5)),
    "mlp": _module(lambda: pg.nn.Sequential(pg.nn.Linear(5, 6), pg.nn.ReLU(), pg.nn.Linear(6, 4),
                                            _GELU_TANH(), pg.nn.Linear(4, 3)), (8, 5)),
    "relu_backward": _op(lambda x: x.relu(), (3, 4)),
    "sigmoid_backward": _op(lambda x: x.sigmoid(), (3, 4)),
    "tanh_backward": _op(lambda x: x.tanh(), (3, 4)),
    "gelu": _op(lambda x, y: F.gelu(x) + F.gelu(y, approximate="tanh"), (3, 4), (4,)),
    "dropout": _op(lambda x: _seeded_dropout(x, 0.3), (40, 50)),
    "residual_dropout": _op(lambda r, y: _seeded_residual_dropout(r, y, 0.3), (40, 50), (40, 50)),
    "conv2d": _op(lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), (2, 3, 7, 7), (4, 3, 3, 3), (4,)),
    "conv_transpose2d": _op(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                            (2, 4, 5, 5), (4, 3, 3, 3), (3,)),
    "max_pool2d": _op(lambda x: F.max_pool2d(x, 3, stride=2, padding=1), (2, 3, 7, 7)),
    "batch_norm": _batch_norm,
    "scaled_dot_product_attention": _op(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (2, 2, 5, 4), (2, 2, 5, 4),
        (2, 2, 5, 3)),
    "adam_step": _optimizer(lambda ps: pg.optim.Adam(ps, lr=0.1)),
    "sgd_step": _optimizer(lambda ps: pg.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)),
    "unscale_grads": _unscale,
    "sum_of_squares": _clip,
    "basic_view": _op(lambda x: x[1:3, ::2] * 2, (4, 5)),
    "joined_view": _op(lambda x: _use_pieces(x.split([2, 3, 4], 1)), (4, 9)),
    "cast_many": _op(_float32_loss_of_bf16, (3, 4), (3, 4)),
    "unbind": _op(lambda x: pg.stack([row * (i + 1) for i, row in enumerate(x)], 1), (3, 4)),
    "lstm_cell": _per_step(_module(lambda: pg.nn.LSTM(3, 4), (5, 2, 3))),
    "gru_cell": _per_step(_module(lambda: pg.nn.GRU(3, 4), (5, 2, 3))),
    "rnn_cell": _per_step(_module(lambda: pg.nn.RNN(3, 4), (5, 2, 3))),
    "rnn": _module(lambda: pg.nn.LSTM(3, 4, num_layers=2, bidirectional=True), (5, 2, 3)),
}
# the fast paths each row reaches
PATHS = {row: [row] for row in ROWS}
for row in ("softmax", "log_softmax", "cross_entropy", "layer_norm", "linear_act", "mlp", "gelu", "dropout", "conv2d",
            "max_pool2d", "batch_norm", "scaled_dot_product_attention"):
    PATHS[row] = [row, row + "_backward"]
PATHS["residual_dropout"] = ["residual_dropout", "dropout_backward"]
PATHS["rnn"] = ["rnn", "rnn_backward"]
for row in ("lstm_cell", "gru_cell", "rnn_cell"):
    PATHS[row] = [row + "_forward", row + "_backward"]


def test_the_table_has_every_fast_path():
    listed = {p for paths in PATHS.values() for p in paths}
    assert sorted(listed | DECOMPOSITIONS) == sorted(FAST_PATHS)


def test_fast_paths_are_documented_with_their_signatures():
    documented = {n[len("fast_"):] for n, f in vars(FastPaths).items() if n.startswith("fast_") and callable(f)}
    declared = {n[len("fast_"):] for n in vars(Backend) if n.startswith("fast_linalg_")}
    assert documented == set(FAST_PATHS) - DECOMPOSITIONS
    assert declared == DECOMPOSITIONS
    for name in documented:
        assert getattr(FastPaths, "fast_" + name).__doc__, name


def test_the_backends_fast_paths_take_the_documented_arguments(device):
    b = backend_for(device)
    for name in FAST_PATHS:
        method = getattr(type(b), "fast_" + name, None)
        doc = getattr(FastPaths, "fast_" + name, None) or getattr(Backend, "fast_" + name)
        if method is None:
            continue
        params = list(inspect.signature(doc).parameters.values())
        args = [object() for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
        kwargs = {p.name: object() for p in params if p.kind is p.KEYWORD_ONLY}
        inspect.signature(inspect.unwrap(method)).bind(*args, **kwargs)     # (raises if not)


def test_a_backend_without_fast_paths_composes(device):
    b = backend_for(device)
    with fast_paths(False):
        assert all(b.fast(name) is None for name in FAST_PATHS)


@pytest.mark.parametrize("row", sorted(ROWS))
def test_fast_path_matches_its_composition(device, row, monkeypatch):
    cls = type(backend_for(device))
    asked = set()
    lookup = cls.fast

    def fast(self, name):
        asked.add(name)
        return lookup(self, name)
    monkeypatch.setattr(cls, "fast", fast)
    fast_results = [None if t is None else t.detach().cpu().numpy() for t in ROWS[row](device)]
    has = {n for n in PATHS[row] if getattr(cls, "fast_" + n, None) is not None}
    assert has <= asked, f"{row}: the op did not ask for {sorted(has - asked)}"
    with fast_paths(False):
        composed = [None if t is None else t.detach().cpu().numpy() for t in ROWS[row](device)]
    assert len(fast_results) == len(composed)
    for i, (f, c) in enumerate(zip(fast_results, composed)):
        assert (f is None) == (c is None), (row, i)
        if f is not None:
            np.testing.assert_allclose(f, c, atol=ATOL, rtol=RTOL, err_msg=f"{row}: result {i}")
