"""Identity, Linear, Bilinear and an MLP against torch.nn: the torch module's weights are copied
into the paragrad module, then forward values, input gradients and parameter gradients are
compared (a random cotangent, as check_op; check_module, which other module tests use)."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn as nn
from tests.helpers import TOL, assert_close, check_op, lib, make_input


def check_module(build, shape, device, dtype="float32", low=-2.0, high=2.0, preprocess=None, seed=0):
    """Build the module in both libraries (torch's weights copied over), run it on the same
    input, compare outputs, then backpropagate one random cotangent and compare the gradients of
    the input and of every parameter."""
    tm = build(torch.nn).to(getattr(torch, dtype))
    pm = build(nn).to(device).to(getattr(pg, dtype))
    pm.load_state_dict(OrderedDict((k, pg.tensor(v.detach().numpy(), device=device))
                                   for k, v in tm.state_dict().items()))
    assert [n for n, _ in pm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    x = make_input(shape, dtype, low, high, np.random.default_rng(seed))
    xt = torch.tensor(x, requires_grad=True)
    xp = pg.tensor(x, device=device, requires_grad=True)
    pre = preprocess or (lambda v: v)
    yt, yp = tm(pre(xt)), pm(pre(xp))
    atol, rtol = TOL[dtype]
    assert_close(yp, yt, atol, rtol, "output")
    w = make_input(tuple(yt.shape), dtype, -1, 1, np.random.default_rng(100))
    (yt * torch.tensor(w)).sum().backward()
    (yp * pg.tensor(w, device=device)).sum().backward()
    assert_close(xp.grad, xt.grad, atol * 10, rtol * 10, "input gradient")
    for (n, pp), (_, tp) in zip(pm.named_parameters(), tm.named_parameters()):
        assert_close(pp.grad, tp.grad, atol * 10, rtol * 10, f"gradient of {n}")
    return pm, yp


LINEAR_CASES = [
    (lambda lib: lib.Linear(3, 4), (3,)),
    (lambda lib: lib.Linear(3, 4), (5, 3)),
    (lambda lib: lib.Linear(3, 4), (2, 6, 3)),
    (lambda lib: lib.Linear(3, 4, bias=False), (3,)),
    (lambda lib: lib.Linear(3, 4, bias=False), (5, 3)),
    (lambda lib: lib.Linear(3, 4, bias=False), (2, 6, 3)),
    (lambda lib: lib.Linear(1, 1), (7, 1)),
    (lambda lib: lib.Linear(16, 2), (2, 2, 3, 16)),
]


@pytest.mark.parametrize("build,shape", LINEAR_CASES, ids=[f"{i}-{s}" for i, (_, s) in enumerate(LINEAR_CASES)])
def test_linear(build, shape, device):
    check_module(build, shape, device)


def test_linear_float64(device):
    check_module(lambda lib: lib.Linear(5, 3), (4, 5), device, dtype="float64")


def test_linear_shape_error(device):
    m = nn.Linear(3, 4).to(device)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        m(pg.ones(2, 5, device=device))


def test_linear_attributes(device):
    m = nn.Linear(3, 4, bias=False, device=device, dtype=pg.float64)
    assert m.bias is None and m.weight.dtype is pg.float64 and m.weight.device == pg.device(device)
    assert (m.in_features, m.out_features) == (3, 4) and tuple(m.weight.shape) == (4, 3)


def test_mlp_forward_backward(device):
    def build(lib):
        return lib.Sequential(lib.Linear(6, 16), lib.GELU(), lib.Linear(16, 16), lib.SiLU(),
                              lib.Dropout(0.5), lib.Linear(16, 3), lib.LogSoftmax(dim=-1)).eval()
    check_module(build, (8, 6), device)


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
