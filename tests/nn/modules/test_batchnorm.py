"""BatchNorm1d/2d/3d against torch.nn: several train steps then eval (outputs, parameter
gradients, running statistics, num_batches_tracked) for momentum 0.1 and None, affine on/off
and track_running_stats off; state_dict keys and loading a torch state_dict; repr; the
input-dimension checks."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import TORCH_2_13, assert_close, comparable_repr, make_input, needs_torch_2_13


MODULES = [("BatchNorm1d", (8, 4)), ("BatchNorm1d", (5, 4, 3)), ("BatchNorm2d", (3, 4, 2, 5)),
           ("BatchNorm3d", (2, 4, 3, 2, 2))]


def pair(name, device, dtype="float64", **kw):
    p = getattr(pg.nn, name)(4, device=device, dtype=getattr(pg, dtype), **kw)
    t = getattr(torch.nn, name)(4, dtype=getattr(torch, dtype), **kw)
    return p, t


def to_pg(t, device):
    return pg.tensor(t.detach().cpu().numpy(), device=device)


# every configuration in float64; float32 only for the default and momentum=None ones
CONFIGS = [("float64", kw, i) for kw, i in zip(
    [{}, {"momentum": None}, {"affine": False}, {"track_running_stats": False}, {"bias": False},
     {"momentum": None, "track_running_stats": False}],
    ["default", "cma", "no_affine", "no_stats", "no_bias", "cma_no_stats"])] + [
    ("float32", {}, "default"), ("float32", {"momentum": None}, "cma")]


@pytest.mark.parametrize("dtype,kw", [pytest.param(*c[:2], marks=[needs_torch_2_13] if "bias" in c[1] else [])
                                      for c in CONFIGS], ids=[f"{c[0]}-{c[2]}" for c in CONFIGS])
@pytest.mark.parametrize("name,shape", MODULES)
def test_batchnorm_module_steps(device, dtype, name, shape, kw):
    p, t = pair(name, device, dtype, **kw)
    tol = (1e-9, 1e-7) if dtype == "float64" else (1e-5, 1e-4)
    rng = np.random.default_rng(3)
    if p.weight is not None:   # non-trivial affine parameters
        w = make_input((4,), dtype, 0.5, 2, rng)
        with torch.no_grad():
            t.weight.copy_(torch.tensor(w))
        p.weight.data = pg.tensor(w, device=device)
    for step in range(5):
        training = step < 3 or step == 4
        p.train(training)
        t.train(training)
        a = make_input(shape, dtype, -2 + step, 1 + 2 * step, rng)
        xp = pg.tensor(a, device=device, requires_grad=True)
        xt = torch.tensor(a, requires_grad=True)
        yp, yt = p(xp), t(xt)
        assert_close(yp, yt, *tol, f"output at step {step}")
        v = make_input(shape, dtype, -1, 1, rng)
        (yp * pg.tensor(v, device=device)).sum().backward()
        (yt * torch.tensor(v)).sum().backward()
        assert_close(xp.grad, xt.grad, tol[0] * 10, tol[1] * 10, f"input grad at step {step}")
        for (n, pp), tp in zip(p.named_parameters(), t.parameters()):
            assert_close(pp.grad, tp.grad, tol[0] * 10, tol[1] * 10, f"{n}.grad at step {step}")
        ps, ts = p.state_dict(), t.state_dict()
        assert list(ps) == list(ts)
        for k in ts:
            assert_close(ps[k], ts[k], *tol, f"{k} after step {step}")


def test_batchnorm_state_dict_from_torch(device):
    t = torch.nn.BatchNorm2d(4)
    t.train()
    for i in range(3):
        t(torch.randn(2, 4, 3, 3) * (i + 1) + i)
    with torch.no_grad():
        t.weight.uniform_(0.5, 2)
        t.bias.uniform_(-1, 1)
    p = pg.nn.BatchNorm2d(4, device=device)
    p.load_state_dict({k: to_pg(v, device) for k, v in t.state_dict().items()})
    assert p.num_batches_tracked.item() == 3 and p.num_batches_tracked.dtype is pg.int64
    p.eval()
    t.eval()
    a = make_input((2, 4, 3, 3), "float32")
    assert_close(p(pg.tensor(a, device=device)), t(torch.tensor(a)), 1e-5, 1e-4, "eval output")


def test_batchnorm_repr_and_state_keys(device):
    configs = [{}, {"momentum": None, "affine": False, "track_running_stats": False}]
    configs += [{"eps": 1e-3, "bias": False}] if TORCH_2_13 else []
    for kw in configs:
        for name in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d"):
            p, t = pair(name, device, "float32", **kw)
            assert comparable_repr(p) == repr(t)
            assert list(p.state_dict()) == list(t.state_dict())
            assert [n for n, _ in p.named_buffers()] == [n for n, _ in t.named_buffers()]
    seq = pg.nn.Sequential(pg.nn.Linear(3, 4), pg.nn.BatchNorm1d(4))
    tseq = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    assert comparable_repr(seq) == repr(tseq)


def test_batchnorm_reset_and_to(device):
    p = pg.nn.BatchNorm1d(4, device=device)
    p(pg.randn(5, 4, device=device) * 3 + 1)
    assert p.num_batches_tracked.item() == 1
    p.reset_running_stats()
    assert not p.running_mean.cpu().numpy().any() and (p.running_var.cpu().numpy() == 1).all()
    assert p.num_batches_tracked.item() == 0
    p.double()
    assert p.running_mean.dtype is pg.float64 and p.num_batches_tracked.dtype is pg.int64


def test_batchnorm_eval_no_stats_uses_batch(device):
    p, t = pair("BatchNorm1d", device, track_running_stats=False)
    p.eval()
    t.eval()
    a = make_input((6, 4), "float64")
    assert_close(p(pg.tensor(a, device=device)), t(torch.tensor(a)), 1e-9, 1e-7, "eval output")


def test_batchnorm_input_dims(device):
    with pytest.raises(ValueError, match=r"BatchNorm3d: expected 5D input \(got 4D input of size \[2, 4, 3, 3\]\)"):
        pg.nn.BatchNorm3d(4, device=device)(pg.randn(2, 4, 3, 3, device=device))
    with pytest.raises(ValueError, match=r"BatchNorm2d: expected 4D input \(got 3D input of size \[2, 4, 3\]\)"):
        pg.nn.BatchNorm2d(4, device=device)(pg.randn(2, 4, 3, device=device))
    for shape in ((4,), (2, 4, 3, 3)):
        with pytest.raises(ValueError, match=rf"BatchNorm1d: expected 2D or 3D input \(got {len(shape)}D"):
            pg.nn.BatchNorm1d(4, device=device)(pg.randn(*shape, device=device))
    m = pg.nn.BatchNorm1d(4, device=device)
    with pytest.raises(RuntimeError, match="batch_norm: running_mean should contain 3 elements not 4"):
        m(pg.randn(2, 3, device=device))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        m(pg.randn(1, 4, device=device))
    assert m.num_batches_tracked.item() == 0   # the failed calls counted nothing
