"""batch_norm against PyTorch: forward and the gradients of input, weight and bias in training
and eval mode over (N, C), (N, C, L) and (N, C, H, W), through the backend's fast path and the
composition; running-statistic updates over several
steps; float64 finite differences; double backward; float16; and the errors."""
import numpy as np
import pytest
import torch

import paragrad as pg
from paragrad.backends.base import fast_paths
from tests.helpers import assert_close, check_op, fd_check, make_input

SHAPES = [(6, 3), (4, 3, 5), (2, 3, 4, 5)]
RM = np.array([0.5, -1.0, 0.25])
RV = np.array([2.0, 0.5, 1.5])


def bn(training, affine="both", eps=1e-5, stats=True, momentum=0.1):
    """A function of (x[, w][, b]) calling batch_norm in whichever library x belongs to, with
    fresh running statistics (RM, RV) of x's dtype."""
    def f(x, *params):
        lib = torch if isinstance(x, torch.Tensor) else pg
        w = params[0] if affine in ("both", "weight") else None
        b = params[-1] if affine in ("both", "bias") else None
        rm = lib.tensor(RM, dtype=x.dtype, device=x.device) if stats else None
        rv = lib.tensor(RV, dtype=x.dtype, device=x.device) if stats else None
        return lib.nn.functional.batch_norm(x, rm, rv, w, b, training, momentum, eps)
    return f


def shapes_for(shape, affine):
    return [shape] + [(3,)] * {"both": 2, "weight": 1, "bias": 1, "none": 0}[affine]


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "composite"])
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm(device, dtype, training, shape, affine, fast):
    with fast_paths(fast):
        check_op(bn(training, affine), shapes_for(shape, affine), dtype=dtype, device=device)


@pytest.mark.parametrize("eps", [1e-3, 1.0])
def test_batch_norm_eps_and_no_stats(device, eps):
    check_op(bn(True, "both", eps, stats=False), shapes_for((4, 3, 5), "both"), device=device)


def test_batch_norm_noncontiguous_and_offset(device):
    check_op(lambda x, w, b: bn(True)((x * 10 + 100).permute(0, 2, 1), w, b),
             [(4, 5, 3), (3,), (3,)], device=device)


@pytest.mark.parametrize("momentum", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("shape", SHAPES)
def test_batch_norm_running_stats(device, shape, momentum):
    rng = np.random.default_rng(1)
    prm, prv = pg.tensor(RM, device=device), pg.tensor(RV, device=device)
    trm, trv = torch.tensor(RM), torch.tensor(RV)
    for step in range(4):
        a = make_input(shape, "float64", -3 + step, 2 + 2 * step, rng)
        yp = pg.nn.functional.batch_norm(pg.tensor(a, device=device), prm, prv, training=True,
                                         momentum=momentum)
        yt = torch.nn.functional.batch_norm(torch.tensor(a), trm, trv, training=True,
                                            momentum=momentum)
        assert_close(yp, yt, 1e-9, 1e-7, f"output at step {step}")
        assert_close(prm, trm, 1e-12, 1e-10, f"running_mean after step {step}")
        assert_close(prv, trv, 1e-12, 1e-10, f"running_var after step {step}")


def test_batch_norm_running_stats_float32_input(device):
    prm, prv = pg.tensor(RM, dtype=pg.float32, device=device), pg.tensor(RV, dtype=pg.float32, device=device)
    trm, trv = torch.tensor(RM, dtype=torch.float32), torch.tensor(RV, dtype=torch.float32)
    a = make_input((8, 3, 4), "float32")
    pg.nn.functional.batch_norm(pg.tensor(a, device=device), prm, prv, training=True)
    torch.nn.functional.batch_norm(torch.tensor(a), trm, trv, training=True)
    assert_close(prm, trm, 1e-6, 1e-5, "running_mean")
    assert_close(prv, trv, 1e-6, 1e-5, "running_var")


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 3, 2, 2)])
def test_batch_norm_finite_differences(device, training, shape):
    fd_check(bn(training), shapes_for(shape, "both"), device=device)
    fd_check(bn(training, "none"), [shape], device=device)


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_batch_norm_double_backward(device, training):
    shape = (4, 3, 5)
    arrays = [make_input(s, "float64", rng=np.random.default_rng(i))
              for i, s in enumerate(shapes_for(shape, "both"))]
    v = make_input(shape, "float64", -1, 1, np.random.default_rng(7))
    results = []
    for lib in (pg, torch):
        kw = {"device": device} if lib is pg else {}
        xs = [lib.tensor(a, requires_grad=True, **kw) for a in arrays]
        y = bn(training)(*xs)
        gs = lib.autograd.grad((y * lib.tensor(v, **kw)).sum(), xs, create_graph=True)
        # a loss of every first derivative, so each second-derivative path is exercised
        loss = sum(((g * g).sum() + g.sum() * 0.5) for g in gs) + (gs[0] * xs[0]).sum()
        loss.backward()
        results.append((gs, [x.grad for x in xs]))
    for i, (p, t) in enumerate(zip(results[0][0], results[1][0])):
        assert_close(p.detach(), t.detach(), 1e-9, 1e-7, f"first derivative {i}")
    for i, (p, t) in enumerate(zip(results[0][1], results[1][1])):
        assert_close(p, t, 1e-8, 1e-6, f"second derivative {i}")


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_batch_norm_float16(device, training):
    check_op(bn(training, "none"), [(8, 3, 4)], dtype="float16", device=device)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_batch_norm_mixed_type_as_torch(device, dtype, training):
    """A float16/bfloat16 input with float32 weight, bias and running statistics (what a convnet
    under autocast passes): the output in the input's dtype, the parameters' gradients in
    float32, the running statistics updated in float32, all as torch."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 3, 4, 5)).astype(np.float32)
    w, b = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    results = []
    for lib, dev in ((pg, device), (torch, "cpu")):
        low = getattr(lib, dtype)
        xs = lib.tensor(x, device=dev).to(low).requires_grad_()
        ws = lib.tensor(w, device=dev).requires_grad_()
        bs = lib.tensor(b, device=dev).requires_grad_()
        rm, rv = lib.zeros(3, device=dev) + 0.5, lib.ones(3, device=dev) * 2
        y = lib.nn.functional.batch_norm(xs, rm, rv, ws, bs, training=training)
        y.backward(lib.tensor(g, device=dev).to(low))
        results.append([t.detach().cpu() for t in (y, xs.grad, ws.grad, bs.grad, rm, rv)])
    names = ("output", "input grad", "weight grad", "bias grad", "running_mean", "running_var")
    for name, p, t in zip(names, *results):
        assert str(p.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], name
        np.testing.assert_allclose(p.float().numpy(), t.float().numpy(), rtol=2e-2, atol=2e-2, err_msg=name)


def test_batch_norm_errors(device):
    F = pg.nn.functional
    x = pg.randn(4, 3, device=device)
    rm, rv = pg.zeros(3, device=device), pg.ones(3, device=device)
    with pytest.raises(RuntimeError, match=r"batch_norm: running_mean should contain 3 elements not 4"):
        F.batch_norm(x, pg.zeros(4, device=device), pg.ones(4, device=device), training=True)
    with pytest.raises(RuntimeError, match=r"batch_norm: weight should contain 3 elements not 2 .*\[4, 3\]"):
        F.batch_norm(x, rm, rv, pg.ones(2, device=device), training=True)
    with pytest.raises(RuntimeError, match="batch_norm: running_mean must be defined in evaluation mode"):
        F.batch_norm(x, None, None, training=False)
    with pytest.raises(ValueError, match=r"batch_norm: Expected more than 1 value per channel when training, got input size \[1, 3\]"):
        F.batch_norm(pg.randn(1, 3, device=device), rm, rv, training=True)
    with pytest.raises(ValueError, match=r"batch_norm: .*at least 2 dims.*\[3\]"):
        F.batch_norm(pg.randn(3, device=device), rm, rv, training=True)
    with pytest.raises(RuntimeError, match="batch_norm: expected a floating-point input"):
        F.batch_norm(pg.ones(4, 3, dtype=pg.int64, device=device), rm, rv)
    with pytest.raises(RuntimeError, match="batch_norm: expected weight to have the input's dtype"):
        F.batch_norm(x, rm, rv, pg.ones(3, dtype=pg.float64, device=device))
    half = x.to(pg.bfloat16)
    with pytest.raises(RuntimeError, match="batch_norm: expected bias to have the input's dtype "
                                           r"paragrad.bfloat16 \(or float32"):
        F.batch_norm(half, rm, rv, None, pg.ones(3, dtype=pg.float64, device=device))
    with pytest.raises(RuntimeError, match="batch_norm: expected weight and bias to have one dtype"):
        F.batch_norm(half, rm, rv, pg.ones(3, device=device), pg.ones(3, dtype=pg.bfloat16, device=device))
    with pytest.raises(TypeError, match="batch_norm.*'input' must be Tensor"):
        F.batch_norm(np.ones((4, 3)), rm, rv)
    with pytest.raises(ValueError, match="batch_norm eps must be positive during training, but got 0.0"):
        F.batch_norm(x, rm, rv, training=True, eps=0.0)
    # a call that raises leaves the running statistics untouched
    assert not rm.cpu().numpy().any() and (rv.cpu().numpy() == 1).all()


def bn_relu(training, residual):
    """relu(batch_norm(x) + r) in either library: paragrad's one op, torch's three."""
    def f(x, w, b, *r):
        lib = torch if isinstance(x, torch.Tensor) else pg
        rm, rv = (lib.tensor(a, dtype=x.dtype, device=x.device) for a in (RM, RV))
        if lib is pg:
            return pg.nn.functional.batch_norm_relu(x, rm, rv, w, b, training, 0.1, 1e-5,
                                                    residual=r[0] if residual else None)
        y = torch.nn.functional.batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5)
        return torch.relu(y + r[0] if residual else y)
    return f


@pytest.mark.parametrize("residual", [False, True], ids=["plain", "residual"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_relu(device, dtype, training, residual):
    """A ResNet block's batch norm, skip add and ReLU as one op: values and every gradient
    (input, weight, bias, residual) as torch's three ops."""
    shapes = [(2, 3, 4, 5), (3,), (3,)] + ([(2, 3, 4, 5)] if residual else [])
    check_op(bn_relu(training, residual), shapes, dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "nhwc"])
def test_batch_norm_relu_fused_equals_the_three_ops(device, dtype, channels_last):
    """The fused op (on CUDA one kernel, the residual and the output in the input's layout)
    against paragrad's own batch_norm, add and relu: the same bits out, the same gradients and
    running statistics."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((4, 8, 6, 6), (8,), (8,), (4, 8, 6, 6), (4, 8, 6, 6))]
    results = []
    for fused in (True, False):
        low = getattr(pg, dtype)
        x, w, b, r, g = (pg.tensor(a, device=device) for a in arrays)
        x, r, g = x.to(low), r.to(low), g.to(low)
        if channels_last:
            x, r = x.to(memory_format=pg.channels_last), r.to(memory_format=pg.channels_last)
        for t in (x, w, b, r):
            t.requires_grad_()
        rm, rv = pg.zeros(8, device=device), pg.ones(8, device=device)
        y = pg.nn.functional.batch_norm_relu(x, rm, rv, w, b, True, residual=r) if fused else \
            pg.nn.functional.batch_norm(x, rm, rv, w, b, True).add(r).relu()
        y.backward(g)
        assert (y.detach().float() >= 0).all().item()
        results.append([t.detach().float().cpu().numpy() for t in (y, x.grad, w.grad, b.grad, r.grad, rm, rv)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_batch_norm_relu_checks_its_residual(device):
    F = pg.nn.functional
    x, rm, rv = pg.randn(4, 3, 2, 2, device=device), pg.zeros(3, device=device), pg.ones(3, device=device)
    with pytest.raises(RuntimeError, match=r"batch_norm_relu: residual of shape \[4, 3, 2, 1\]"):
        F.batch_norm_relu(x, rm, rv, training=True, residual=pg.randn(4, 3, 2, 1, device=device))
    assert rm.tolist() == [0.0] * 3     # nothing updated by the refused call


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("c", [16, 24, 40])
def test_batch_norm_channels_last_matches_torch(device, dtype, c, training):
    """Channels-last inputs whose C takes 16 bytes of channels a thread on CUDA (statistics,
    gradient sums, normalization and dx): values and gradients as torch's."""
    def fn(x, w, b):
        lib = torch if isinstance(x, torch.Tensor) else pg
        rm = lib.zeros(c, dtype=x.dtype, device=x.device) + 0.25
        rv = lib.ones(c, dtype=x.dtype, device=x.device) * 1.5
        y = lib.nn.functional.batch_norm(x.contiguous(memory_format=lib.channels_last), rm, rv, w, b, training)
        return y, rm, rv
    check_op(fn, [(4, c, 5, 3), (c,), (c,)], dtype=dtype, device=device)
