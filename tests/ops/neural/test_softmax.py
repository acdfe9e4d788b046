"""softmax / log_softmax against PyTorch over every dim, with gradients (random cotangent),
finite differences, large inputs, double backward, and the fast path against the composition
of primitives it replaces."""
import numpy as np
import pytest
import torch

import paragrad as pg
from paragrad.backends.base import fast_paths
from tests.helpers import assert_close, check_op, fd_check, make_input

SHAPE = (2, 3, 4)
DIMS = [0, 1, 2, -1, -2, -3]
OPS = ["softmax", "log_softmax"]


def call(op, dim, **kw):
    return lambda x: getattr(x, op)(dim, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("op", OPS)
def test_softmax(device, op, dim, dtype):
    check_op(call(op, dim), [SHAPE], dtype=dtype, device=device)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("op", OPS)
def test_softmax_fd(device, op, dim):
    fd_check(call(op, dim), [SHAPE], device=device)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name,fn,shapes", [
    ("functional", lambda op: lambda x: getattr(pg if isinstance(x, pg.Tensor) else torch, op)(x, 1),
     [(3, 5)]),
    ("keyword_dim", lambda op: lambda x: getattr(x, op)(dim=0), [(3, 5)]),
    ("1d", lambda op: call(op, 0), [(6,)]),
    ("0d", lambda op: call(op, 0), [()]),
    ("0d_neg", lambda op: call(op, -1), [()]),
    ("size1_dim", lambda op: call(op, 1), [(3, 1)]),
    ("empty_other", lambda op: call(op, -1), [(0, 3)]),
    ("empty_reduced", lambda op: call(op, 0), [(0, 3)]),
    ("large", lambda op: lambda x: getattr(x * 1000, op)(-1), [(3, 5)]),
    ("large_neg", lambda op: lambda x: getattr(x * 1000 - 1e4, op)(0), [(3, 5)]),
    ("noncontiguous", lambda op: lambda x: getattr(x.transpose(0, 1), op)(-1), [(4, 3)]),
    ("chained", lambda op: lambda x: getattr(getattr(x, op)(0), op)(1), [(3, 4)]),
])
def test_softmax_cases(device, op, name, fn, shapes):
    out = check_op(fn(op), shapes, device=device)
    assert np.isfinite(out.detach().cpu().numpy()).all()


@pytest.mark.parametrize("op", OPS)
def test_softmax_dtype_arg(device, op):
    check_op(lambda x: getattr(x, op)(-1, dtype=pg.float64 if isinstance(x, pg.Tensor) else torch.float64),
             [(3, 4)], device=device)
    # integer input with a floating dtype= is allowed (the cast happens first)
    check_op(lambda x: getattr(x, op)(0, dtype=pg.float32 if isinstance(x, pg.Tensor) else torch.float32),
             [(3, 4)], dtype="int64", low=-3, high=3, device=device, grad=False, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("op", OPS)
def test_softmax_float16(device, op):
    check_op(call(op, -1), [(3, 8)], dtype="float16", device=device, grad=False)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape,dim", [((8, 100), -1), ((3, 1000), 1), ((100, 8), 0), ((5, 40, 1), 1)])
@pytest.mark.parametrize("op", OPS)
def test_half_precision_rounds_as_torchs_cpu_kernels(op, shape, dim, dtype):
    """Bit for bit: torch's CPU log_softmax over the last dim rounds the row's exp-sum and its
    log to the input's dtype; its softmax over another dim rounds exp(x - max). (float16 keeps
    more of float32's last bits, where libm's exp and torch's vectorized one may differ: a rare
    element rounds the other way. Rounding only the result differs in about a quarter of them.)"""
    a = make_input(shape, "float32", -6, 6)
    t = getattr(torch.tensor(a).to(getattr(torch, dtype)), op)(dim).float().numpy()
    p = getattr(pg.tensor(a).to(getattr(pg, dtype)), op)(dim).float().numpy()
    if dtype == "bfloat16":
        np.testing.assert_array_equal(p, t)
    else:
        np.testing.assert_allclose(p, t, rtol=2 ** -10, atol=0)
        assert (p != t).mean() <= 0.01


def test_autocast_bfloat16_nll_of_log_softmax_matches_torch():
    """Under CPU autocast a Linear's bfloat16 logits reach log_softmax in bfloat16 (torch's CPU
    list leaves it out), and nll_loss reads its rounding: the loss matches torch's exactly."""
    x, w = make_input((4, 10)), make_input((10, 10), rng=np.random.default_rng(1))
    target = np.random.default_rng(3).integers(0, 10, 4)     # (rounding once gives 9.8662, not 9.8464)
    losses = []
    for lib in (torch, pg):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            logp = lib.nn.functional.log_softmax(lib.tensor(x) @ lib.tensor(w), -1)
            losses.append(lib.nn.functional.nll_loss(logp, lib.tensor(target)).item())
    assert losses[1] == losses[0]


@pytest.mark.parametrize("op", OPS)
def test_softmax_large_stays_finite(device, op):
    x = pg.tensor(make_input((4, 7)) * 1000, device=device, requires_grad=True)
    y = getattr(x, op)(-1)
    (y * pg.tensor(make_input((4, 7), rng=np.random.default_rng(1)), device=device)).sum().backward()
    assert np.isfinite(y.detach().cpu().numpy()).all() and np.isfinite(x.grad.cpu().numpy()).all()


@pytest.mark.parametrize("op", OPS)
def test_softmax_double_backward(device, op):
    a = make_input((3, 4), "float64")
    w = make_input((3, 4), "float64", rng=np.random.default_rng(5))
    grads = []
    for lib_, x in ((torch, torch.tensor(a, requires_grad=True)),
                    (pg, pg.tensor(a, device=device, requires_grad=True))):
        y = getattr(x, op)(-1)
        (g,) = lib_.autograd.grad((y * lib_.tensor(w, device=x.device)).sum(), x, create_graph=True)
        (g * g).sum().backward()
        grads.append((g, x.grad))
    assert_close(grads[1][0], grads[0][0], 1e-9, 1e-7, "first derivative")
    assert_close(grads[1][1], grads[0][1], 1e-9, 1e-7, "second derivative")


# ---- fast path vs composition ------------------------------------------------------------------
def _run(op, dim, a, w, device, fast):
    with fast_paths(fast):
        x = pg.tensor(a, device=device, requires_grad=True)
        y = getattr(x, op)(dim)
        (y * pg.tensor(w, device=device)).sum().backward()
    return y.detach(), x.grad


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("op", OPS)
def test_fast_path_matches_composite(device, op, dim, dtype):
    a = make_input(SHAPE, dtype, -5, 5)
    w = make_input(SHAPE, dtype, -1, 1, np.random.default_rng(3))
    y_fast, g_fast = _run(op, dim, a, w, device, True)
    y_comp, g_comp = _run(op, dim, a, w, device, False)
    atol, rtol = (1e-6, 1e-5) if dtype == "float32" else (1e-12, 1e-10)
    for fast, comp, what in ((y_fast, y_comp, "forward"), (g_fast, g_comp, "backward")):
        assert fast.dtype is comp.dtype and fast.shape == comp.shape, what
        np.testing.assert_allclose(fast.cpu().numpy(), comp.cpu().numpy(), atol=atol, rtol=rtol, err_msg=what)


@pytest.mark.parametrize("op", OPS)
def test_composite_matches_torch(device, op):
    with fast_paths(False):
        check_op(call(op, 1), [SHAPE], device=device)
        check_op(lambda x: getattr(x * 1000, op)(-1), [(3, 5)], device=device)
        fd_check(call(op, -1), [(2, 3)], device=device)


def test_fast_paths_context_restores():
    from paragrad.backends.base import _fast_paths_enabled
    with fast_paths(False):
        with fast_paths(True):
            assert _fast_paths_enabled[0]
        assert not _fast_paths_enabled[0]
    assert _fast_paths_enabled[0]


# ---- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("fn,exc,words", [
    (lambda x, op: getattr(x, op)(2), IndexError, ["range", "2"]),
    (lambda x, op: getattr(x, op)(-3), IndexError, ["range", "-3"]),
    (lambda x, op: getattr(x.long(), op)(0), RuntimeError, ["floating", "int64"]),
    (lambda x, op: getattr(pg, op)(x), TypeError, ["dim"]),
    (lambda x, op: getattr(pg, op)([1.0, 2.0], 0), TypeError, ["Tensor"]),
])
def test_softmax_errors(device, op, fn, exc, words):
    x = pg.zeros(3, 4, device=device, requires_grad=True)
    with pytest.raises(exc) as info:
        fn(x, op)
    msg = str(info.value)
    for w in words + ([op] if exc is not TypeError or "Tensor" in words else []):
        assert w in msg, f"{w!r} not in: {msg}"
    assert x.grad_fn is None


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape", [(200, 12), (8, 40, 5), (70, 64)], ids=["rows", "3d", "64-wide"])
def test_softmax_many_short_rows_match_torch(device, op, shape):
    """Many short rows (the CPU backend reduces them transposed and sums by a product with
    ones), with a NaN in one row and -inf in another, against torch: values and gradients."""
    x = make_input(shape, "float32", -4, 4, np.random.default_rng(5))
    flat = x.reshape(-1, shape[-1])
    flat[3, 2] = np.nan
    flat[7, :] = -np.inf
    flat[9, 1] = np.inf
    check_op(call(op, -1), None, inputs=[x], device=device)
