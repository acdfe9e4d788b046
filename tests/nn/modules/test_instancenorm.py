"""InstanceNorm1d/2d against torch.nn: state_dict keys, repr, values and gradients over train and
eval steps with running statistics, defaults and errors."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import comparable_repr


rng = np.random.default_rng(0)


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
