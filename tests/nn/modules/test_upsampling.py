"""UpsamplingNearest2d and UpsamplingBilinear2d against torch.nn."""
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op


@pytest.mark.parametrize("cls,kw", [("UpsamplingNearest2d", dict(scale_factor=2)),
                                    ("UpsamplingBilinear2d", dict(size=(5, 7))),
                                    ("UpsamplingBilinear2d", dict(scale_factor=2))])
def test_upsampling_modules(device, cls, kw):
    p, t = getattr(pg.nn, cls)(**kw), getattr(torch.nn, cls)(**kw)
    assert repr(p) == repr(t)
    check_op(lambda x: (p if isinstance(x, pg.Tensor) else t)(x), [(1, 2, 3, 4)], device=device)
