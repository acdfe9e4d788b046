"""instance_norm / InstanceNorm1d/2d, local_response_norm / LocalResponseNorm, bilinear /
Bilinear, Softmax2d, UpsamplingNearest2d / UpsamplingBilinear2d, gumbel_softmax and pdist,
against PyTorch (values and gradients)."""
import warnings

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op, comparable_repr, lib

rng = np.random.default_rng(0)


def F(x):
    return lib(x).nn.functional


@pytest.mark.parametrize("shape,affine", [((2, 3, 5), True), ((2, 3, 4, 3), True), ((2, 3, 4, 3), False)])
def test_instance_norm_functional(device, shape, affine):
    c = shape[1]
    if affine:
        check_op(lambda x, w, b: F(x).instance_norm(x, weight=w, bias=b, eps=1e-3), [shape, (c,), (c,)], device=device)
    else:
        check_op(lambda x: F(x).instance_norm(x), [shape], device=device)


def test_instance_norm_running_stats_functional(device):
    x = rng.standard_normal((2, 3, 6)).astype(np.float32)
    rm, rv = rng.standard_normal(3).astype(np.float32), rng.random(3).astype(np.float32) + 0.5
    prm, prv = pg.tensor(rm, device=device), pg.tensor(rv, device=device)
    trm, trv = torch.tensor(rm), torch.tensor(rv)
    po = F(prm).instance_norm(pg.tensor(x, device=device), prm, prv, momentum=0.3)
    to = torch.nn.functional.instance_norm(torch.tensor(x), trm, trv, momentum=0.3)
    for a, b in ((po, to), (prm, trm), (prv, trv)):
        np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    check_op(lambda x, m, v: F(x).instance_norm(x, m.detach(), v.detach().abs() + 0.5, use_input_stats=False),
             [(2, 3, 4), (3,), (3,)], device=device)


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm2d", (2, 3, 4, 4)),
                                       ("InstanceNorm1d", (3, 5)), ("InstanceNorm2d", (3, 4, 4))])
def test_instance_norm_modules_match_torch(device, cls, shape):
    kw = dict(affine=True, track_running_stats=True, momentum=0.2)
    t = getattr(torch.nn, cls)(3, **kw)
    p = getattr(pg.nn, cls)(3, device=device, **kw)
    assert list(p.state_dict()) == list(t.state_dict())
    assert comparable_repr(p) == repr(t)
    with torch.no_grad():
        t.weight.uniform_(0.5, 1.5)
        t.bias.uniform_(-1, 1)
    p.load_state_dict({k: pg.tensor(v.numpy(), device=device) for k, v in t.state_dict().items()})
    for train in (True, True, False):
        p.train(train), t.train(train)
        x = rng.standard_normal(shape).astype(np.float32) * 2 + 1
        xp, xt = pg.tensor(x, device=device, requires_grad=True), torch.tensor(x, requires_grad=True)
        po, to = p(xp), t(xt)
        np.testing.assert_allclose(po.detach().cpu().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
        for k in ("running_mean", "running_var"):
            np.testing.assert_allclose(getattr(p, k).cpu().numpy(), getattr(t, k).numpy(), rtol=1e-5, atol=1e-6)
    (po * po).sum().backward()
    (to * to).sum().backward()
    np.testing.assert_allclose(xp.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(p.weight.grad.cpu().numpy(), t.weight.grad.numpy(), rtol=1e-3, atol=1e-4)


def test_instance_norm_defaults_and_errors():
    for m, t in ((pg.nn.InstanceNorm1d(4), torch.nn.InstanceNorm1d(4)),
                 (pg.nn.InstanceNorm2d(4, affine=True), torch.nn.InstanceNorm2d(4, affine=True))):
        assert comparable_repr(m) == repr(t) and list(m.state_dict()) == list(t.state_dict())
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        pg.nn.InstanceNorm1d(3)(pg.randn(2, 3, 4, 4))
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        pg.nn.InstanceNorm2d(3)(pg.randn(2, 3, 4, 4, 4))
    with pytest.raises(ValueError, match="to match num_features"):
        pg.nn.InstanceNorm1d(3, affine=True)(pg.randn(2, 4, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        pg.nn.InstanceNorm1d(3)(pg.randn(2, 4, 5))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        pg.nn.functional.instance_norm(pg.randn(2, 3, 1))
    with pytest.raises(ValueError):
        torch.nn.functional.instance_norm(torch.randn(2, 3, 1))


@pytest.mark.parametrize("shape,size", [((2, 5, 4), 3), ((2, 6, 3, 3), 2), ((1, 4, 2, 2, 2), 5), ((2, 3, 4), 1)])
def test_local_response_norm(device, shape, size):
    check_op(lambda x: F(x).local_response_norm(x, size, alpha=0.1, beta=0.6, k=1.5), [shape], device=device)
    m, t = pg.nn.LocalResponseNorm(size, alpha=0.1), torch.nn.LocalResponseNorm(size, alpha=0.1)
    assert repr(m) == repr(t)
    check_op(lambda x: (m if isinstance(x, pg.Tensor) else t)(x), [shape], device=device)


def test_local_response_norm_error():
    with pytest.raises(ValueError, match="Expected 3D or higher"):
        pg.nn.functional.local_response_norm(pg.randn(2, 3), 2)
    with pytest.raises(ValueError, match="Expected 3D or higher"):
        torch.nn.functional.local_response_norm(torch.randn(2, 3), 2)


@pytest.mark.parametrize("lead,bias", [((4,), True), ((2, 3), False), ((), True)])
def test_bilinear_functional(device, lead, bias):
    shapes = [lead + (3,), lead + (5,), (2, 3, 5)] + ([(2,)] if bias else [])
    check_op(lambda a, b, w, *bb: F(a).bilinear(a, b, w, *bb), shapes, device=device)


def test_bilinear_module(device):
    torch.manual_seed(0)
    t = torch.nn.Bilinear(3, 4, 2)
    p = pg.nn.Bilinear(3, 4, 2, device=device)
    assert repr(p) == repr(t) and list(p.state_dict()) == list(t.state_dict())
    bound = 1 / np.sqrt(3)
    assert np.abs(p.weight.detach().cpu().numpy()).max() <= bound and np.abs(p.bias.detach().cpu().numpy()).max() <= bound
    assert pg.nn.Bilinear(3, 4, 2, bias=False).bias is None
    p.load_state_dict({k: pg.tensor(v.detach().numpy(), device=device) for k, v in t.state_dict().items()})
    check_op(lambda a, b: (p if isinstance(a, pg.Tensor) else t)(a, b), [(5, 3), (5, 4)], device=device)
    with pytest.raises(RuntimeError, match="bilinear"):
        p(pg.randn(5, 2, device=device), pg.randn(5, 4, device=device))


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 4, 5)])
def test_softmax2d(device, shape):
    check_op(lambda x: (pg.nn.Softmax2d() if isinstance(x, pg.Tensor) else torch.nn.Softmax2d())(x), [shape], device=device)


def test_softmax2d_error():
    with pytest.raises(ValueError, match="3D or 4D"):
        pg.nn.Softmax2d()(pg.randn(2, 3))
    with pytest.raises(ValueError):
        torch.nn.Softmax2d()(torch.randn(2, 3))


@pytest.mark.parametrize("cls,kw", [("UpsamplingNearest2d", dict(scale_factor=2)),
                                    ("UpsamplingBilinear2d", dict(size=(5, 7))),
                                    ("UpsamplingBilinear2d", dict(scale_factor=2))])
def test_upsampling_modules(device, cls, kw):
    p, t = getattr(pg.nn, cls)(**kw), getattr(torch.nn, cls)(**kw)
    assert repr(p) == repr(t)
    check_op(lambda x: (p if isinstance(x, pg.Tensor) else t)(x), [(1, 2, 3, 4)], device=device)


@pytest.mark.parametrize("dim", [-1, 1])
def test_gumbel_softmax(device, dim):
    logits = pg.tensor(rng.standard_normal((4, 5, 3)).astype(np.float32), device=device, requires_grad=True)
    w = pg.tensor(rng.standard_normal((4, 5, 3)).astype(np.float32), device=device)
    pg.manual_seed(1)
    soft = F(logits).gumbel_softmax(logits, tau=0.5, dim=dim)
    assert tuple(soft.shape) == (4, 5, 3)
    s = soft.detach().cpu().numpy()
    np.testing.assert_allclose(s.sum(dim), 1.0, rtol=1e-5)
    assert (s >= 0).all()
    (soft * w).sum().backward()
    g_soft = logits.grad.cpu().numpy().copy()
    logits.grad = None
    pg.manual_seed(1)      # the same noise: the hard sample is the one-hot of the soft one's argmax
    hard = F(logits).gumbel_softmax(logits, tau=0.5, hard=True, dim=dim)
    h = hard.detach().cpu().numpy()
    np.testing.assert_array_equal(h, (s == s.max(dim, keepdims=True)).astype(np.float32))
    np.testing.assert_allclose(h.sum(dim), 1.0)
    (hard * w).sum().backward()          # straight-through: the soft sample's gradient
    np.testing.assert_allclose(logits.grad.cpu().numpy(), g_soft, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("p", [1, 2, 3.5, float("inf")])
def test_pdist(device, p):
    check_op(lambda x: F(x).pdist(x, p), [(5, 3)], device=device)


def test_pdist_edge_cases_and_errors():
    x = pg.randn(4, 3)
    np.testing.assert_allclose(pg.nn.functional.pdist(x, 0).numpy(),
                               torch.nn.functional.pdist(torch.tensor(x.numpy()), 0).numpy())
    assert tuple(pg.nn.functional.pdist(pg.randn(1, 3)).shape) == (0,)
    with pytest.raises(RuntimeError, match="2D"):
        pg.nn.functional.pdist(pg.randn(2, 3, 4))
    with pytest.raises(RuntimeError, match="non-negative"):
        pg.nn.functional.pdist(x, -1)
