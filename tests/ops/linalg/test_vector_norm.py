"""Norms and distances at zero vectors and coincident points have torch's gradients (0, not
NaN, where the norm is 0; |x|^(p-1) masked at x == 0 for p < 1; p = inf ties shared by a norm,
given whole by cdist / pdist), through every op that computes a p-norm."""
import math

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op, check_raises, lib

INF = math.inf
PS = [1, 2, 3, 0.5, 1.5, -1, INF, -INF, 0]
INPUTS = {
    "zeros": np.zeros((3, 4)),
    "zero row": np.array([[0.0, 0, 0, 0], [1, -2, 0, 3], [0.5, 0, 0, 0]]),
    "ties": np.array([[1.0, 3, -3, 0], [1, 3, -3, 0], [0, 1, 0, 0]]),   # coincident rows
}


def _fn(name):
    return {
        "vector_norm": lambda p: lambda x: lib(x).linalg.vector_norm(x, p),
        "vector_norm dim": lambda p: lambda x: lib(x).linalg.vector_norm(x, p, dim=1),
        "linalg.norm dim": lambda p: lambda x: lib(x).linalg.norm(x, p, dim=(1,), keepdim=True),
        "Tensor.norm": lambda p: lambda x: x.norm(p),
        "Tensor.norm dim": lambda p: lambda x: x.norm(p, dim=1),
        "dist": lambda p: lambda x: lib(x).dist(x, x[:1].detach(), p),
        "cdist": lambda p: lambda x: lib(x).cdist(x, x, p),
        "pdist": lambda p: lambda x: lib(x).nn.functional.pdist(x, p),
        "normalize": lambda p: lambda x: lib(x).nn.functional.normalize(x, p),
    }[name]


@pytest.mark.parametrize("what", INPUTS)
@pytest.mark.parametrize("name", ["vector_norm", "vector_norm dim", "linalg.norm dim",
                                  "Tensor.norm", "Tensor.norm dim", "dist", "cdist", "pdist",
                                  "normalize"])
def test_norm_gradients_at_zero_and_ties_match_torch(name, what, device):
    for p in PS:
        if name in ("cdist", "pdist") and p < 0 or name == "normalize" and p == 0:
            continue    # torch refuses negative p for distances; normalize(p=0) divides by 0
        check_op(_fn(name)(p), [], dtype="float64", device=device, inputs=[INPUTS[what]])


def test_default_norms_of_a_zero_vector_have_zero_gradient(device):
    for fn in (lambda x: x.norm(), lambda x: lib(x).linalg.norm(x), lambda x: lib(x).linalg.matrix_norm(x),
               lambda x: lib(x).nn.functional.normalize(x, dim=0),
               lambda x: lib(x).nn.functional.pairwise_distance(x, x.detach())):
        check_op(fn, [], dtype="float32", device=device, inputs=[np.zeros((3, 2), np.float32)])
    x = pg.zeros(5, device=device, requires_grad=True)
    x.norm().backward()
    assert not np.isnan(x.grad.cpu().numpy()).any()


@pytest.mark.parametrize("p", [2, 3, 1.5, 0.5])
def test_norm_second_derivative_matches_torch(p, device):
    """The backward uses the norm as a function of x, so create_graph differentiates it."""
    a = INPUTS["zero row"][1:] + 0.25
    t = torch.tensor(a, requires_grad=True)
    q = pg.tensor(a, device=device, requires_grad=True)
    gt, = torch.autograd.grad(torch.linalg.vector_norm(t, p, 1).sum(), t, create_graph=True)
    gq, = pg.autograd.grad(pg.linalg.vector_norm(q, p, 1).sum(), q, create_graph=True)
    (gt * gt).sum().backward()
    (gq * gq).sum().backward()
    np.testing.assert_allclose(q.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_cdist_refuses_what_torch_refuses():
    check_raises(lambda L: L.cdist(L.ones(2, 2), L.ones(2, 2), -1.0), match="non-negative p")
    check_raises(lambda L: L.cdist(L.ones(2, 2, dtype=L.int64), L.ones(2, 2)), match="X1 got: Long")
