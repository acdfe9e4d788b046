"""F's vision forms against PyTorch: interpolate / nn.Upsample (nearest, nearest-exact, area,
linear, bilinear, trilinear; size or scale_factor; align_corners; values and gradients) and
the pixel and channel shuffles."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
from tests.helpers import check_op, fd_check


F = pg.nn.functional


CASES = [((2, 3, 5, 7), dict(scale_factor=2)), ((2, 3, 5, 7), dict(size=(8, 4))),
         ((2, 3, 5, 7), dict(size=(3, 11), mode="nearest-exact")),
         ((2, 3, 5, 7), dict(size=(3, 4), mode="area")), ((2, 3, 9), dict(size=4, mode="area")),
         ((2, 3, 5, 7), dict(scale_factor=1.7, mode="bilinear")),
         ((2, 3, 5, 7), dict(size=(9, 5), mode="bilinear", align_corners=True)),
         ((2, 3, 5, 7), dict(size=(9, 5), mode="bilinear", align_corners=False)),
         ((2, 3, 6), dict(scale_factor=2.5, mode="linear")), ((2, 3, 6), dict(size=4, mode="linear", align_corners=True)),
         ((1, 2, 3, 4, 5), dict(scale_factor=(2, 1.5, 0.5), mode="trilinear")),
         ((2, 3, 5, 7), dict(scale_factor=1.3, mode="bilinear", recompute_scale_factor=True)),
         ((1, 2, 3, 4, 5), dict(size=(2, 5, 3)))]


@pytest.mark.parametrize("shape,kw", CASES, ids=[f"{i}-{c[1].get('mode', 'nearest')}" for i, c in enumerate(CASES)])
def test_interpolate_matches_torch(shape, kw, device):
    check_op(lambda x: (TF if isinstance(x, torch.Tensor) else F).interpolate(x, **kw), [shape], device=device)


def test_bilinear_finite_differences(device):
    fd_check(lambda x: F.interpolate(x, size=(4, 5), mode="bilinear"), [(1, 2, 3, 3)], device=device)


def test_upsample_module_and_errors():
    for kw in (dict(scale_factor=2), dict(size=(3, 4), mode="bilinear", align_corners=True),
               dict(scale_factor=(2, 3), mode="bilinear")):
        assert repr(pg.nn.Upsample(**kw)) == repr(torch.nn.Upsample(**kw))
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(pg.nn.Upsample(scale_factor=2, mode="bilinear")(pg.tensor(x)).numpy(),
                               torch.nn.Upsample(scale_factor=2, mode="bilinear")(torch.tensor(x)).numpy(),
                               rtol=1e-5, atol=1e-6)
    for make in (lambda f, lib: f.interpolate(lib.ones(1, 1, 4), size=3, scale_factor=2),
                 lambda f, lib: f.interpolate(lib.ones(1, 1, 4), mode="bilinear", size=3),
                 lambda f, lib: f.interpolate(lib.ones(1, 1, 4, 4), size=3, align_corners=True),
                 lambda f, lib: f.interpolate(lib.ones(1, 1, 4, 4), size=(3, 3, 3))):
        with pytest.raises(Exception) as e:
            make(TF, torch)
        with pytest.raises(e.type):
            make(F, pg)


def lib_of(x):
    return TF if isinstance(x, torch.Tensor) else F


@pytest.mark.parametrize("fn,arg,shape", [("pixel_shuffle", 2, (2, 3, 8, 2, 3)),
                                          ("pixel_shuffle", 3, (9, 2, 2)),
                                          ("pixel_unshuffle", 2, (2, 3, 4, 6)),
                                          ("channel_shuffle", 3, (2, 6, 3)),
                                          ("channel_shuffle", 2, (2, 4, 3, 2))])
def test_shuffles_match_torch(fn, arg, shape, device):
    check_op(lambda x: getattr(lib_of(x), fn)(x, arg), [shape], device=device)
