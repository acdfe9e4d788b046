"""nn.utils.fuse_conv_bn_eval / fuse_linear_bn_eval (and their _weights forms) against torch:
the fused layer computes what conv/linear followed by the eval-mode BatchNorm did, with the
same weights as torch's fusion; training-mode modules are refused."""
import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn as nn
from tests.helpers import _np


def _pair(make_t, make_p):
    t, p = make_t().eval(), make_p().eval()
    with torch.no_grad():
        for name, v in t.state_dict().items():
            if v.dtype.is_floating_point:
                v.uniform_(0.5, 1.5) if "var" in name else v.uniform_(-1, 1)
    p.load_state_dict({k: pg.tensor(v.numpy()) for k, v in t.state_dict().items()})
    return t, p


@pytest.mark.parametrize("bias,affine", [(False, True), (True, True), (True, False)])
def test_fuse_conv_bn_eval_matches_torch(bias, affine, device):
    tc, pc = _pair(lambda: torch.nn.Conv2d(3, 4, 3, padding=1, bias=bias), lambda: nn.Conv2d(3, 4, 3, padding=1, bias=bias))
    tb, pb = _pair(lambda: torch.nn.BatchNorm2d(4, affine=affine), lambda: nn.BatchNorm2d(4, affine=affine))
    pc, pb = pc.to(device), pb.to(device)
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype(np.float32)
    fused, want = nn.utils.fuse_conv_bn_eval(pc, pb), torch.nn.utils.fuse_conv_bn_eval(tc, tb)
    np.testing.assert_allclose(_np(fused.weight), want.weight.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_np(fused.bias), want.bias.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_np(fused(pg.tensor(x, device=device))), tb(tc(torch.tensor(x))).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    assert isinstance(fused.weight, nn.Parameter) and pc.bias is (None if not bias else pc.bias)   # a copy


def test_fuse_linear_bn_eval_and_training_refused(device):
    tl, pl = _pair(lambda: torch.nn.Linear(3, 4), lambda: nn.Linear(3, 4))
    tb, pb = _pair(lambda: torch.nn.BatchNorm1d(4), lambda: nn.BatchNorm1d(4))
    pl, pb = pl.to(device), pb.to(device)
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    fused = nn.utils.fuse_linear_bn_eval(pl, pb)
    np.testing.assert_allclose(_np(fused(pg.tensor(x, device=device))), tb(tl(torch.tensor(x))).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        nn.utils.fuse_conv_bn_eval(nn.Conv2d(1, 1, 1), nn.BatchNorm2d(1))
    with pytest.raises(AssertionError, match="out_features must equal"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(4).eval())
