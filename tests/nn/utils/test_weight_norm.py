"""nn.utils.weight_norm / remove_weight_norm against torch's: the g / v parameters (names,
order, values), the forward output and g / v gradients, for several dims and a conv weight;
removal gives back one Parameter; two hooks on one parameter are refused."""
import warnings

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import assert_close


def _same_module(make_t, make_p, device):
    t, p = make_t(), make_p()
    p.load_state_dict({k: pg.tensor(v.numpy()) for k, v in t.state_dict().items()})
    return t, p.to(device)


@pytest.mark.parametrize("dim", [0, 1, None, -2])
@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_weight_norm_matches_torch(kind, dim, device):
    if kind == "linear":
        t, p = _same_module(lambda: torch.nn.Linear(3, 4), lambda: pg.nn.Linear(3, 4), device)
        x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    else:
        t, p = _same_module(lambda: torch.nn.Conv2d(2, 3, 3), lambda: pg.nn.Conv2d(2, 3, 3), device)
        x = np.random.default_rng(0).standard_normal((2, 2, 5, 5)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nn.utils.weight_norm(t, dim=dim)
    with pytest.warns(FutureWarning, match="deprecated"):
        assert pg.nn.utils.weight_norm(p, dim=dim) is p
    assert list(p.state_dict()) == list(t.state_dict())
    for k, v in t.state_dict().items():
        assert_close(p.state_dict()[k], v, 1e-6, 1e-6)
    ty, py = t(torch.tensor(x)), p(pg.tensor(x, device=device))
    assert_close(py, ty, 1e-5, 1e-5)
    ty.square().sum().backward()
    py.square().sum().backward()
    for name in ("weight_g", "weight_v", "bias"):
        assert_close(getattr(p, name).grad, getattr(t, name).grad, 1e-4, 1e-4)
    torch.nn.utils.remove_weight_norm(t)
    assert pg.nn.utils.remove_weight_norm(p) is p
    assert list(p.state_dict()) == list(t.state_dict()) and isinstance(p.weight, pg.nn.Parameter)
    assert_close(p.weight, t.weight, 1e-6, 1e-6)


def test_weight_norm_errors():
    lin = pg.nn.Linear(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pg.nn.utils.weight_norm(lin)
        with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
            pg.nn.utils.weight_norm(lin)
    with pytest.raises(ValueError, match="weight_norm of 'bias' not found"):
        pg.nn.utils.remove_weight_norm(lin, "bias")
