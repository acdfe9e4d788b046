"""Convolutions over maps of a few pixels as one dense GEMM (backends/cuda/matmul/conv_gemm.py):
forward and both gradients against PyTorch in float64, for ResNet's small-map geometries,
partial kernels, stride, asymmetric padding and bias; and the geometries it must leave to
cuDNN. Marked `gpu`."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
import paragrad.nn.functional as F

pytestmark = pytest.mark.gpu


def _pads(padding):
    return ((0, 1), (0, 1)) if padding == "same" else ((padding, padding), (padding, padding))


DENSE = [  # (x shape, w shape, stride, padding)
    ((4, 8, 1, 1), (6, 8, 3, 3), 1, 1),          # a 1x1 map: the centre tap only
    ((4, 8, 2, 2), (6, 8, 3, 3), 1, 1),          # a 2x2 map: every pixel pair is some tap
    ((4, 8, 2, 2), (6, 8, 3, 3), 2, 1),          # stride 2 from 2x2 to 1x1: four taps
    ((3, 5, 3, 3), (7, 5, 5, 5), 1, 1),          # a 3x3 window of a 5x5 kernel
    ((2, 3, 4, 4), (5, 3, 4, 4), 1, 0),          # no padding, 1x1 output: every tap
    ((2, 3, 3, 2), (4, 3, 3, 2), 1, 1),          # non-square map and kernel
    ((2, 3, 1, 1), (4, 3, 2, 2), 1, "same"),     # asymmetric: one row/column at the bottom/right
]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("xs,ws,stride,padding", DENSE)
def test_dense_conv_matches_torch(xs, ws, stride, padding, bias):
    from paragrad.backends.cuda.matmul import conv_gemm
    assert conv_gemm._index_tables(xs, ws, (stride, stride), _pads(padding)) is not None
    rng = np.random.default_rng(sum(xs) + sum(ws))
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = TF.conv2d(tx, tw, tb if bias else None, stride, padding)
    gy = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(gy))
    px, pw, pb = (pg.tensor(a.astype(np.float32), device="cuda", requires_grad=True) for a in (x, w, b))
    py = F.conv2d(px, pw, pb if bias else None, stride, padding)
    py.backward(pg.tensor(gy.astype(np.float32), device="cuda"))
    pairs = [(py, ty), (px.grad, tx.grad), (pw.grad, tw.grad)] + ([(pb.grad, tb.grad)] if bias else [])
    for p, t in pairs:
        assert tuple(p.shape) == tuple(t.shape)
        np.testing.assert_allclose(p.detach().cpu().numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-4)


def test_dense_conv_is_deterministic_and_captured_by_jit():
    pg.manual_seed(0)
    conv = pg.nn.Conv2d(16, 32, 3, padding=1).to("cuda")
    x = pg.randn(8, 16, 2, 2, device="cuda")

    def grads():
        conv.zero_grad()
        conv(x).square().sum().backward()
        return conv.weight.grad.cpu().numpy().copy()

    first = grads()
    assert np.array_equal(first, grads())

    @pg.jit
    def step(x):
        conv.zero_grad()
        loss = conv(x).square().sum()
        loss.backward()
        return loss
    for _ in range(3):
        step(x)
    assert np.array_equal(conv.weight.grad.cpu().numpy(), first)


@pytest.mark.parametrize("xs,ws,stride,padding", [
    ((2, 4, 4, 4), (4, 4, 3, 3), 1, 1),          # a 4x4 map: M 39 % nonzero
    ((2, 4, 2, 2), (4, 4, 1, 1), 2, 0),          # 1x1 stride-2 downsample: 25 % nonzero
    ((2, 4, 32, 32), (4, 4, 3, 3), 1, 1),        # a large map
    ((1, 512, 2, 2), (1024, 512, 3, 3), 1, 1),   # M and its tables too large
])
def test_sparse_or_large_maps_are_left_to_cudnn(xs, ws, stride, padding):
    from paragrad.backends.cuda.matmul import conv_gemm
    assert conv_gemm._index_tables(xs, ws, (stride, stride), _pads(padding)) is None


def test_other_dtypes_groups_and_dilation_are_left_to_cudnn():
    import cupy
    from paragrad.backends.cuda.matmul import conv_gemm
    p = ((1, 1), (1, 1))
    x, w = cupy.ones((2, 4, 2, 2), np.float32), cupy.ones((4, 4, 3, 3), np.float32)
    assert conv_gemm._plan(x, w, (1, 1), p, (1, 1), 1) is not None
    assert conv_gemm._plan(x.astype(np.float16), w.astype(np.float16), (1, 1), p, (1, 1), 1) is None
    assert conv_gemm._plan(x, w[:, :2], (1, 1), p, (1, 1), 2) is None
    assert conv_gemm._plan(x, w, (1, 1), p, (2, 2), 1) is None
