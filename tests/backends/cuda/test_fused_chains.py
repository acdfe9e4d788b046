"""Fused elementwise chains (backends/cuda/fused_chains.py): eager elementwise ops recorded and
launched as one generated kernel. Each test checks values against a computation the chain
can't have touched (NumPy in float32/float64, or the same ops launched one at a time), and the
launch points: another primitive, a host read, an in-place write, a capture. Marked `gpu`, and
run with the chains on (PARAGRAD_LAZY=1, as scripts/gpu-check runs the suite); gpu-check also
runs the conformance tests with them off."""
import numpy as np
import pytest

import paragrad as pg

pytestmark = pytest.mark.gpu


@pytest.fixture
def chains():
    from paragrad.backends.cuda import fused_chains
    if not fused_chains.ENABLED:
        pytest.skip("fused chains off: these tests need PARAGRAD_LAZY=1 (scripts/gpu-check sets it)")
    fused_chains.flush()
    return fused_chains


def _pending_ops(chains):
    return len(chains._chain.ops) if chains._chain is not None else 0


@pytest.mark.parametrize("dtype", [pg.float32, pg.float64])
def test_a_chain_is_one_launch_and_equals_numpy_bit_for_bit(chains, dtype):
    rng = np.random.default_rng(0)
    nd = np.float32 if dtype is pg.float32 else np.float64
    z_np, h_np, hb_np = (rng.standard_normal((8, 16)).astype(nd) for _ in range(3))
    z, h, hb = (pg.tensor(a, device="cuda") for a in (z_np, h_np, hb_np))
    out = (1 - z) * h + z * hb / 3.0 - 0.5      # (the GRU update and two scalars)
    assert _pending_ops(chains) == 6            # 1 - z, *, /, *, +, -
    ref = (nd(1) - z_np) * h_np + z_np * hb_np / nd(3.0) - nd(0.5)
    np.testing.assert_array_equal(out.cpu().numpy(), ref)     # (the host read launched it)
    assert _pending_ops(chains) == 0


def test_transcendental_ops_equal_one_launch_per_op(chains):
    x = pg.randn(4, 33, device="cuda")
    y = pg.randn(4, 33, device="cuda")

    def f(flush_each):
        steps = [lambda v: v.exp(), lambda v: v.tanh(), lambda v: pg.sigmoid(v), lambda v: v.relu(),
                 lambda v: v.abs().sqrt(), lambda v: v.reciprocal(), lambda v: -v, lambda v: v * y,
                 lambda v: v ** 3.0, lambda v: v.pow(-2)]
        v = x
        for step in steps:
            v = step(v)
            if flush_each:
                chains.flush()
        return v.cpu().numpy()
    np.testing.assert_array_equal(f(False), f(True))


def test_gradients_through_a_recorded_cell_match_the_cpu():
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((5, 7)).astype(np.float32) for _ in range(3)]
    grads = {}
    for device in ("cpu", "cuda"):
        z, h, hb = (pg.tensor(a, device=device, requires_grad=True) for a in arrays)
        s = pg.sigmoid(z)
        out = ((1 - s) * h.tanh() + s * hb).relu()
        (out * out).sum().backward()
        grads[device] = [t.grad.cpu().numpy() for t in (z, h, hb)] + [out.detach().cpu().numpy()]
    for a, b in zip(grads["cpu"], grads["cuda"]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_another_primitive_launches_the_chain_first(chains):
    a = pg.randn(4, 4, device="cuda")
    b = a * 2 + 1
    assert _pending_ops(chains) == 2
    c = b @ b               # (reads b: the chain ran before the product)
    assert _pending_ops(chains) == 0
    bn = a.cpu().numpy() * 2 + 1
    np.testing.assert_allclose(c.cpu().numpy(), bn @ bn, rtol=1e-5)


def test_a_slice_of_a_pending_result_is_read_after_the_launch(chains):
    x = pg.arange(12, dtype=pg.float32, device="cuda")
    y = x * 2
    z = y[1:] + 1           # (a view of y's memory, not y: the chain launches, then the add)
    w = y.view(3, 4) * 3    # (a reshape of y: the same elements)
    np.testing.assert_array_equal(z.cpu().numpy(), np.arange(1, 12, dtype=np.float32) * 2 + 1)
    np.testing.assert_array_equal(w.cpu().numpy(), (np.arange(12, dtype=np.float32) * 6).reshape(3, 4))


def test_an_in_place_write_comes_after_the_reads_before_it(chains):
    x = pg.ones(6, device="cuda")
    y = x * 2               # recorded: reads x
    x.add_(5)               # writes x, recorded too: the kernel reads x before it stores it
    x.mul_(x)               # reads the new x
    assert _pending_ops(chains) == 3
    np.testing.assert_array_equal(y.cpu().numpy(), np.full(6, 2, np.float32))
    np.testing.assert_array_equal(x.cpu().numpy(), np.full(6, 36, np.float32))


def test_ops_of_another_size_or_dtype_start_a_new_chain(chains):
    a = pg.ones(8, device="cuda")
    b = a + 1
    c = pg.ones(3, device="cuda") * 4       # another element count: b's chain launched
    d = b.double() * 2                       # a cast (another primitive), then float64
    np.testing.assert_array_equal(c.cpu().numpy(), np.full(3, 4, np.float32))
    np.testing.assert_array_equal(d.cpu().numpy(), np.full(8, 4, np.float64))


def test_a_chain_longer_than_its_limit_is_split(chains):
    x = pg.zeros(10, device="cuda")
    for _ in range(chains._MAX_OPS * 2 + 5):
        x = x + 1
    np.testing.assert_array_equal(x.cpu().numpy(), np.full(10, chains._MAX_OPS * 2 + 5, np.float32))


def test_synchronize_launches_the_chain(chains):
    x = pg.ones(4, device="cuda") * 3
    assert _pending_ops(chains) == 1
    pg.cuda.synchronize()
    assert _pending_ops(chains) == 0
    np.testing.assert_array_equal(x.cpu().numpy(), np.full(4, 3, np.float32))


def test_a_captured_step_with_chains_replays_like_eager(chains):
    w0 = np.random.default_rng(2).standard_normal((6, 6)).astype(np.float32)
    results = {}
    for jit in (False, True):
        w = pg.tensor(w0, device="cuda", requires_grad=True)
        opt = pg.optim.SGD([w], lr=0.1)

        def step(x):
            opt.zero_grad()
            h = (x @ w).tanh()
            loss = ((1 - pg.sigmoid(h)) * h * 0.5 + h * h).sum()
            loss.backward()
            opt.step()
            return loss
        run = pg.jit(step) if jit else step
        # (each argument a pending chain's result: the replay's input copy reads it)
        losses = [float(run(pg.full((3, 6), 0.1, device="cuda") * (i + 1))) for i in range(4)]
        results[jit] = (losses, w.detach().cpu().numpy())
    np.testing.assert_allclose(results[True][0], results[False][0], rtol=1e-6)
    np.testing.assert_allclose(results[True][1], results[False][1], rtol=1e-6)


def test_backward_ends_with_its_chain_launched(chains):
    x = pg.randn(4, 4, device="cuda", requires_grad=True)
    y = pg.sigmoid(x * 3)
    # the last formulas (sigmoid's gradient, * 3) are elementwise, and autograd.grad writes no
    # .grad (whose adoption would launch the chain): the end of the pass launched it
    (g,) = pg.autograd.grad((1 - y).sum(), x)
    assert not chains.pending()     # (so the buffers it read are free once the pass returns)
    s = 1 / (1 + np.exp(-3 * x.detach().cpu().numpy().astype(np.float64)))
    np.testing.assert_allclose(g.cpu().numpy(), -3 * s * (1 - s), rtol=1e-5, atol=1e-6)


def test_results_nobody_holds_are_freed_after_the_launch(chains):
    x = pg.ones(1 << 16, device="cuda")
    pg.cuda.synchronize()
    before = pg.cuda.memory_allocated()
    for _ in range(3):
        y = x * 2 + 1
        del y
    pg.cuda.synchronize()
    assert pg.cuda.memory_allocated() == before


def test_generated_source_reads_each_input_once_and_stores_every_result(chains):
    ops = [("Mul", ("x", 0), ("one", 1)), ("Add", ("v", 0), ("s", 0)), ("Tanh", ("v", 1))]
    code = chains.source(np.dtype(np.float32), ops, ["x", "one"], 1)
    assert "typedef float T;" in code
    assert "const T x0 = in0[i];" in code and "const T x1 = in1[0];" in code
    assert "const T v1 = Add::f(v0, s0);" in code and "out2[i] = v2;" in code


def test_an_update_with_alpha_and_the_reshapes_between_ops_stay_in_one_chain(chains):
    p = pg.arange(12, dtype=pg.float32, device="cuda")
    g = pg.ones(12, device="cuda")
    p.add_(g * 3, alpha=-0.5)               # (a hand-written SGD step: a mul, an add into p)
    q = (p.view(3, 4) * 2).reshape(12) + p  # (views of pending results: no launch)
    assert _pending_ops(chains) == 5         # g * 3, * -0.5, p +=, * 2, + p
    ref = np.arange(12, dtype=np.float32) - 1.5
    np.testing.assert_array_equal(q.cpu().numpy(), ref * 2 + ref)
    np.testing.assert_array_equal(p.cpu().numpy(), ref)
