"""The CUDA batch_norm fast path (backends/cuda/kernels/batch_norm.py and .cu) against the
composite it replaces and against PyTorch on the CPU: forward and gradients in training and eval,
running statistics over several steps (momentum=None included), affine or not, (N, C) to
(256, 64, 32, 32) inputs, several blocks per channel, determinism, and a training step captured
by pg.jit. Also pg.backends.cudnn.benchmark against the heuristic's cuDNN plans. Marked `gpu`
(run by scripts/gpu-check)."""
import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn.functional as F
from paragrad.backends.base import fast_paths
from tests.helpers import assert_close, make_input

pytestmark = pytest.mark.gpu

BIG = (256, 64, 32, 32)                     # a ResNet-18 (CIFAR stem) layer-1 activation
SHAPES = [(2, 3, 5, 7), (4, 6), (3, 4, 9), BIG]
# fast vs composite: the same formulas, sums added in another order (double in the kernels)
TOL = {"float32": (1e-5, 1e-5), "float64": (1e-12, 1e-10), "float16": (2e-3, 2e-3),
       "bfloat16": (2e-2, 2e-2)}
# BIG's per-channel sums (weight and bias gradients) add 262144 float32 terms: near-zero ones
# keep an absolute error of about 1e-4 in the composite and in torch
BIG_TOL = (2e-3, 1e-4)


def _steps(shape, dtype, training, affine, fast_fwd, fast_bwd, steps=3, momentum=0.1):
    """`steps` forward/backward passes on fresh inputs sharing running statistics and
    parameters: -> every output, gradient and the final running statistics, as NumPy."""
    rng = np.random.default_rng(0)
    c, dt = shape[1], getattr(pg, dtype)
    rm = pg.tensor(rng.uniform(-1, 1, c), dtype=dt, device="cuda")
    rv = pg.tensor(rng.uniform(0.5, 2, c), dtype=dt, device="cuda")
    w = b = None
    if affine:
        w = pg.tensor(rng.uniform(0.5, 1.5, c), dtype=dt, device="cuda", requires_grad=True)
        b = pg.tensor(rng.uniform(-1, 1, c), dtype=dt, device="cuda", requires_grad=True)
    out = []
    for step in range(steps):
        x = pg.tensor(make_input(shape, "float32", -3 + step, 2 + 2 * step, rng), dtype=dt,
                      device="cuda", requires_grad=True)
        gy = pg.tensor(make_input(shape, "float32", -1, 1, rng), dtype=dt, device="cuda")
        with fast_paths(fast_fwd):
            y = F.batch_norm(x, rm, rv, w, b, training=training, momentum=momentum)
        with fast_paths(fast_bwd):
            y.backward(gy)
        out += [y.detach(), x.grad]
    out += ([w.grad, b.grad] if affine else []) + [rm, rv]
    return [t.to(pg.float64).cpu().numpy() if t.dtype is pg.bfloat16 else t.cpu().numpy() for t in out]


def _compare(got, ref, atol, rtol, what):
    assert len(got) == len(ref)
    for i, (g, r) in enumerate(zip(got, ref)):
        assert g.dtype == r.dtype and g.shape == r.shape, f"{what}: output {i}"
        np.testing.assert_allclose(g.astype(np.float64), r.astype(np.float64), atol=atol,
                                   rtol=rtol, err_msg=f"{what}: output {i}")


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("shape,dtype", [(s, d) for s in SHAPES for d in ("float32", "float64", "float16", "bfloat16")
                                         if s != BIG or d == "float32"], ids=str)   # the large shape: float32 only
def test_fast_path_matches_composite(shape, dtype, training, affine):
    """Fast forward and backward, and each with the other composed (they share the saved
    mean/rstd layout), against the composite."""
    atol, rtol = BIG_TOL if shape == BIG else TOL[dtype]
    ref = _steps(shape, dtype, training, affine, False, False)
    for fast_fwd, fast_bwd in ((True, True), (True, False), (False, True)):
        got = _steps(shape, dtype, training, affine, fast_fwd, fast_bwd)
        _compare(got, ref, atol, rtol, f"fast forward {fast_fwd}, fast backward {fast_bwd}")


def test_fast_path_is_taken(monkeypatch):
    """Every float dtype runs the kernels (the composite would raise here), forward and
    backward, training and eval."""
    import paragrad.ops.neural.batch_norm as bn

    def composite(*args, **kwargs):
        raise AssertionError("the composite ran")
    monkeypatch.setattr(bn, "_forward_composite", composite)
    monkeypatch.setattr(bn, "_backward_composite", composite)
    for dt in (pg.float32, pg.float64, pg.float16, pg.bfloat16):
        for training in (True, False):
            x = pg.randn(4, 3, 5, device="cuda").to(dt).requires_grad_()
            w = pg.ones(3, dtype=dt, device="cuda", requires_grad=True)
            b = pg.zeros(3, dtype=dt, device="cuda", requires_grad=True)
            rm, rv = pg.zeros(3, dtype=dt, device="cuda"), pg.ones(3, dtype=dt, device="cuda")
            F.batch_norm(x, rm, rv, w, b, training=training).sum().backward()
            assert x.grad is not None and w.grad is not None and b.grad is not None


@pytest.mark.parametrize("splits", [1, 2, 6, 7, 64])
def test_several_blocks_per_channel(monkeypatch, splits):
    """Channels split over several blocks (uneven shares, empty ones when splits > M / 2)
    combine to the composite's result; the per-channel tickets are all 0 afterwards."""
    from paragrad.backends.cuda.kernels import batch_norm as cbn
    monkeypatch.setattr(cbn, "_splits", lambda m, c: splits)
    for shape in ((3, 2, 3), (5, 4, 7, 3)):
        ref = _steps(shape, "float32", True, True, False, False, steps=2)
        got = _steps(shape, "float32", True, True, True, True, steps=2)
        _compare(got, ref, *TOL["float32"], f"{splits} splits, {shape}")
    assert all(not t.any() for t in cbn._tickets.values())


def test_deterministic():
    """The same bits on every run, with the large shape's several blocks per channel."""
    runs = [_steps(BIG, "float32", True, True, True, True, steps=1) for _ in range(2)]
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_against_torch(shape, training, affine):
    """Three steps through the fast path against torch's CPU batch_norm: outputs, input and
    parameter gradients, running statistics after each step."""
    rng = np.random.default_rng(0)
    c = shape[1]
    rm0, rv0 = rng.uniform(-1, 1, c).astype(np.float32), rng.uniform(0.5, 2, c).astype(np.float32)
    w0, b0 = rng.uniform(0.5, 1.5, c).astype(np.float32), rng.uniform(-1, 1, c).astype(np.float32)
    prm, prv = pg.tensor(rm0, device="cuda"), pg.tensor(rv0, device="cuda")
    trm, trv = torch.tensor(rm0), torch.tensor(rv0)
    pw = pg.tensor(w0, device="cuda", requires_grad=True) if affine else None
    pb = pg.tensor(b0, device="cuda", requires_grad=True) if affine else None
    tw = torch.tensor(w0, requires_grad=True) if affine else None
    tb = torch.tensor(b0, requires_grad=True) if affine else None
    atol, rtol = (1e-4, 1e-4) if shape == BIG else (1e-5, 1e-4)
    p_atol, p_rtol = BIG_TOL if shape == BIG else (atol, rtol)
    for step in range(3):
        a = make_input(shape, "float32", -3 + step, 2 + 2 * step, rng)
        g = make_input(shape, "float32", -1, 1, rng)
        px = pg.tensor(a, device="cuda", requires_grad=True)
        tx = torch.tensor(a, requires_grad=True)
        py = F.batch_norm(px, prm, prv, pw, pb, training=training, momentum=0.1)
        ty = torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, training=training, momentum=0.1)
        py.backward(pg.tensor(g, device="cuda"))
        ty.backward(torch.tensor(g))
        assert_close(py, ty, atol, rtol, f"output at step {step}")
        assert_close(px.grad, tx.grad, atol, rtol, f"input gradient at step {step}")
        if affine:
            assert_close(pw.grad, tw.grad, p_atol, p_rtol, f"weight gradient at step {step}")
            assert_close(pb.grad, tb.grad, p_atol, p_rtol, f"bias gradient at step {step}")
        assert_close(prm, trm, 1e-6, 1e-5, f"running_mean after step {step}")
        assert_close(prv, trv, 1e-6, 1e-5, f"running_var after step {step}")


@pytest.mark.parametrize("shape", [(8, 3, 4, 4), (4, 6)], ids=str)
def test_cumulative_average_module_against_torch(shape):
    """BatchNorm(momentum=None): factor 1 / num_batches_tracked, through the fast path."""
    cls, tcls = (pg.nn.BatchNorm2d, torch.nn.BatchNorm2d) if len(shape) == 4 else \
        (pg.nn.BatchNorm1d, torch.nn.BatchNorm1d)
    pm, tm = cls(shape[1], momentum=None).to("cuda"), tcls(shape[1], momentum=None)
    rng = np.random.default_rng(0)
    for step in range(3):
        a = make_input(shape, "float32", -2 + step, 2 + 3 * step, rng)
        assert_close(pm(pg.tensor(a, device="cuda")), tm(torch.tensor(a)), 1e-5, 1e-4,
                     f"output at step {step}")
        assert_close(pm.running_mean, tm.running_mean, 1e-6, 1e-5, f"running_mean, step {step}")
        assert_close(pm.running_var, tm.running_var, 1e-6, 1e-5, f"running_var, step {step}")
    assert pm.num_batches_tracked.item() == tm.num_batches_tracked.item() == 3


@pytest.mark.parametrize("layout", ["float64", "strided"])
def test_running_stats_of_another_dtype_or_layout(layout):
    """float32 input with float64 or non-contiguous running statistics (updated through a
    working copy): the composite's values, and one version bump each, as copy_ gives."""
    rm0, rv0 = np.array([0.5, -1.0, 0.25]), np.array([2.0, 0.5, 1.5])

    def make(v):
        if layout == "float64":
            return pg.tensor(v, dtype=pg.float64, device="cuda")
        return pg.tensor(np.repeat(v, 2), dtype=pg.float32, device="cuda")[::2]
    a = make_input((8, 3, 4), "float32")
    results = []
    for fast in (True, False):
        rm, rv = make(rm0), make(rv0)
        versions = rm._version, rv._version
        with fast_paths(fast):
            F.batch_norm(pg.tensor(a, device="cuda"), rm, rv, training=True, momentum=0.3)
        assert (rm._version, rv._version) == (versions[0] + 1, versions[1] + 1)
        results.append([rm.cpu().numpy(), rv.cpu().numpy()])
    _compare(*results, 1e-6, 1e-6, layout)


@pytest.mark.parametrize("autotune", [False, True], ids=["heuristic", "cudnn_benchmark"])
def test_training_step_inside_pg_jit(autotune):
    """A conv + BatchNorm2d + ReLU training step captured by pg.jit (the batch_norm kernels and
    the running-statistics update inside the CUDA graph, and with cudnn.benchmark the timed
    plans) against the same steps run eagerly with every fast path off."""
    rng = np.random.default_rng(0)
    batches = [(pg.tensor(rng.standard_normal((16, 3, 6, 6)).astype(np.float32), device="cuda"),
                pg.tensor(rng.integers(0, 4, 16), device="cuda")) for _ in range(3)]

    def train(jitted):
        pg.manual_seed(0)
        model = pg.nn.Sequential(pg.nn.Conv2d(3, 8, 3, padding=1, bias=False), pg.nn.BatchNorm2d(8),
                                 pg.nn.ReLU(), pg.nn.Flatten(), pg.nn.Linear(8 * 6 * 6, 4)).to("cuda")
        opt = pg.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        run = pg.jit(step) if jitted else step
        losses = [run(*batches[i % 3]).item() for i in range(6)]
        bn = model[1]
        return losses, [p.detach().cpu().numpy() for p in model.parameters()] + [
            bn.running_mean.cpu().numpy(), bn.running_var.cpu().numpy()], bn.num_batches_tracked.item()

    pg.backends.cudnn.benchmark = autotune
    try:
        jit_losses, jit_state, jit_count = train(True)
    finally:
        pg.backends.cudnn.benchmark = False
    with fast_paths(False):
        eager_losses, eager_state, eager_count = train(False)
    assert jit_count == eager_count == 6
    # (cuDNN weight gradients may sum in another order from plan to plan)
    np.testing.assert_allclose(jit_losses, eager_losses, rtol=1e-4, atol=1e-5)
    for a, b in zip(jit_state, eager_state):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_magic_number_division():
    """n // d as the kernels compute it, for the divisors and dividends they can get."""
    from paragrad.backends.cuda.kernels.batch_norm import _divider
    rng = np.random.default_rng(0)
    for d in [1, 2, 3, 6, 7, 49, 64, 1000, 1024, 3136, 65535, 2 ** 20 + 1, 3 * 2 ** 29, 2 ** 31 - 1]:
        magic, shift = (int(v) for v in _divider(d))
        n = np.concatenate([rng.integers(0, 2 ** 31, 100_000), [0, 1, d - 1, d, d + 1, 2 ** 31 - 1]])
        n = n.astype(np.uint64) % np.uint64(2 ** 31)
        q = (((n * np.uint64(magic)) >> np.uint64(32)) + n) >> np.uint64(shift)
        np.testing.assert_array_equal(q, n // np.uint64(d), err_msg=f"divisor {d}")


# ---- pg.backends.cudnn.benchmark -----------------------------------------------------------------
@pytest.mark.parametrize("xs,ws,kw", [
    ((4, 3, 16, 16), (8, 3, 3, 3), dict(padding=1)),
    ((2, 8, 9, 9), (16, 8, 3, 3), dict(stride=2, padding=1)),
    ((2, 16, 8, 8), (32, 16, 1, 1), {}),
], ids=["3x3", "3x3-stride2", "1x1"])
def test_cudnn_benchmark_matches_the_heuristic_plans(xs, ws, kw):
    """float32 (TF32 off) convolution forward, data and weight gradients with every plan timed
    and the fastest kept: the heuristic plan's values (other algorithms sum in another order;
    a TF32 plan would be off by ~1e-3), and a timed plan recorded for each graph."""
    from paragrad.backends.cuda import cudnn_frontend as dnn
    assert pg.backends.cudnn.benchmark is False          # PyTorch's default
    rng = np.random.default_rng(0)
    a = rng.standard_normal(xs).astype(np.float32)
    wa = rng.standard_normal(ws).astype(np.float32)
    results = []
    for benchmark in (False, True):
        pg.backends.cudnn.benchmark = benchmark
        try:
            x = pg.tensor(a, device="cuda", requires_grad=True)
            w = pg.tensor(wa, device="cuda", requires_grad=True)
            y = pg.conv2d(x, w, **kw)
            y.backward(pg.tensor(np.random.default_rng(1).standard_normal(y.shape).astype(np.float32),
                                 device="cuda"))
            results.append([y.detach().cpu().numpy(), x.grad.cpu().numpy(), w.grad.cpu().numpy()])
        finally:
            pg.backends.cudnn.benchmark = False
    for name, p, r in zip(("output", "input gradient", "weight gradient"), *results):
        assert np.linalg.norm(p - r) <= 1e-4 * np.linalg.norm(r), name
    timed = {key[0]: hit for key, hit in dnn._graphs.items()
             if key[0] in ("fprop", "dgrad", "wgrad") and key[1:3] == (xs, ws) and key[-1]}
    assert set(timed) == {"fprop", "dgrad", "wgrad"}
    assert all(plan is not None for *_, plan in timed.values()), "no plan could be timed"
