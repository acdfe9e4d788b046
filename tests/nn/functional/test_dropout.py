"""The dropouts (F and modules): dropout's rate and scaling, Dropout1d/2d/3d zeroing whole channels
with probability p and scaling the survivors by 1/(1-p), identity in eval mode, the gradient
through the same mask, alpha dropout's statistics, and PyTorch's argument errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn.functional as F
from tests.helpers import _np, make_input


def test_dropout_functional(device):
    x = pg.tensor(make_input((400, 50)), device=device)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    y = _np(F.dropout(x, 0.3))
    kept = y != 0
    assert abs(1 - kept.mean() - 0.3) < 0.01
    np.testing.assert_allclose(y[kept], _np(x)[kept] / 0.7, rtol=1e-6)
    assert not _np(F.dropout(x, 1.0)).any()
    z = x.clone()
    assert F.dropout(z, 0.5, inplace=True) is z and (_np(z) == 0).any()
    with pytest.raises(ValueError):
        F.dropout(x, 1.2)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_dropout_gradient_drops_the_forward_elements(dtype, device):
    """The gradient is zero where the forward dropped and 1/(1-p) of the upstream where it kept
    (on CUDA one kernel draws, masks and scales, and the backward reads its mask)."""
    x = pg.tensor(make_input((300, 40)) + 3, dtype=getattr(pg, dtype), device=device, requires_grad=True)
    y = F.dropout(x, 0.25)
    w = pg.tensor(make_input((300, 40), rng=np.random.default_rng(1)), dtype=x.dtype, device=device)
    (y * w).sum().backward()
    kept = _np(y.detach()) != 0                     # x > 0: a kept element is never 0
    assert abs(1 - kept.mean() - 0.25) < 0.02
    rtol = 1e-2 if dtype == "bfloat16" else 1e-6
    np.testing.assert_allclose(_np(x.grad), np.where(kept, _np(w) / 0.75, 0), rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(_np(y.detach())[kept], _np(x.detach())[kept] / 0.75, rtol=rtol)


# (function, module, input shape, dims of one mask value: PyTorch's reading of each rank —
# dropout2d takes a 3-D input as (N, C, L); dropout1d/3d take (C, *) as unbatched)
CASES = [("dropout1d", "Dropout1d", (8, 6, 5), 2), ("dropout1d", "Dropout1d", (16, 5), 1),
         ("dropout2d", "Dropout2d", (8, 6, 3, 4), 2), ("dropout2d", "Dropout2d", (16, 3, 3), 2),
         ("dropout3d", "Dropout3d", (4, 6, 2, 3, 2), 2), ("dropout3d", "Dropout3d", (24, 2, 3, 2), 1)]


@pytest.mark.parametrize("fname,mname,shape,lead", CASES)
def test_channels_are_dropped_whole_and_scaled(fname, mname, shape, lead, device):
    pg.manual_seed(0)
    x = pg.ones(*shape, device=device, requires_grad=True)
    y = getattr(pg.nn.functional, fname)(x, p=0.25)
    a = y.detach().cpu().numpy()
    per_channel = a.reshape(shape[:lead] + (-1,))
    assert set(np.unique(per_channel)) <= {0.0, np.float32(1 / 0.75)}
    assert (per_channel.min(-1) == per_channel.max(-1)).all()          # whole channels
    assert 0.05 < (per_channel[..., 0] == 0).mean() < 0.5
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), a)                 # the same mask
    m = getattr(pg.nn, mname)(0.5).eval()
    assert m(x) is x and repr(m) == repr(getattr(torch.nn, mname)(0.5))


def test_channel_dropout_errors_match_torch():
    for make in (lambda lib: lib.nn.functional.dropout1d(lib.ones(2, 3, 4, 5), 0.5),
                 lambda lib: lib.nn.functional.dropout1d(lib.ones(2, 3, 4, 5), 1.5),
                 lambda lib: lib.nn.functional.dropout2d(lib.ones(2, 3, 4, 4), 1.5),
                 lambda lib: lib.nn.Dropout2d(-0.1)):
        with pytest.raises(Exception) as e:
            make(torch)
        with pytest.raises(e.type):
            make(pg)


def test_dropout2d_of_other_ranks_warns_as_torch():
    with pytest.warns(UserWarning, match="dropout2d: Received a 2-D input"):
        y = pg.nn.functional.dropout2d(pg.ones(40, 50), 0.5)
    assert 0.3 < (y.numpy() == 0).mean() < 0.7          # (N, C) = elementwise masks


@pytest.mark.parametrize("p", [0.1, 0.3, 0.6])
def test_alpha_dropout_statistics(p, device):
    """Dropped units all take one value, alpha * a * (p - 1); a standard normal input keeps
    zero mean and unit variance (what torch's alpha_dropout guarantees)."""
    x = pg.randn(400000, device=device)
    y = pg.nn.functional.alpha_dropout(x, p, training=True).cpu().numpy()
    a = 1.0 / np.sqrt((1.7580993408473766 ** 2 * p + 1) * (1 - p))
    dropped = np.isclose(y, 1.7580993408473766 * a * (p - 1), atol=1e-6)
    assert abs(dropped.mean() - p) < 0.01
    assert abs(y.mean()) < 0.01 and abs(y.std() - 1) < 0.01
    t = torch.nn.functional.alpha_dropout(torch.randn(400000), p, training=True)
    assert abs(t.mean().item()) < 0.01 and abs(t.std().item() - 1) < 0.01       # (the same law in torch)


def test_alpha_dropout_modes_and_feature_masks(device):
    x = pg.randn(4, 6, 50, device=device)
    assert pg.nn.functional.alpha_dropout(x, 0.5) is x                      # training=False by default
    assert pg.nn.AlphaDropout(0.5).eval()(x) is x
    assert (pg.nn.functional.alpha_dropout(x, 1.0, True).cpu().numpy() == 0).all()
    assert pg.nn.functional.alpha_dropout(x, 0.0, True) is x
    y = pg.nn.FeatureAlphaDropout(0.5)(x).cpu().numpy()                     # a module trains by default
    const = y.std(axis=2) < 1e-6                                            # dropped channels are constant
    assert const.any() and (~const).any()
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        pg.nn.functional.feature_alpha_dropout(pg.ones(3, device=device), 0.5, True)
    with pytest.raises(ValueError, match="between 0 and 1"):
        pg.nn.functional.alpha_dropout(x, 1.5, True)
    assert repr(pg.nn.AlphaDropout(0.2)) == repr(torch.nn.AlphaDropout(0.2))
    assert repr(pg.nn.FeatureAlphaDropout(0.2)) == repr(torch.nn.FeatureAlphaDropout(0.2))


@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float32", "bfloat16"), ("bfloat16", "bfloat16")])
def test_residual_dropout_is_the_add_of_dropout(dtypes, device):
    """F.residual_dropout(r, y, p) equals r + F.dropout(y, p) drawn from the same seed: values,
    the residual's gradient (the incoming one) and the branch's (in the branch's dtype); in
    eval mode or at p = 0 it is r + y, as PyTorch adds a bf16 branch to a float32 stream."""
    rd, yd = (getattr(pg, d) for d in dtypes)
    rng = np.random.default_rng(0)
    r0, y0, w0 = (make_input((64, 40), rng=rng) for _ in range(3))
    results = []
    for fused in (True, False):
        r = pg.tensor(r0, dtype=rd, device=device, requires_grad=True)
        y = pg.tensor(y0, dtype=yd, device=device, requires_grad=True)
        pg.manual_seed(5)
        out = F.residual_dropout(r, y, 0.3) if fused else r + F.dropout(y, 0.3)
        assert out.dtype is rd
        (out * pg.tensor(w0, dtype=rd, device=device)).sum().backward()
        assert r.grad.dtype is rd and y.grad.dtype is yd
        results.append([_np(t.float()) for t in (out, r.grad, y.grad)])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    kept = results[0][2] != 0
    assert abs(kept.mean() - 0.7) < 0.03

    tr = torch.tensor(r0, dtype=getattr(torch, dtypes[0]), requires_grad=True)
    ty = torch.tensor(y0, dtype=getattr(torch, dtypes[1]), requires_grad=True)
    (tr + ty).float().sum().backward()
    for p, training in ((0.3, False), (0.0, True)):
        r = pg.tensor(r0, dtype=rd, device=device, requires_grad=True)
        y = pg.tensor(y0, dtype=yd, device=device, requires_grad=True)
        out = F.residual_dropout(r, y, p, training)
        out.float().sum().backward()
        np.testing.assert_array_equal(_np(out.float()), (tr + ty).float().detach().numpy())
        np.testing.assert_array_equal(_np(y.grad.float()), ty.grad.float().numpy())
        assert y.grad.dtype is yd


def test_residual_dropout_errors():
    r, y = pg.zeros(3, 4), pg.zeros(3, 4)
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.residual_dropout(r, y, 1.5)
    with pytest.raises(RuntimeError, match="size of tensor"):
        F.residual_dropout(r, pg.zeros(3, 5), 0.2)
    assert not _np(F.residual_dropout(r, pg.ones(3, 4), 1.0)).any()        # everything dropped
