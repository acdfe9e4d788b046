"""max_pool2d, avg_pool2d and adaptive_avg_pool2d against torch.nn.functional (values, indices,
gradients, double backward), finite differences in float64, the modules' reprs, and argument
errors."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import _np, check_op, fd_check, make_input

TF, PF = torch.nn.functional, pg.nn.functional

# (input shape, max_pool2d keyword arguments)
MAX_CASES = [
    ((2, 3, 6, 6), {"kernel_size": 2}),
    ((2, 3, 7, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((2, 2, 7, 6), {"kernel_size": 3, "stride": 2, "ceil_mode": True}),
    ((1, 2, 8, 9), {"kernel_size": (2, 3), "stride": (1, 2), "padding": (1, 1), "dilation": (2, 1)}),
    ((2, 2, 9, 9), {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True}),
    ((3, 5, 5), {"kernel_size": 3, "stride": 1, "padding": 1}),            # unbatched
    ((2, 2, 5, 5), {"kernel_size": 2, "stride": 3}),                       # gaps between windows
    ((2, 2, 4, 5), {"kernel_size": 1, "stride": [1]}),
    ((1, 1, 5, 5), {"kernel_size": 5}),
]
AVG_CASES = [
    ((2, 3, 6, 6), {"kernel_size": 2}),
    ((2, 3, 7, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((2, 3, 7, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False}),
    ((2, 2, 7, 6), {"kernel_size": 3, "stride": 2, "ceil_mode": True}),
    ((2, 2, 8, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ((2, 2, 8, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                    "count_include_pad": False}),
    ((1, 2, 8, 9), {"kernel_size": (2, 3), "stride": (1, 2), "padding": (1, 1), "divisor_override": 4}),
    ((3, 5, 5), {"kernel_size": 3, "stride": 1, "padding": 1, "count_include_pad": False}),  # unbatched
    ((2, 2, 5, 5), {"kernel_size": 2, "stride": 3}),
]
ADAPTIVE_CASES = [
    ((2, 3, 6, 6), 3), ((2, 3, 7, 5), (3, 2)), ((2, 2, 5, 7), (4, None)), ((2, 2, 6, 6), 1),
    ((3, 5, 5), (5, 5)), ((1, 2, 4, 4), (6, 7)), ((2, 2, 10, 9), (None, 4)),
    ((2, 4, 1, 1), 1), ((3, 4, 6), (2, 3)),                              # (equal windows: a mean)
]


def _ids(cases):
    return [f"{i}-{list(s)}-" + (",".join(f"{k}={v}" for k, v in kw.items()) if isinstance(kw, dict)
                                  else str(kw)) for i, (s, kw) in enumerate(cases)]


def _fn(name, kw):
    def fn(x):
        lib = TF if isinstance(x, torch.Tensor) else PF
        return getattr(lib, name)(x, **kw) if isinstance(kw, dict) else getattr(lib, name)(x, kw)
    return fn


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("shape,kw", MAX_CASES, ids=_ids(MAX_CASES))
def test_max_pool2d_matches_torch(shape, kw, dtype, device):
    check_op(_fn("max_pool2d", dict(kw, return_indices=True)), [shape], dtype=dtype, device=device)


@pytest.mark.parametrize("shape,kw", [MAX_CASES[1], MAX_CASES[4]], ids=_ids([MAX_CASES[1], MAX_CASES[4]]))
def test_max_pool2d_ties_go_to_first(shape, kw, device):
    # values from {-1, 0, 1}: most windows hold several maxima
    x = np.random.default_rng(3).integers(-1, 2, size=shape).astype(np.float64)
    check_op(_fn("max_pool2d", dict(kw, return_indices=True)), [shape], dtype="float64",
             device=device, inputs=[x])


def test_max_pool2d_infinities_and_nan(device):
    x = np.full((1, 2, 5, 5), -np.inf)
    x[0, 1, 1:4, 2] = np.inf
    x[0, 1, 0, 0] = np.nan
    x[0, 1, 4, 4] = np.nan
    kw = {"kernel_size": 3, "stride": 2, "padding": 1, "return_indices": True}
    check_op(_fn("max_pool2d", kw), [x.shape], dtype="float64", device=device, inputs=[x])


NHWC_CASES = [((2, 8, 7, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
              ((1, 16, 9, 8), {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True}),
              ((2, 8, 6, 6), {"kernel_size": 2})]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("shape,kw", NHWC_CASES, ids=_ids(NHWC_CASES))
def test_max_pool2d_channels_last_matches_torch(shape, kw, dtype, device):
    """Channels-last inputs with C a multiple of 8 (on CUDA the kernels that take 16 bytes of
    channels a thread): values, indices and gradients as torch's, with ties and NaNs."""
    x = np.random.default_rng(4).integers(-1, 2, size=shape).astype(np.float64)
    x[0, 1, 2, 3] = x[-1, -1, 0, 0] = np.nan

    def fn(t):
        lib = TF if isinstance(t, torch.Tensor) else PF
        layout = torch.channels_last if isinstance(t, torch.Tensor) else pg.channels_last
        return lib.max_pool2d(t.contiguous(memory_format=layout), return_indices=True, **kw)
    check_op(fn, [shape], dtype=dtype, device=device, inputs=[x.astype(np.float32)])


def test_max_pool2d_integers(device):
    x = np.random.default_rng(0).integers(-128, 5, size=(2, 3, 6, 7)).astype(np.int32)
    x[0, 0, :2, :2] = np.iinfo(np.int32).min            # the minimum beside the padding
    kw = {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "return_indices": True}
    check_op(_fn("max_pool2d", kw), [x.shape], device=device, inputs=[x])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,kw", AVG_CASES, ids=_ids(AVG_CASES))
def test_avg_pool2d_matches_torch(shape, kw, dtype, device):
    check_op(_fn("avg_pool2d", kw), [shape], dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,size", ADAPTIVE_CASES, ids=_ids(ADAPTIVE_CASES))
def test_adaptive_avg_pool2d_matches_torch(shape, size, dtype, device):
    check_op(_fn("adaptive_avg_pool2d", size), [shape], dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name,kw", [
    ("max_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1, "return_indices": True}),
    ("avg_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("adaptive_avg_pool2d", (3, 2)),
])
def test_pool_half_precision(name, kw, dtype, device):
    check_op(_fn(name, kw), [(2, 3, 7, 6)], dtype=dtype, device=device)


@pytest.mark.parametrize("name,kw", [("max_pool2d", {"kernel_size": 2, "return_indices": True}),
                                     ("avg_pool2d", {"kernel_size": 2}), ("adaptive_avg_pool2d", 3)])
def test_pool_empty_batch(name, kw, device):
    check_op(_fn(name, kw), [(0, 3, 6, 6)], device=device)


@pytest.mark.parametrize("name,shape,kw", [
    ("max_pool2d", (1, 2, 5, 5), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("max_pool2d", (2, 4, 5), {"kernel_size": 2, "dilation": 2}),
    ("avg_pool2d", (1, 2, 5, 5), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                                  "count_include_pad": False}),
    ("avg_pool2d", (2, 4, 5), {"kernel_size": 2, "divisor_override": 3}),
    ("adaptive_avg_pool2d", (1, 2, 5, 7), (3, 4)),
])
def test_pool_finite_differences(name, shape, kw, device):
    # distinct values keep max_pool2d's argmax away from ties under the perturbation
    x = np.random.default_rng(0).permutation(int(np.prod(shape))).reshape(shape) * 0.1
    fd_check(_fn(name, kw), [shape], device=device, inputs=[x])


@pytest.mark.parametrize("name,kw", [
    ("max_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("avg_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False}),
    ("adaptive_avg_pool2d", (3, 2)),
])
@pytest.mark.parametrize("shape", [(2, 2, 7, 6), (2, 7, 6)], ids=["batched", "unbatched"])
def test_pool_double_backward(name, kw, shape, device):
    x = make_input(shape, "float64", rng=np.random.default_rng(1))
    w = make_input(shape, "float64", rng=np.random.default_rng(2))
    grads = []
    for lib, mk in ((TF, lambda a, g: torch.tensor(a, requires_grad=g)),
                    (PF, lambda a, g: pg.tensor(a, dtype=pg.float64, device=device, requires_grad=g))):
        xt = mk(x, True)
        y = getattr(lib, name)(xt, **kw) if isinstance(kw, dict) else getattr(lib, name)(xt, kw)
        gy = mk(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape)), True)
        mod = torch.autograd if lib is TF else pg.autograd
        (gx,) = mod.grad(y, xt, gy, create_graph=True)
        (gx * mk(w, False)).sum().backward()
        grads.append((_np(gx), _np(gy.grad)))
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, atol=1e-12)


def test_modules_match_torch(device):
    pairs = [((2,), {}), ((3,), {"stride": 1, "padding": 1, "dilation": 2, "ceil_mode": True}),
             (((2, 3),), {"stride": (2, 1), "padding": (1, 0)})]
    x = make_input((2, 3, 8, 8), "float32")
    xt, xp = torch.tensor(x), pg.tensor(x, device=device)
    mods = ([(torch.nn.MaxPool2d(*a, **k), pg.nn.MaxPool2d(*a, **k)) for a, k in pairs]
            + [(torch.nn.MaxPool2d(2, return_indices=True), pg.nn.MaxPool2d(2, return_indices=True))]
            + [(torch.nn.AvgPool2d(*a, **{k: v for k, v in kw.items() if k != "dilation"}),
                pg.nn.AvgPool2d(*a, **{k: v for k, v in kw.items() if k != "dilation"}))
               for a, kw in pairs]
            + [(torch.nn.AvgPool2d(3, 2, 1, True, False, 5), pg.nn.AvgPool2d(3, 2, 1, True, False, 5))]
            + [(torch.nn.AdaptiveAvgPool2d(s), pg.nn.AdaptiveAvgPool2d(s)) for s in (1, (3, None), [2, 5])])
    for tm, pm in mods:
        assert repr(pm) == repr(tm)
        to, po = tm(xt), pm(xp)
        to, po = (to, po) if isinstance(to, tuple) else ((to,), (po,))
        for a, b in zip(po, to):
            np.testing.assert_allclose(_np(a), _np(b), atol=1e-6)


@pytest.mark.parametrize("call,match", [
    (lambda x: PF.max_pool2d(x[0, 0], 2), r"max_pool2d: Expected 3D or 4D .* \[6, 6\]"),
    (lambda x: PF.max_pool2d(x, 0), r"max_pool2d: kernel size should be greater than zero"),
    (lambda x: PF.max_pool2d(x, 2, stride=0), r"max_pool2d: stride should be greater than zero"),
    (lambda x: PF.max_pool2d(x, 2, dilation=0), r"max_pool2d: dilation should be greater than zero"),
    (lambda x: PF.max_pool2d(x, 2, padding=2), r"max_pool2d: pad should be at most half of effective"),
    (lambda x: PF.max_pool2d(x, (1, 2, 3)), r"max_pool2d: kernel_size must either"),
    (lambda x: PF.max_pool2d(x, 7), r"max_pool2d: Given input size: \(3x6x6\)\. Calculated output "
                                    r"size: \(3x0x0\)\. Output size is too small"),
    (lambda x: PF.max_pool2d(x > 0, 2), r"max_pool2d: not implemented for 'bool'"),
    (lambda x: PF.avg_pool2d(x, 3, padding=2), r"avg_pool2d: pad should be at most half of kernel"),
    (lambda x: PF.avg_pool2d(x, 2, divisor_override=0), r"avg_pool2d: divisor must be not zero"),
    (lambda x: PF.avg_pool2d(x.long(), 2), r"avg_pool2d: not implemented for 'int64' .* \[2, 3, 6, 6\]"),
    (lambda x: PF.adaptive_avg_pool2d(x, (1, 2, 3)), r"adaptive_avg_pool2d: output_size must be"),
    (lambda x: PF.adaptive_avg_pool2d(x, -1), r"adaptive_avg_pool2d: output_size must be"),
    (lambda x: PF.adaptive_avg_pool2d(x[0, 0], 2), r"adaptive_avg_pool2d: Expected 3D or 4D .* \[6, 6\]"),
])
def test_pool_errors(call, match, device):
    x = pg.tensor(make_input((2, 3, 6, 6), "float32"), device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=match):
        call(x)
    assert x.grad is None and x.grad_fn is None
