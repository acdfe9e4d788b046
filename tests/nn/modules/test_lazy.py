"""LazyLinear / LazyConv1d / LazyConv2d against torch's: reprs before and after the first
forward, the inferred sizes and class, parameters materialized in place (an optimizer built
before the first forward trains them), initialization within torch's bounds, state_dict
loading at the loaded shapes, unbatched conv input, groups."""
import copy
import math

import numpy as np
import pytest
import torch

import paragrad as pg


@pytest.mark.parametrize("make,x_shape", [
    (lambda L: L.nn.LazyLinear(4), (2, 3)), (lambda L: L.nn.LazyLinear(4, bias=False), (5, 2, 6)),
    (lambda L: L.nn.LazyConv2d(5, 3, padding=1), (2, 4, 6, 6)), (lambda L: L.nn.LazyConv2d(6, 3, groups=2), (4, 6, 6)),
    (lambda L: L.nn.LazyConv1d(2, 3, stride=2, bias=False), (3, 4, 9)),
])
def test_lazy_modules_match_torch(make, x_shape, device):
    t, p = make(torch), make(pg).to(device)
    assert repr(p) == repr(t)
    assert p.has_uninitialized_params()
    params_before = list(p.parameters())
    opt = pg.optim.SGD(p.parameters(), lr=0.1)
    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    ty, py = t(torch.tensor(x)), p(pg.tensor(x, device=device))
    assert repr(p) == repr(t) and type(p).__name__ == type(t).__name__      # now Linear / Conv2d / ...
    assert tuple(py.shape) == tuple(ty.shape) and py.device == pg.device(device)
    assert [tuple(q.shape) for q in p.parameters()] == [tuple(q.shape) for q in t.parameters()]
    assert all(a is b for a, b in zip(p.parameters(), params_before))      # materialized in place
    bound = 1 / math.sqrt(p.weight[0].numel())                            # default init: U(-1/sqrt(fan_in), ..)
    assert np.abs(p.weight.detach().cpu().numpy()).max() <= bound
    before = p.weight.detach().cpu().numpy().copy()
    py.sum().backward()
    opt.step()
    assert not np.array_equal(p.weight.detach().cpu().numpy(), before)


def test_lazy_state_dict_and_copies():
    src = pg.nn.Linear(3, 4)
    lazy = pg.nn.LazyLinear(4)
    lazy.load_state_dict(src.state_dict())
    assert not lazy.has_uninitialized_params() and tuple(lazy.weight.shape) == (4, 3)
    x = pg.ones(2, 3)
    np.testing.assert_array_equal(lazy(x).detach().numpy(), src(x).detach().numpy())
    assert type(lazy) is pg.nn.Linear
    twin = copy.deepcopy(pg.nn.LazyConv2d(2, 1))
    assert twin(pg.ones(1, 3, 2, 2)).shape == (1, 2, 2, 2) and type(twin) is pg.nn.Conv2d
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        pg.nn.LazyConv2d(4, 1, groups=2)(pg.ones(1, 3, 2, 2))
