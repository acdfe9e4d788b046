"""F.linear and F.bilinear against PyTorch: values and gradients for every input layout."""
from __future__ import annotations

import pytest
import torch.nn.functional as TF

import paragrad.nn.functional as F
from tests.helpers import check_op, lib


@pytest.mark.parametrize("shapes", [[(5, 3), (4, 3), (4,)], [(3,), (4, 3), (4,)], [(2, 5, 3), (4, 3), (4,)],
                                    [(5, 3), (4, 3)], [(2, 5, 3), (4, 3)], [(5, 3), (3,)]])
def test_linear(shapes, device):
    check_op(lambda *a: F.linear(*a), shapes, device=device, torch_fn=TF.linear)


def test_linear_bias_broadcast_float64(device):
    check_op(lambda x, w, b: F.linear(x, w, b), [(2, 3, 6), (5, 6), (5,)], dtype="float64",
             device=device, torch_fn=TF.linear)


@pytest.mark.parametrize("shapes", [[(64, 48), (32, 48), (32,)], [(4, 16, 48), (32, 48), (32,)]])
def test_linear_bfloat16(shapes, device):
    """bf16: on CUDA the bias is added in the GEMM's epilogue, and its gradient is a product
    with a ones vector."""
    check_op(lambda *a: F.linear(*a), shapes, dtype="bfloat16", device=device, torch_fn=TF.linear)


def F_of(x):
    return lib(x).nn.functional


@pytest.mark.parametrize("lead,bias", [((4,), True), ((2, 3), False), ((), True)])
def test_bilinear_functional(device, lead, bias):
    shapes = [lead + (3,), lead + (5,), (2, 3, 5)] + ([(2,)] if bias else [])
    check_op(lambda a, b, w, *bb: F_of(a).bilinear(a, b, w, *bb), shapes, device=device)
