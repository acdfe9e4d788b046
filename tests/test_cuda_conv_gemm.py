"""Convolutions with a one-pixel output run as one GEMM over the taps that read the input
(backends/cuda/conv_gemm.py): forward and both gradients against PyTorch in float64 math, for
whole and partial input windows, asymmetric padding, stride and bias; and the geometries it
must leave to cuDNN. Marked `gpu`."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
import paragrad.nn.functional as F

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _need_cuda():
    if not pg.cuda.is_available():
        pytest.fail("gpu tests need a CUDA device (run them through scripts/gpu-check)")


ONE_PIXEL = [  # (x shape, w shape, stride, padding)
    ((4, 8, 1, 1), (6, 8, 3, 3), 1, 1),          # ResNet's last stage: the centre tap only
    ((4, 8, 2, 2), (6, 8, 3, 3), 2, 1),          # stride 2 on a 2x2 map: four taps, all of x
    ((4, 8, 2, 2), (6, 8, 1, 1), 2, 0),          # 1x1 stride-2 downsample: x's first pixel only
    ((2, 3, 3, 3), (4, 3, 2, 2), 2, 0),          # x's last row and column unread
    ((3, 5, 3, 3), (7, 5, 5, 5), 1, 1),          # a 3x3 window of a 5x5 kernel
    ((2, 3, 4, 4), (5, 3, 4, 4), 1, 0),          # no padding: every tap, the plain GEMM
    ((2, 3, 1, 1), (4, 3, 2, 2), 1, "same"),     # asymmetric: one row/column at the bottom/right
]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("xs,ws,stride,padding", ONE_PIXEL)
def test_one_pixel_conv_matches_torch(xs, ws, stride, padding, bias):
    from paragrad.backends.cuda import conv_gemm
    pads = ((0, 1), (0, 1)) if padding == "same" else ((padding, padding), (padding, padding))
    assert conv_gemm._windows(xs, ws, (stride, stride), pads, (1, 1), 1) is not None
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    gy = rng.standard_normal((xs[0], ws[0], 1, 1))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = TF.conv2d(tx, tw, tb if bias else None, stride, padding)
    ty.backward(torch.tensor(gy))
    px, pw, pb = (pg.tensor(a.astype(np.float32), device="cuda", requires_grad=True) for a in (x, w, b))
    py = F.conv2d(px, pw, pb if bias else None, stride, padding)
    py.backward(pg.tensor(gy.astype(np.float32), device="cuda"))
    pairs = [(py, ty), (px.grad, tx.grad), (pw.grad, tw.grad)] + ([(pb.grad, tb.grad)] if bias else [])
    for p, t in pairs:
        assert tuple(p.shape) == tuple(t.shape)
        np.testing.assert_allclose(p.detach().cpu().numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", [
    ((2, 4, 3, 3), (4, 4, 3, 3), 1, 1, 1, 1),    # a 3x3 output
    ((2, 4, 3, 3), (4, 2, 3, 3), 1, 0, 1, 2),    # groups
    ((2, 4, 5, 5), (4, 4, 3, 3), 1, 0, 2, 1),    # dilation
    ((2, 4, 1, 1), (4, 4, 3, 3), 1, 0, 1, 1),    # a kernel larger than the padded input (invalid)
])
def test_geometries_left_to_cudnn(xs, ws, stride, padding, dilation, groups):
    from paragrad.backends.cuda import conv_gemm
    p = ((padding, padding), (padding, padding))
    assert conv_gemm._windows(xs, ws, (stride, stride), p, (dilation, dilation), groups) is None
