"""Channels-last as torch's CPU kernels keep it (its CUDA kernels keep the same), on every
test device: each op's output and input gradient compared
with torch's in value and layout (is_contiguous for both formats, and the strides of the dims
of size > 1) for channels-last 4-D inputs, with C > 1 and the cases that are both row-major and
channels-last (C == 1, H == W == 1), and a small CNN moved with .to(memory_format=...).

Inputs have torch's strides, size-1 dims' too: they decide the ambiguous cases (torch's
suggest_memory_format), which are checked with both torch's channels-last and its row-major
strides."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
import paragrad.nn as pnn
import paragrad.nn.functional as PF

CL_T, CL_P = torch.channels_last, pg.channels_last


def _pg_like(t, requires_grad=False, device="cpu"):
    """A paragrad tensor on `device` with t's values and, for a dense t, t's strides (size-1
    dims' too, which decide the ambiguous layouts): clone and .to() keep a dense layout, as
    torch's do."""
    return pg.from_numpy(t.detach().numpy()).clone().to(device).requires_grad_(requires_grad)


def _same_layout(p, t, what):
    assert tuple(p.shape) == tuple(t.shape), what
    assert p.is_contiguous() == t.is_contiguous(), f"{what}: is_contiguous"
    if t.ndim == 4:
        assert p.is_contiguous(memory_format=CL_P) == t.is_contiguous(memory_format=CL_T), \
            f"{what}: is_contiguous(channels_last)"
    big = [d for d in range(t.ndim) if t.shape[d] > 1]
    assert [p.stride()[d] for d in big] == [t.stride()[d] for d in big], \
        f"{what}: strides {p.stride()} vs torch {t.stride()}"


def _same(p, t, what, tol=1e-4):
    np.testing.assert_allclose(p.detach().cpu().numpy(), t.detach().numpy(), rtol=tol, atol=tol,
                               err_msg=what)
    _same_layout(p, t, what)


torch.manual_seed(0)
_W = torch.randn(4, 3, 3, 3)          # conv weight (sliced to C_in)
_WT = torch.randn(3, 4, 3, 3)         # conv_transpose weight
_WD = torch.randn(3, 1, 3, 3)         # depthwise weight
_BIAS = torch.randn(3, 1, 1)
_RM, _RV = torch.randn(3) * 0.1, torch.rand(3) + 0.5

# name -> f(lib, F, x, P) where P(t) turns a torch constant into lib's tensor
OPS = {
    "conv2d": lambda L, F, x, P: F.conv2d(x, P(_W[:, :x.shape[1]]), P(torch.ones(4)), padding=1),
    "conv2d_stride2": lambda L, F, x, P: F.conv2d(x, P(_W[:, :x.shape[1]]), None, stride=2, padding=1),
    "conv2d_depthwise": lambda L, F, x, P: F.conv2d(x, P(_WD[:x.shape[1]]), P(torch.ones(x.shape[1])),
                                                    padding=1, groups=x.shape[1]),
    "conv_transpose2d": lambda L, F, x, P: F.conv_transpose2d(x, P(_WT[:x.shape[1]]), stride=2),
    "max_pool2d": lambda L, F, x, P: F.max_pool2d(x, 2, ceil_mode=True),
    "avg_pool2d": lambda L, F, x, P: F.avg_pool2d(x, 3, stride=2, padding=1),
    "adaptive_avg_pool2d_1": lambda L, F, x, P: F.adaptive_avg_pool2d(x, 1),
    "adaptive_avg_pool2d_2x3": lambda L, F, x, P: F.adaptive_avg_pool2d(x, (2, 3)),
    "adaptive_avg_pool2d_uneven": lambda L, F, x, P: F.adaptive_avg_pool2d(x, (3, 4)),
    "adaptive_max_pool2d": lambda L, F, x, P: F.adaptive_max_pool2d(x, (2, 3)),
    "interpolate_nearest": lambda L, F, x, P: F.interpolate(x, scale_factor=2, mode="nearest"),
    "interpolate_bilinear": lambda L, F, x, P: F.interpolate(x, size=(7, 5), mode="bilinear"),
    "relu": lambda L, F, x, P: F.relu(x),
    "gelu": lambda L, F, x, P: F.gelu(x),
    "silu": lambda L, F, x, P: F.silu(x),
    "leaky_relu": lambda L, F, x, P: F.leaky_relu(x, 0.1),
    "sigmoid": lambda L, F, x, P: x.sigmoid(),
    "exp": lambda L, F, x, P: x.exp(),
    "mul_self": lambda L, F, x, P: x * x,
    "add_scalar": lambda L, F, x, P: x + 1.5,
    "add_bias_c11": lambda L, F, x, P: x + P(_BIAS[:x.shape[1]]),
    "mul_bias_c11": lambda L, F, x, P: P(_BIAS[:x.shape[1]]) * x,
    "where": lambda L, F, x, P: L.where(x > 0, x, x * 0.5),
    "batch_norm_train": lambda L, F, x, P: F.batch_norm(x, None, None, training=True),
    "batch_norm_eval": lambda L, F, x, P: F.batch_norm(x, P(_RM[:x.shape[1]]), P(_RV[:x.shape[1]]),
                                                       P(torch.ones(x.shape[1]) * 1.5),
                                                       P(torch.zeros(x.shape[1]) + 0.1), training=False),
    "cat_dim0": lambda L, F, x, P: L.cat([x, x], 0),
    "cat_dim1": lambda L, F, x, P: L.cat([x, x], 1),
    "cat_dim2": lambda L, F, x, P: L.cat([x, x], 2),
    "cat_dim3": lambda L, F, x, P: L.cat([x, x], 3),
}

# C1 and HW1 tensors are both row-major and channels-last: torch decides by the strides of
# their size-1 dims, so each comes twice, with the strides .to(channels_last) gives ("_cl")
# and with row-major ones
SHAPES = {"C3": (2, 3, 5, 6), "C1": (2, 1, 5, 6), "HW1": (2, 3, 1, 1), "C1_cl": (2, 1, 5, 6),
          "HW1_cl": (2, 3, 1, 1)}
_SKIP = {  # ops whose geometry needs a larger map
    ("HW1", "avg_pool2d"), ("HW1", "adaptive_avg_pool2d_uneven"), ("C1", "adaptive_avg_pool2d_uneven"),
    ("HW1", "conv2d_stride2"), ("HW1_cl", "avg_pool2d"), ("HW1_cl", "adaptive_avg_pool2d_uneven"),
    ("C1_cl", "adaptive_avg_pool2d_uneven"), ("HW1_cl", "conv2d_stride2"),
}


@pytest.mark.parametrize("name, shape", [(n, s) for n in OPS for s in SHAPES if (s, n) not in _SKIP])
def test_op_keeps_channels_last(name, shape, device):
    fn = OPS[name]
    xt = torch.randn(*SHAPES[shape]).to(memory_format=CL_T)
    if shape in ("C1", "HW1"):
        xt = xt.clone(memory_format=torch.contiguous_format)
    xt.requires_grad_()
    xp = _pg_like(xt, True, device)
    assert xp.is_contiguous(memory_format=CL_P)
    yt = fn(torch, TF, xt, lambda t: t)
    yp = fn(pg, PF, xp, lambda t: _pg_like(t, device=device))
    _same(yp, yt, f"{name} output")
    gt = torch.randn_like(yt)              # (preserve_format: the output's layout)
    yt.backward(gt)
    yp.backward(_pg_like(gt, device=device))
    _same(xp.grad, xt.grad, f"{name} input gradient")


@pytest.mark.parametrize("name", ["max_pool2d", "adaptive_max_pool2d"])
def test_pool_indices_keep_channels_last(name, device):
    xt = torch.randn(2, 3, 6, 6).to(memory_format=CL_T)
    xp = _pg_like(xt, device=device)
    ft, fp = getattr(TF, name), getattr(PF, name)
    args = (2,) if name == "max_pool2d" else ((2, 3),)
    (yt, it), (yp, ip) = ft(xt, *args, return_indices=True), fp(xp, *args, return_indices=True)
    _same(yp, yt, "values")
    np.testing.assert_array_equal(ip.cpu().numpy(), it.numpy())
    _same_layout(ip, it, "indices")


def test_dropout_keeps_channels_last(device):
    xt = torch.randn(2, 3, 5, 6).to(memory_format=CL_T).requires_grad_()
    xp = _pg_like(xt, True, device)
    yt, yp = TF.dropout(xt, 0.5), PF.dropout(xp, 0.5)
    _same_layout(yp, yt, "dropout output")
    yt.backward(torch.randn_like(yt))
    yp.backward(_pg_like(torch.randn_like(yt), device=device))
    _same_layout(xp.grad, xt.grad, "dropout input gradient")
    kept = yp.detach().cpu().numpy() != 0          # the gradient flows where the output kept x
    assert np.array_equal(xp.grad.cpu().numpy() != 0, kept)


def test_row_major_input_stays_row_major(device):
    """A channels-last weight with a row-major input gives channels-last (torch's conv rule:
    input or weight); pooling a row-major input stays row-major."""
    xt = torch.randn(2, 3, 5, 6, requires_grad=True)
    wt = _W.to(memory_format=CL_T).requires_grad_()
    xp, wp = _pg_like(xt, True, device), _pg_like(wt, True, device)
    yt, yp = TF.conv2d(xt, wt, padding=1), PF.conv2d(xp, wp, padding=1)
    _same(yp, yt, "conv2d with a channels-last weight")
    yt.backward(torch.ones_like(yt))
    yp.backward(pg.ones_like(yp))
    np.testing.assert_allclose(xp.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    _same(wp.grad, wt.grad, "weight gradient")
    _same(PF.max_pool2d(xp, 2), TF.max_pool2d(xt, 2), "max_pool2d of a row-major input")


def test_leaf_gradient_follows_the_leaf_layout(device):
    xt = torch.randn(2, 3, 5, 6, requires_grad=True)
    wt = _W.to(memory_format=CL_T)
    xp, wp = _pg_like(xt, True, device), _pg_like(wt, device=device)
    TF.conv2d(xt, wt, padding=1).sum().backward()
    PF.conv2d(xp, wp, padding=1).sum().backward()
    _same_layout(xp.grad, xt.grad, "input gradient")


def _cnn(nn):
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 3, padding=1, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d((2, 2)),
                         nn.Flatten(), nn.Linear(64, 10))


def test_cnn_moved_channels_last(device):
    torch.manual_seed(1)
    tm, pm = _cnn(torch.nn), _cnn(pnn)
    pm.load_state_dict({k: pg.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    tm.to(memory_format=CL_T)
    pm.to(device).to(memory_format=CL_P)
    xt = torch.randn(4, 3, 12, 12).to(memory_format=CL_T).requires_grad_()
    xp = _pg_like(xt, True, device)
    for i in range(1, len(tm) - 1):          # every 4-D activation keeps torch's layout
        _same(pm[:i](xp), tm[:i](xt), f"activation after {type(tm[i - 1]).__name__} ({i})")
    yt, yp = tm(xt), pm(xp)
    _same(yp, yt, "logits")
    gt = torch.randn_like(yt)
    yt.backward(gt)
    yp.backward(_pg_like(gt, device=device))
    _same(xp.grad, xt.grad, "input gradient")
    for (n, a), (_, b) in zip(tm.named_parameters(), pm.named_parameters()):
        _same(b.grad, a.grad, f"{n}.grad")
