"""The activation modules and MultiheadAttention against torch.nn: values, input and parameter
gradients (check_module), extreme inputs, the in-place forms, PReLU's learned slopes,
Softmax2d; MultiheadAttention with the same weights: outputs, attention weights and every
parameter's gradient for batch_first, unbatched, kdim/vdim, no bias, bool and float masks, key
padding; state_dict names; init; errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn as nn
from tests.helpers import _np, assert_close, check_op, lib, make_input
from tests.nn.modules.test_linear import check_module


ACTIVATIONS = [
    lambda lib: lib.ReLU(),
    lambda lib: lib.GELU(),
    lambda lib: lib.GELU(approximate="tanh"),
    lambda lib: lib.SiLU(),
    lambda lib: lib.Tanh(),
    lambda lib: lib.Sigmoid(),
    lambda lib: lib.Softmax(dim=1),
    lambda lib: lib.Softmax(dim=-1),
    lambda lib: lib.Softmax(dim=0),
    lambda lib: lib.LogSoftmax(dim=1),
    lambda lib: lib.LogSoftmax(dim=0),
    lambda lib: lib.LeakyReLU(),
    lambda lib: lib.LeakyReLU(0.3),
    lambda lib: lib.Softplus(),
    lambda lib: lib.Softplus(beta=2.0, threshold=3.0),    # both branches of the threshold taken
    lambda lib: lib.Softplus(beta=0.5),
]


ACT_IDS = ["relu", "gelu", "gelu-tanh", "silu", "tanh", "sigmoid", "softmax1", "softmax-1", "softmax0",
           "logsoftmax1", "logsoftmax0", "leaky", "leaky0.3", "softplus", "softplus-b2t3", "softplus-b0.5"]


@pytest.mark.parametrize("build", ACTIVATIONS, ids=ACT_IDS)
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 4)])
def test_activations(build, shape, device):
    check_module(build, shape, device, low=-4.0, high=4.0)


@pytest.mark.parametrize("build", ACTIVATIONS, ids=ACT_IDS)
def test_activations_float64(build, device):
    check_module(build, (3, 4), device, dtype="float64", low=-4.0, high=4.0)


def test_activations_extreme_inputs(device):
    x = np.array([[-100.0, -30.0, -1e-3, 0.0, 1e-3, 30.0, 100.0]], np.float32)
    for build in ACTIVATIONS:
        tm, pm = build(torch.nn), build(nn)
        yt = tm(torch.tensor(x))
        yp = pm(pg.tensor(x, device=device))
        assert np.isfinite(_np(yp)).all() == np.isfinite(yt.numpy()).all(), repr(pm)
        assert_close(yp, yt, 1e-5, 1e-5, repr(pm))


@pytest.mark.parametrize("build", [lambda lib: lib.ReLU(inplace=True),
                                   lambda lib: lib.LeakyReLU(0.2, inplace=True),
                                   lambda lib: lib.Dropout(0.0, inplace=True)],
                         ids=["relu", "leaky", "dropout0"])
def test_inplace_activations(build, device):
    pm, yp = check_module(build, (4, 5), device, preprocess=lambda v: v * 1.0)
    x = pg.tensor(make_input((3, 3), "float32"), device=device)
    assert pm(x) is x                  # the result is the input tensor, modified in place


def test_inplace_leaky_relu_gradient_at_zero(device):
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    xt, xp = torch.tensor(x, requires_grad=True), pg.tensor(x, device=device, requires_grad=True)
    torch.nn.LeakyReLU(0.2, inplace=True)(xt * 1).sum().backward()
    nn.LeakyReLU(0.2, inplace=True)(xp * 1).sum().backward()
    assert_close(xp.grad, xt.grad, 1e-7, 1e-7, "gradient")


@pytest.mark.parametrize("name,args", [("ELU", (0.5,)), ("CELU", (0.8,)), ("SELU", ()), ("Hardtanh", (-1.0, 0.5)),
                                       ("ReLU6", ()), ("Hardsigmoid", ()), ("Hardswish", ()), ("Mish", ()),
                                       ("Threshold", (0.1, -1.0))])
def test_inplace_modules_write_the_input_and_keep_gradients(name, args):
    x0 = np.random.default_rng(0).uniform(-4, 7, (3, 5)).astype(np.float32)
    outs = []
    for inplace in (False, True):
        x = pg.tensor(x0, requires_grad=True)
        h = x * 1.0                       # a non-leaf to write into
        y = getattr(pg.nn, name)(*args, inplace=inplace)(h)
        (y * pg.arange(15.0).reshape(3, 5)).sum().backward()
        outs.append((y.detach().numpy(), x.grad.numpy()))
        if inplace:
            assert y is h
    np.testing.assert_allclose(outs[0][0], outs[1][0])
    np.testing.assert_allclose(outs[0][1], outs[1][1])


def test_prelu_module_learns_its_slopes_as_torch():
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    p, t = pg.nn.PReLU(3, init=0.1), torch.nn.PReLU(3, init=0.1)
    assert repr(p) == repr(t) and [n for n, _ in p.named_parameters()] == ["weight"]
    p(pg.tensor(x)).sum().backward()
    t(torch.tensor(x)).sum().backward()
    np.testing.assert_allclose(p.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 4, 5)])
def test_softmax2d(device, shape):
    check_op(lambda x: (pg.nn.Softmax2d() if isinstance(x, pg.Tensor) else torch.nn.Softmax2d())(x), [shape], device=device)


def test_softmax2d_error():
    with pytest.raises(ValueError, match="3D or 4D"):
        pg.nn.Softmax2d()(pg.randn(2, 3))
    with pytest.raises(ValueError):
        torch.nn.Softmax2d()(torch.randn(2, 3))


rng = np.random.default_rng(0)


def pair(*args, **kw):
    t = torch.nn.MultiheadAttention(*args, **kw)
    p = pg.nn.MultiheadAttention(*args, **kw)
    p.load_state_dict({k: pg.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return p, t


CAUSAL = np.triu(np.ones((5, 5), bool), 1)


PAD = np.zeros((3, 5), bool)
PAD[0, 3:] = True


CASES = {
    "default": ((8, 2), {}, [(5, 3, 8)] * 3, {}),
    "batch_first-per-head": ((8, 2), {"batch_first": True}, [(3, 5, 8), (3, 4, 8), (3, 4, 8)],
                             {"average_attn_weights": False}),
    "kdim-vdim": ((8, 4), {"kdim": 6, "vdim": 5}, [(5, 3, 8), (4, 3, 6), (4, 3, 5)], {}),
    "causal-bool-nobias": ((8, 2), {"bias": False}, [(5, 3, 8)] * 3, {"attn_mask": CAUSAL, "is_causal": True}),
    "float-mask-key-padding": ((8, 2), {}, [(5, 3, 8)] * 3,
                               {"key_padding_mask": PAD, "attn_mask": np.triu(np.full((5, 5), -1e9, np.float32), 1)}),
    "unbatched-no-weights": ((8, 2), {}, [(5, 8)] * 3, {"need_weights": False}),
}


@pytest.mark.parametrize("name", CASES)
def test_multihead_attention_matches_torch(name):
    args, kw, shapes, fkw = CASES[name]
    p, t = pair(*args, **kw)
    assert list(p.state_dict()) == list(t.state_dict()) and repr(p) == repr(t)
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    conv = lambda lib, v: lib.tensor(v) if isinstance(v, np.ndarray) else v  # noqa: E731
    pin = [pg.tensor(x, requires_grad=True) for x in xs]
    tin = [torch.tensor(x, requires_grad=True) for x in xs]
    po, pw = p(*pin, **{k: conv(pg, v) for k, v in fkw.items()})
    to, tw = t(*tin, **{k: conv(torch, v) for k, v in fkw.items()})
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert (pw is None) == (tw is None)
    cot = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    loss_p, loss_t = (po * pg.tensor(cot)).sum(), (to * torch.tensor(cot)).sum()
    if tw is not None:
        np.testing.assert_allclose(pw.detach().numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)
        loss_p, loss_t = loss_p + (pw * pw).sum(), loss_t + (tw * tw).sum()
    loss_p.backward()
    loss_t.backward()
    for (n, pp), (_, tp) in zip(p.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(pp.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=n)
    for a, b in zip(pin, tin):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_init_and_errors():
    pg.manual_seed(0)
    m = pg.nn.MultiheadAttention(16, 4)
    assert not m.in_proj_bias.detach().numpy().any() and not m.out_proj.bias.detach().numpy().any()
    bound = np.sqrt(6 / (16 + 48))      # xavier_uniform on the (3E, E) in_proj_weight
    assert np.abs(m.in_proj_weight.detach().numpy()).max() <= bound
    for make in (lambda lib: lib.nn.MultiheadAttention(10, 3),
                 lambda lib: lib.nn.MultiheadAttention(8, 2)(lib.ones(4, 2, 8), lib.ones(4, 2, 8),
                                                            lib.ones(4, 2, 8), is_causal=True),
                 lambda lib: lib.nn.MultiheadAttention(8, 2)(lib.ones(4, 2, 6), lib.ones(4, 2, 6), lib.ones(4, 2, 6))):
        with pytest.raises(Exception) as e:
            make(torch)
        with pytest.raises(e.type):
            make(pg)
