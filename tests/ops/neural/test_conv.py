"""conv2d against torch.nn.functional.conv2d (forward, input/weight/bias gradients), through the
backend fast path (on the CPU with its im2col columns one row per output pixel and channel-major,
whatever the channel count: `path`) and through the composition of primitives; finite
differences in float64; double backward; argument errors."""
import contextlib

import numpy as np
import pytest
import torch

import paragrad as pg
from paragrad.backends import cpu_conv
from paragrad.backends.base import FAST_PATHS, fast_paths
from tests.helpers import _np, check_op, fd_check, make_input

# torch warns that its own 'same' padding with even kernels copies the input
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")

# (input shape, weight shape, bias?, conv2d keyword arguments)
CASES = [
    ((2, 3, 5, 5), (4, 3, 1, 1), True, {}),
    ((2, 3, 6, 6), (4, 3, 3, 3), True, {"padding": 1}),
    ((2, 2, 9, 8), (3, 2, 5, 5), True, {"stride": 2, "padding": 2}),
    ((2, 4, 7, 7), (4, 4, 3, 3), False, {"padding": "same", "dilation": 2}),
    ((1, 2, 6, 7), (3, 2, 4, 2), True, {"padding": "same"}),            # odd total: extra right/bottom
    ((2, 3, 6, 5), (2, 3, 3, 3), True, {"padding": "valid"}),
    ((2, 4, 6, 6), (6, 2, 3, 3), True, {"groups": 2, "padding": 1}),
    ((2, 4, 6, 6), (4, 1, 3, 3), True, {"groups": 4, "padding": 1}),      # depthwise
    ((2, 3, 7, 7), (6, 1, 3, 3), False, {"groups": 3, "stride": 2}),     # depthwise, multiplier 2
    ((3, 6, 6), (4, 3, 3, 3), True, {"padding": 1}),                     # unbatched
    ((4, 5, 5), (4, 2, 3, 3), False, {"groups": 2, "padding": "same"}),  # unbatched, groups
    ((2, 3, 8, 7), (4, 3, 3, 1), True, {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2)}),
    ((2, 2, 9, 9), (3, 2, 2, 2), True, {"stride": 3}),                   # stride > kernel: gaps
    ((1, 2, 8, 8), (2, 2, 3, 3), True, {"stride": 2, "padding": 1, "dilation": 2}),
    ((2, 2, 4, 4), (3, 2, 1, 1), True, {"padding": 1}),                  # padding > kernel reach
    ((2, 1, 6, 6), (8, 1, 3, 3), True, {"padding": 1}),                  # one input channel
    ((2, 2, 5, 7), (3, 2, 5, 3), True, {"stride": (1, 2), "padding": (2, 0)}),
]
IDS = [f"{i}-x{list(xs)}-w{list(ws)}-{'b' if b else 'nob'}-" + ",".join(f"{k}={v}" for k, v in kw.items())
       for i, (xs, ws, b, kw) in enumerate(CASES)]


PATHS = ["by-pixel", "by-channel", "composite"]


@contextlib.contextmanager
def _path(path):
    """The fast path with the CPU's columns by pixel or by channel, or the composition."""
    old = cpu_conv.BY_PIXEL
    cpu_conv.BY_PIXEL = path == "by-pixel"
    try:
        with fast_paths(path != "composite"):
            yield
    finally:
        cpu_conv.BY_PIXEL = old


def _conv(kw):
    def fn(x, w, b=None):
        lib = torch.nn.functional if isinstance(x, torch.Tensor) else pg.nn.functional
        return lib.conv2d(x, w, b, **kw)
    return fn


def _shapes(xs, ws, bias):
    return [xs, ws] + ([(ws[0],)] if bias else [])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs,ws,bias,kw", CASES, ids=IDS)
def test_conv2d_matches_torch(xs, ws, bias, kw, dtype, path, device):
    with _path(path):
        check_op(_conv(kw), _shapes(xs, ws, bias), dtype=dtype, device=device)


@pytest.mark.parametrize("xs,ws,bias,kw", [CASES[2], CASES[4], CASES[8], CASES[10], CASES[13]],
                         ids=[IDS[2], IDS[4], IDS[8], IDS[10], IDS[13]])
@pytest.mark.parametrize("path", PATHS)
def test_conv2d_finite_differences(xs, ws, bias, kw, path, device):
    with _path(path):
        fd_check(_conv(kw), _shapes(xs, ws, bias), device=device)


def _run(xs, ws, kw, path, device, dtype=pg.float32):
    rng = np.random.default_rng(1)
    x = pg.tensor(make_input(xs, "float64", rng=rng), dtype=dtype, device=device, requires_grad=True)
    w = pg.tensor(make_input(ws, "float64", rng=rng), dtype=dtype, device=device, requires_grad=True)
    b = pg.tensor(make_input((ws[0],), "float64", rng=rng), dtype=dtype, device=device, requires_grad=True)
    with _path(path):
        y = pg.conv2d(x, w, b, **kw)
        g = pg.tensor(make_input(tuple(y.shape), "float64", rng=rng), dtype=dtype, device=device)
        (y * g).sum().backward()
    return [_np(t).astype(np.float64) for t in (y.detach(), x.grad, w.grad, b.grad)]


@pytest.mark.parametrize("xs,ws,kw", [((8, 8, 16, 16), (16, 8, 3, 3), {"padding": 1}),
                                      ((4, 6, 15, 13), (6, 2, 3, 5), {"stride": 2, "padding": (1, 2), "groups": 3}),
                                      ((4, 8, 12, 12), (8, 1, 3, 3), {"padding": "same", "groups": 8, "dilation": 2}),
                                      ((5, 6, 9), (4, 5, 2, 2), {"padding": "same"})])
def test_fast_path_agrees_with_composite(xs, ws, kw, device):
    assert {"conv2d", "conv2d_backward"} <= set(FAST_PATHS)
    comp = _run(xs, ws, kw, "composite", device)
    for path in ("by-pixel", "by-channel"):
        for what, a, c in zip(("output", "dx", "dw", "db"), _run(xs, ws, kw, path, device), comp):
            np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-4, err_msg=f"{path}: {what}")


def test_cpu_backend_has_the_fast_paths():
    b = pg.tensor([0.0])._backend
    assert b.fast("conv2d") is not None and b.fast("conv2d_backward") is not None
    with fast_paths(False):
        assert b.fast("conv2d") is None


@pytest.mark.parametrize("path", PATHS)
def test_partial_gradients_and_sum_cotangent(path, device):
    """Only some inputs need grad (the node skips the others); a broadcast cotangent (sum)."""
    rng = np.random.default_rng(0)
    xa, wa = make_input((2, 3, 6, 6), rng=rng), make_input((4, 3, 3, 3), rng=rng)
    for need_x in (True, False):
        x = pg.tensor(xa, device=device, requires_grad=need_x)
        w = pg.tensor(wa, device=device, requires_grad=not need_x)
        xt, wt = torch.tensor(xa, requires_grad=need_x), torch.tensor(wa, requires_grad=not need_x)
        with _path(path):
            pg.conv2d(x, w, stride=2, padding=1).sum().backward()
        torch.nn.functional.conv2d(xt, wt, stride=2, padding=1).sum().backward()
        p, t = (x, xt) if need_x else (w, wt)
        np.testing.assert_allclose(_np(p.grad), t.grad.numpy(), rtol=1e-4, atol=1e-4)
        assert (w if need_x else x).grad is None


@pytest.mark.parametrize("path", PATHS)
def test_non_contiguous_input(path, device):
    with _path(path):
        check_op(lambda x, w: _conv({"padding": 1})(x.transpose(2, 3), w), [(2, 3, 5, 6), (4, 3, 3, 3)],
                 device=device)


@pytest.mark.parametrize("path", PATHS)
def test_empty_batch(path, device):
    with _path(path):
        x = pg.zeros(0, 3, 6, 6, device=device, requires_grad=True)
        w = pg.ones(4, 3, 3, 3, device=device, requires_grad=True)
        y = pg.conv2d(x, w, pg.ones(4, device=device), padding=1)
        assert tuple(y.shape) == (0, 4, 6, 6)
        y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 6, 6) and not _np(w.grad).any()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_forward(dtype, path, device):
    with _path(path):
        check_op(_conv({"padding": 1, "stride": 2}), [(2, 3, 6, 6), (4, 3, 3, 3), (4,)], dtype=dtype,
                 device=device, low=-5, high=5)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("kw,ws", [({"padding": 1, "groups": 2}, (4, 2, 3, 3)), ({"padding": 1, "stride": 2}, (4, 4, 3, 3))],
                         ids=["groups", "strided"])
def test_half_precision(dtype, path, kw, ws, device):
    with _path(path):
        check_op(_conv(kw), [(2, 4, 5, 5), ws, (4,)], dtype=dtype,
                 device=device, low=-1, high=1, atol=5e-2, rtol=5e-2)


@pytest.mark.parametrize("path", ["by-pixel", "by-channel"])
@pytest.mark.parametrize("x_cl,w_cl", [(True, False), (False, True), (True, True), (False, False)])
@pytest.mark.parametrize("stride", [1, 2])
def test_layouts_follow_torch(path, x_cl, w_cl, stride, device):
    """Output and input gradient channels-last when the input or the weight is, the weight
    gradient laid out as the weight: values and strides as torch's."""
    from tests.test_channels_last import _pg_like, _same
    torch.manual_seed(0)
    xt, wt = torch.randn(2, 6, 7, 5), torch.randn(4, 6, 3, 3)
    xt = (xt.to(memory_format=torch.channels_last) if x_cl else xt).requires_grad_()
    wt = (wt.to(memory_format=torch.channels_last) if w_cl else wt).requires_grad_()
    xp, wp = _pg_like(xt, True, device), _pg_like(wt, True, device)
    yt = torch.nn.functional.conv2d(xt, wt, stride=stride, padding=1)
    with _path(path):
        yp = pg.conv2d(xp, wp, stride=stride, padding=1)
        g = torch.randn(yt.shape)
        yp.backward(_pg_like(g, device=device))
    yt.backward(g)
    _same(yp, yt, "output")
    _same(xp.grad, xt.grad, "input gradient")
    _same(wp.grad, wt.grad, "weight gradient")


@pytest.mark.parametrize("kw", [{"stride": (2, 1), "padding": 1, "dilation": (1, 2), "groups": 2},
                                {"padding": "same"}], ids=["strided-groups", "same"])
def test_double_backward(kw, device):
    """create_graph through conv2d (a gradient penalty) matches torch."""
    rng = np.random.default_rng(0)
    arrays = [make_input(s, "float64", rng=rng) for s in [(2, 4, 7, 6), (6, 2, 3, 2), (6,)]]
    if kw.get("groups") is None:
        arrays[1] = make_input((6, 4, 3, 2), "float64", rng=rng)
    results = []
    for lib, conv in ((torch, torch.nn.functional.conv2d), (pg, pg.nn.functional.conv2d)):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in arrays)
        y = conv(x, w, b, **kw)
        gx, gw = lib.autograd.grad((y * y).sum(), (x, w), create_graph=True)
        ((gx * gx).sum() + (gw * gw * gw).sum()).backward()
        results.append([t.grad.detach().numpy() for t in (x, w, b)])
    for a, p in zip(*results):
        np.testing.assert_allclose(p, a, rtol=1e-9, atol=1e-9)


def test_exports():
    assert pg.conv2d is pg.nn.functional.conv2d is pg.ops.neural.conv.conv2d


# ---- errors: PyTorch's rules, messages naming conv2d and the shapes -----------------------------
ERRORS = [
    ((1, 4, 5, 5), (8, 3, 3, 3), None, {}, r"conv2d: Given groups=1, weight of size \[8, 3, 3, 3\], "
     r"expected input\[1, 4, 5, 5\] to have 3 channels, but got 4 channels instead"),
    ((1, 4, 5, 5), (8, 2, 3, 3), None, {"groups": 3}, r"conv2d: Given groups=3, expected weight to be "
     r"divisible by 3 at dimension 0, but got weight of size \[8, 2, 3, 3\]"),
    ((1, 4, 5, 5), (6, 3, 3, 3), None, {"groups": 2}, r"conv2d: Given groups=2, weight of size "
     r"\[6, 3, 3, 3\], expected input\[1, 4, 5, 5\] to have 6 channels"),
    ((1, 4, 5, 5), (8, 4, 3, 3), None, {"groups": 0}, r"conv2d: non-positive groups"),
    ((1, 4, 5, 5), (8, 4, 3, 3), None, {"stride": 2, "padding": "same"},
     r"conv2d: padding='same' is not supported for strided convolutions"),
    ((1, 4, 5, 5), (8, 4, 3, 3), None, {"padding": "full"}, r"conv2d: Invalid padding string: 'full'"),
    ((1, 4, 2, 2), (8, 4, 3, 3), None, {}, r"conv2d: Calculated padded input size per channel: "
     r"\(2 x 2\)\. Kernel size: \(3 x 3\)"),
    ((1, 4, 5, 5), (8, 4, 3, 3), (4,), {}, r"conv2d: Given weight of size \[8, 4, 3, 3\], expected "
     r"bias to be 1-dimensional with 8 elements, but got bias of size \[4\]"),
    ((1, 4, 5, 5), (8, 4, 3, 3), None, {"stride": 0}, r"conv2d: non-positive stride"),
    ((1, 4, 5, 5), (8, 4, 3, 3), None, {"padding": -1}, r"conv2d: negative padding"),
    ((1, 4, 5, 5), (8, 4, 3, 3), None, {"dilation": (1, 0)}, r"conv2d: dilation should be greater than zero"),
    ((1, 4, 5, 5), (8, 4, 3, 3), None, {"stride": (1, 2, 3)}, r"conv2d: expected stride to be a single "
     r"integer value or a list of 2 values"),
    ((4, 5, 5, 5, 1), (8, 4, 3, 3), None, {}, r"conv2d: Expected 3D \(unbatched\) or 4D \(batched\) "
     r"input to conv2d, but got input of size: \[4, 5, 5, 5, 1\]"),
    ((1, 4, 5, 5), (8, 4, 3), None, {}, r"conv2d: expected a 4-D weight .* \[8, 4, 3\]"),
]


@pytest.mark.parametrize("xs,ws,bs,kw,msg", ERRORS, ids=[e[-1][:40] for e in ERRORS])
def test_errors(xs, ws, bs, kw, msg, device):
    x = pg.ones(*xs, device=device, requires_grad=True)
    w = pg.ones(*ws, device=device)
    b = pg.ones(*bs, device=device) if bs else None
    with pytest.raises(RuntimeError, match=msg):
        pg.conv2d(x, w, b, **kw)
    with pytest.raises(RuntimeError):       # torch rejects the same arguments
        torch.nn.functional.conv2d(torch.ones(xs), torch.ones(ws), torch.ones(bs) if bs else None, **kw)
    assert x.grad is None and x.grad_fn is None


def test_dtype_errors(device):
    x, w = pg.ones(1, 2, 4, 4, device=device), pg.ones(3, 2, 3, 3, device=device, dtype=pg.float64)
    with pytest.raises(RuntimeError, match=r"conv2d: expected input, weight and bias of one dtype.*"
                                           r"float32, float64.*\[1, 2, 4, 4\].*\[3, 2, 3, 3\]"):
        pg.conv2d(x, w)
    with pytest.raises(RuntimeError, match="conv2d: not implemented for 'Bool'"):
        pg.conv2d(x.bool(), w.bool())
    with pytest.raises(TypeError, match="conv2d"):
        pg.conv2d(np.ones((1, 2, 4, 4)), w)
