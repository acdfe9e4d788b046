"""nn.utils.spectral_norm / remove_spectral_norm against torch's: the same state_dict keys
(weight_orig, weight_u, weight_v); from the same u, v, training-mode forwards agree and update
u, v alike (power iteration), weight_orig's gradient agrees, eval mode leaves u, v alone;
removal gives back one Parameter. For Linear, Conv2d and ConvTranspose2d (dim 1)."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import assert_close

CASES = {"linear": (lambda L: L.nn.Linear(3, 4), (5, 3)), "conv": (lambda L: L.nn.Conv2d(2, 3, 3), (2, 2, 5, 5)),
         "conv_transpose": (lambda L: L.nn.ConvTranspose2d(2, 3, 3), (2, 2, 4, 4))}


@pytest.mark.parametrize("name", CASES)
def test_spectral_norm_matches_torch(name, device):
    make, shape = CASES[name]
    t = torch.nn.utils.spectral_norm(make(torch), n_power_iterations=2)
    p = pg.nn.utils.spectral_norm(make(pg), n_power_iterations=2)
    assert list(p.state_dict()) == list(t.state_dict())
    p.load_state_dict({k: pg.tensor(v.numpy()) for k, v in t.state_dict().items()})
    p.to(device)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for _ in range(3):
        ty, py = t(torch.tensor(x)), p(pg.tensor(x, device=device))
        assert_close(py, ty, 1e-5, 1e-4)
    ty.square().sum().backward()
    py.square().sum().backward()
    assert_close(p.weight_orig.grad, t.weight_orig.grad, 1e-5, 1e-3)
    for buf in ("weight_u", "weight_v"):
        assert_close(getattr(p, buf), getattr(t, buf), 1e-6, 1e-5)
    p.eval()
    u = p.weight_u.cpu().numpy().copy()
    p(pg.tensor(x, device=device))
    assert np.array_equal(p.weight_u.cpu().numpy(), u)                # no power iteration in eval
    t.eval()
    torch.nn.utils.remove_spectral_norm(t)
    assert pg.nn.utils.remove_spectral_norm(p) is p
    assert list(p.state_dict()) == list(t.state_dict()) and isinstance(p.weight, pg.nn.Parameter)
    assert_close(p.weight, t.weight, 1e-6, 1e-5)


def test_spectral_norm_errors():
    lin = pg.nn.utils.spectral_norm(pg.nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        pg.nn.utils.spectral_norm(lin)
    with pytest.raises(ValueError, match="n_power_iterations"):
        pg.nn.utils.spectral_norm(pg.nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="spectral_norm of 'bias' not found"):
        pg.nn.utils.remove_spectral_norm(lin, "bias")
    out = pg.zeros(2)
    assert pg.nn.functional.normalize(pg.tensor([3.0, 4.0]), dim=0, out=out) is out
    np.testing.assert_allclose(out.numpy(), [0.6, 0.8], rtol=1e-6)
