"""The convolution modules against torch.nn: Conv2d with torch's weights copied in (outputs and
gradients), every padding_mode, PyTorch's default init statistics, constructor checks and
repr strings; Conv1d and the 1-D pool modules; ConvTranspose1d/2d (parameters, init bound,
values, output_size)."""
import math

import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn as nn
from tests.nn.modules.test_linear import check_module


CASES = [
    (lambda lib: lib.Conv2d(3, 8, 3, padding=1), (2, 3, 6, 6)),
    (lambda lib: lib.Conv2d(3, 8, 3, padding=1), (3, 6, 6)),                       # unbatched
    (lambda lib: lib.Conv2d(4, 6, (3, 5), stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
     (2, 4, 9, 11)),
    (lambda lib: lib.Conv2d(4, 4, 3, padding="same", groups=4, bias=False), (2, 4, 5, 5)),
    (lambda lib: lib.Conv2d(2, 3, 4, padding="same", dilation=1), (2, 2, 7, 6)),
    (lambda lib: lib.Conv2d(2, 3, 5, stride=2, padding="valid"), (2, 2, 9, 9)),
    (lambda lib: lib.Conv2d(3, 4, 3, padding=2, padding_mode="reflect"), (2, 3, 6, 5)),
    (lambda lib: lib.Conv2d(3, 4, 3, stride=2, padding=(1, 2), padding_mode="replicate"), (2, 3, 6, 5)),
    (lambda lib: lib.Conv2d(3, 4, 3, padding=1, padding_mode="circular", bias=False), (3, 6, 5)),
    (lambda lib: lib.Conv2d(2, 4, (2, 3), padding="same", padding_mode="reflect", groups=2), (2, 2, 5, 6)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("build,shape", CASES, ids=[str(i) for i in range(len(CASES))])
def test_conv2d_module_matches_torch(build, shape, dtype, device):
    check_module(build, shape, device, dtype=dtype)


def test_small_cnn_matches_torch(device):
    """Conv -> ReLU -> strided depthwise conv -> Flatten -> Linear, as a whole."""
    def build(lib):
        return lib.Sequential(lib.Conv2d(1, 4, 3, padding=1), lib.ReLU(),
                              lib.Conv2d(4, 8, 3, stride=2, groups=4), lib.Flatten(), lib.Linear(8 * 3 * 3, 5))
    check_module(build, (3, 1, 8, 8), device)


def test_default_init_statistics():
    pg.manual_seed(0)
    m = nn.Conv2d(16, 32, 3, groups=2)
    fan_in = 8 * 3 * 3
    bound = 1 / math.sqrt(fan_in)          # kaiming_uniform(a=sqrt(5)) gives the same bound
    w = m.weight.detach().numpy()
    b = m.bias.detach().numpy()
    assert w.shape == (32, 8, 3, 3) and b.shape == (32,)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.mean()) < 0.05 * bound
    assert abs(w.var() / (bound ** 2 / 3) - 1) < 0.1        # U(-a, a) has variance a^2 / 3
    assert np.abs(b).max() <= bound and len(np.unique(b)) == 32
    t = torch.nn.Conv2d(16, 32, 3, groups=2)
    assert abs(t.weight.detach().abs().max().item() - np.abs(w).max()) < 0.05 * bound
    assert nn.Conv2d(2, 3, 1, bias=False).bias is None


def test_parameters_dtype_device_and_state_dict():
    m = nn.Conv2d(2, 4, (1, 3), dtype=pg.float64, device="cpu")
    assert m.weight.dtype is pg.float64 and m.bias.dtype is pg.float64
    assert list(m.state_dict()) == ["weight", "bias"]
    assert m.weight.requires_grad
    assert (m.kernel_size, m.stride, m.padding, m.dilation, m.groups, m.padding_mode) == \
        ((1, 3), (1, 1), (0, 0), (1, 1), 1, "zeros")


REPRS = [
    ((3, 8, 3), {"padding": 1}),
    ((3, 8, 3), {}),
    ((3, 8, (3, 5)), {"stride": 2, "padding": (0, 0)}),
    ((3, 8, 3), {"padding": "same", "bias": False}),
    ((4, 8, 3), {"padding": "valid", "groups": 2, "dilation": 2}),
    ((4, 8, (2, 3)), {"stride": (1, 2), "padding": [1, 0], "groups": 4, "bias": False, "padding_mode": "reflect"}),
    ((4, 4, 3), {"padding": 1, "padding_mode": "circular"}),
]


@pytest.mark.parametrize("args,kw", REPRS, ids=[str(i) for i in range(len(REPRS))])
def test_repr_matches_torch(args, kw):
    assert repr(nn.Conv2d(*args, **kw)) == repr(torch.nn.Conv2d(*args, **kw))


def test_repr_inside_sequential():
    seq = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU())
    assert repr(seq) == repr(torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU()))


@pytest.mark.parametrize("kw,msg", [
    ({"groups": 3}, "in_channels must be divisible by groups"),
    ({"groups": 0}, "groups must be a positive integer"),
    ({"padding": "full"}, "Invalid padding string 'full'"),
    ({"padding": "same", "stride": 2}, "padding='same' is not supported for strided convolutions"),
    ({"padding_mode": "mirror"}, "padding_mode must be one of .*'mirror'"),
], ids=["groups-in", "groups-0", "padding-string", "same-stride", "padding-mode"])
def test_constructor_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        nn.Conv2d(4, 8, 3, **kw)
    with pytest.raises(ValueError):
        torch.nn.Conv2d(4, 8, 3, **kw)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 6, 3, groups=4)


def test_forward_errors_name_the_shapes():
    m = nn.Conv2d(3, 8, 3)
    with pytest.raises(RuntimeError, match=r"conv2d: .*weight of size \[8, 3, 3, 3\].*input\[2, 4, 5, 5\]"):
        m(pg.ones(2, 4, 5, 5))


def test_modules_match_torch():
    x = np.random.default_rng(1).standard_normal((2, 4, 12)).astype(np.float32)
    for name, args, kw in [("Conv1d", (4, 6, 3), {"padding": 1, "bias": False}),
                           ("Conv1d", (4, 8, 5), {"stride": 2, "groups": 2, "padding_mode": "circular", "padding": 2}),
                           ("MaxPool1d", (3,), {"stride": 2}), ("AvgPool1d", (4,), {"stride": 2}),
                           ("AdaptiveAvgPool1d", (5,), {})]:
        p, t = getattr(pg.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
        assert repr(p) == repr(t), name
        if name == "Conv1d":
            assert [(n, tuple(v.shape)) for n, v in p.named_parameters()] == \
                [(n, tuple(v.shape)) for n, v in t.named_parameters()]
            with torch.no_grad():
                for (_, tv), (_, pv) in zip(t.named_parameters(), p.named_parameters()):
                    tv.copy_(torch.tensor(pv.detach().numpy()))
        np.testing.assert_allclose(p(pg.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("cls,args,kw,shape", [
    ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}, (2, 4, 5, 5)),
    ("ConvTranspose2d", (3, 2, (2, 3)), {"bias": False, "dilation": 2}, (3, 4, 4)),
    ("ConvTranspose1d", (4, 2, 3), {"stride": 3}, (2, 4, 6)),
])
def test_conv_transpose_modules(cls, args, kw, shape, device):
    tm = getattr(torch.nn, cls)(*args, **kw)
    pm = getattr(pg.nn, cls)(*args, **kw)
    assert repr(pm) == repr(tm)
    assert {k: tuple(v.shape) for k, v in pm.state_dict().items()} == \
           {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    bound = 1 / np.sqrt(tm.weight.shape[1] * np.prod(tm.weight.shape[2:]))   # fan_in of (in, out/g, k)
    assert np.abs(pm.weight.detach().numpy()).max() <= bound + 1e-6
    pm.load_state_dict({k: pg.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    pm = pm.to(device)
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    want = tm(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(pm(pg.tensor(x, device=device)).cpu().detach().numpy(), want, atol=1e-5)


def test_conv_transpose_output_size(device):
    tm, pm = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2), pg.nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2)
    pm.load_state_dict({k: pg.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    pm = pm.to(device)
    x = np.random.default_rng(1).standard_normal((1, 4, 5, 5)).astype("float32")
    for size in [(12, 12), [1, 6, 11, 12], (11, 11)]:
        want = tm(torch.tensor(x), output_size=size).detach().numpy()
        got = pm(pg.tensor(x, device=device), output_size=size).cpu().detach().numpy()
        np.testing.assert_allclose(got, want, atol=1e-5)
    with pytest.raises(ValueError, match="requested an output size"):
        pm(pg.tensor(x, device=device), output_size=(20, 20))
    with pytest.raises(ValueError, match="padding mode"):
        pg.nn.ConvTranspose2d(4, 6, 3, padding_mode="reflect")
