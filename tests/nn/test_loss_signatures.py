"""Losses take PyTorch's argument lists in its order, the deprecated size_average / reduce
flags included (they override reduction when given, in the functional and the module forms),
and mse_loss / l1_loss take torch 2.13's per-element weight. Also SiLU(inplace), Hardtanh's
deprecated min_value / max_value and the `input=` keyword of the unary functions and F.pad."""
import warnings

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import assert_close

LEGACY = [(None, None), (True, None), (False, None), (None, False), (False, False), (True, True)]


def _data(shape=(4, 3), seed=0, lo=-1.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)


@pytest.mark.parametrize("size_average,reduce", LEGACY)
@pytest.mark.parametrize("name,make", [
    ("MSELoss", lambda: (_data(), _data(seed=1))), ("L1Loss", lambda: (_data(), _data(seed=1))),
    ("SmoothL1Loss", lambda: (_data(), _data(seed=1))), ("SoftMarginLoss", lambda: (_data(), np.sign(_data(seed=1)))),
    ("BCELoss", lambda: (_data(lo=0.1, hi=0.9), _data(seed=1, lo=0, hi=1))),
    ("BCEWithLogitsLoss", lambda: (_data(), _data(seed=1, lo=0, hi=1))),
    ("KLDivLoss", lambda: (np.log(_data(lo=0.1, hi=0.9)), _data(seed=1, lo=0.1, hi=0.9))),
    ("CrossEntropyLoss", lambda: (_data(), np.array([0, 2, 1, 2]))), ("NLLLoss", lambda: (_data(), np.array([0, 2, 1, 2]))),
    ("HingeEmbeddingLoss", lambda: (_data(), np.sign(_data(seed=1)))),
    ("MultiLabelSoftMarginLoss", lambda: (_data(), (_data(seed=1) > 0).astype(np.float32))),
])
def test_legacy_flags_in_modules_match_torch(name, make, size_average, reduce):
    x, y = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = getattr(torch.nn, name)(size_average=size_average, reduce=reduce)
        p = getattr(pg.nn, name)(size_average=size_average, reduce=reduce)
    assert p.reduction == t.reduction
    assert_close(p(pg.tensor(x), pg.tensor(y)), t(torch.tensor(x), torch.tensor(y)), 1e-5, 1e-5)


def test_functional_losses_take_torchs_positional_order():
    x, y = _data(), np.array([0, 2, 1, 2])
    tx, ty, px, py = torch.tensor(x), torch.tensor(y), pg.tensor(x), pg.tensor(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args in ((None, None, 1), (None, False, 1, None), (None, None, -100, None, "sum"),
                     (None, None, 2, None, "none")):
            assert_close(pg.nn.functional.cross_entropy(px, py, *args),
                         torch.nn.functional.cross_entropy(tx, ty, *args), 1e-5, 1e-5)
            assert_close(pg.nn.functional.nll_loss(px, py, *args), torch.nn.functional.nll_loss(tx, ty, *args),
                         1e-5, 1e-5)
        for name in ("mse_loss", "l1_loss"):
            for args in ((False,), (None, False), (None, None, "sum")):
                assert_close(getattr(pg.nn.functional, name)(px, pg.tensor(_data(seed=2)), *args),
                             getattr(torch.nn.functional, name)(tx, torch.tensor(_data(seed=2)), *args), 1e-5, 1e-5)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_mse_and_l1_match_torch(name, reduction, device):
    x, y, w = _data(), _data(seed=1), _data(seed=2, lo=0.1, hi=2.0)
    tx = torch.tensor(x, requires_grad=True)
    px = pg.tensor(x, device=device, requires_grad=True)
    t = getattr(torch.nn.functional, name)(tx, torch.tensor(y), reduction=reduction, weight=torch.tensor(w))
    p = getattr(pg.nn.functional, name)(px, pg.tensor(y, device=device), reduction=reduction,
                                        weight=pg.tensor(w, device=device))
    assert_close(p, t, 1e-5, 1e-5)
    t.sum().backward()
    p.sum().backward()
    assert_close(px.grad, tx.grad, 1e-5, 1e-5)
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        getattr(pg.nn.functional, name)(px, pg.tensor(y, device=device), weight=pg.ones(3, device=device))


def test_activation_signatures():
    for inplace in (False, True):
        assert repr(pg.nn.SiLU(inplace)) == repr(torch.nn.SiLU(inplace))
        x = pg.tensor([-1.0, 2.0])
        y = pg.nn.SiLU(inplace)(x)
        assert (y is x) == inplace
    with pytest.warns(FutureWarning, match="deprecated"):
        h = pg.nn.Hardtanh(min_value=-2.0, max_value=3.0)
    assert (h.min_val, h.max_val) == (-2.0, 3.0)
    assert pg.exp(input=pg.zeros(1)).tolist() == [1.0]
    assert pg.nn.functional.pad(input=pg.ones(2), pad=(1, 0)).tolist() == [0.0, 1.0, 1.0]
    assert pg.nn.functional.softmin(pg.ones(2), 0, 3).tolist() == [0.5, 0.5]
