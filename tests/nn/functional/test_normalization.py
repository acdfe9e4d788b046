"""F's normalizations against PyTorch: normalize, rms_norm, group_norm, instance_norm (with
running statistics) and local_response_norm (and its module): values, gradients and errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
from tests.helpers import check_op, lib


F = pg.nn.functional


def lib_of(x):
    return TF if isinstance(x, torch.Tensor) else F


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (float("inf"), -1)])
def test_normalize_matches_torch(p, dim, device):
    check_op(lambda x: lib_of(x).normalize(x, p=p, dim=dim), [(3, 4)], device=device)


@pytest.mark.parametrize("shape,norm,eps", [((4, 6), (6,), None), ((2, 3, 4), (3, 4), 1e-5)])
def test_rms_norm_matches_torch(shape, norm, eps, device):
    check_op(lambda x, w: lib_of(x).rms_norm(x, norm, w, eps), [shape, norm], device=device)
    check_op(lambda x: lib_of(x).rms_norm(x, norm, eps=eps), [shape], device=device)


@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((2, 4, 3, 3), 2), ((3, 4), 2)])
def test_group_norm_matches_torch(shape, groups, device):
    c = shape[1]
    check_op(lambda x, w, b: lib_of(x).group_norm(x, groups, w, b), [shape, (c,), (c,)], device=device)


rng = np.random.default_rng(0)


def F_of(x):
    return lib(x).nn.functional


@pytest.mark.parametrize("shape,affine", [((2, 3, 5), True), ((2, 3, 4, 3), True), ((2, 3, 4, 3), False)])
def test_instance_norm_functional(device, shape, affine):
    c = shape[1]
    if affine:
        check_op(lambda x, w, b: F_of(x).instance_norm(x, weight=w, bias=b, eps=1e-3), [shape, (c,), (c,)], device=device)
    else:
        check_op(lambda x: F_of(x).instance_norm(x), [shape], device=device)


def test_instance_norm_running_stats_functional(device):
    x = rng.standard_normal((2, 3, 6)).astype(np.float32)
    rm, rv = rng.standard_normal(3).astype(np.float32), rng.random(3).astype(np.float32) + 0.5
    prm, prv = pg.tensor(rm, device=device), pg.tensor(rv, device=device)
    trm, trv = torch.tensor(rm), torch.tensor(rv)
    po = F_of(prm).instance_norm(pg.tensor(x, device=device), prm, prv, momentum=0.3)
    to = torch.nn.functional.instance_norm(torch.tensor(x), trm, trv, momentum=0.3)
    for a, b in ((po, to), (prm, trm), (prv, trv)):
        np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    check_op(lambda x, m, v: F_of(x).instance_norm(x, m.detach(), v.detach().abs() + 0.5, use_input_stats=False),
             [(2, 3, 4), (3,), (3,)], device=device)


@pytest.mark.parametrize("shape,size", [((2, 5, 4), 3), ((2, 6, 3, 3), 2), ((1, 4, 2, 2, 2), 5), ((2, 3, 4), 1)])
def test_local_response_norm(device, shape, size):
    check_op(lambda x: F_of(x).local_response_norm(x, size, alpha=0.1, beta=0.6, k=1.5), [shape], device=device)
    m, t = pg.nn.LocalResponseNorm(size, alpha=0.1), torch.nn.LocalResponseNorm(size, alpha=0.1)
    assert repr(m) == repr(t)
    check_op(lambda x: (m if isinstance(x, pg.Tensor) else t)(x), [shape], device=device)


def test_local_response_norm_error():
    with pytest.raises(ValueError, match="Expected 3D or higher"):
        pg.nn.functional.local_response_norm(pg.randn(2, 3), 2)
    with pytest.raises(ValueError, match="Expected 3D or higher"):
        torch.nn.functional.local_response_norm(torch.randn(2, 3), 2)
