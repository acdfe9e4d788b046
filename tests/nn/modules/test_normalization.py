"""nn.LayerNorm against torch.nn.LayerNorm (check_module of modules/test_linear.py: torch's weights copied
over, outputs, input and parameter gradients compared), its init, attributes and repr."""
from __future__ import annotations

import pytest
import torch

import paragrad as pg
import paragrad.nn as nn
from tests.nn.modules.test_linear import check_module


def layer_norm(*args, **kwargs):
    """Build LayerNorm in either library; torch's affine parameters get random values (ones and
    zeros would hide a wrong weight or bias gradient), which check_module copies over."""
    def build(lib):
        m = lib.LayerNorm(*args, **kwargs)
        if lib is torch.nn:
            g = torch.Generator().manual_seed(0)
            with torch.no_grad():
                for p in m.parameters():
                    p.uniform_(-2, 2, generator=g)
        return m
    return build


CASES = [
    (layer_norm(8), (4, 8)),
    (layer_norm(8), (2, 3, 8)),
    (layer_norm((3, 8)), (2, 3, 8)),
    (layer_norm([8], eps=1e-3), (5, 8)),
    (layer_norm(8, bias=False), (4, 8)),
    (layer_norm((3, 8), elementwise_affine=False), (2, 3, 8)),
    (layer_norm(6), (6,)),
    # many rows: the CUDA weight and bias gradients add partial column sums of row chunks
    (layer_norm(70), (40, 75, 70)),
    (layer_norm(300), (50, 300)),
]


@pytest.mark.parametrize("build,shape", CASES, ids=[f"{i}-{s}" for i, (_, s) in enumerate(CASES)])
def test_layer_norm_module(build, shape, device):
    check_module(build, shape, device)


def test_layer_norm_module_float64(device):
    check_module(layer_norm((2, 4)), (3, 2, 4), device, dtype="float64")


@pytest.mark.parametrize("args,kwargs,text", [
    ((8,), {}, "(8,), eps=1e-05, elementwise_affine=True, bias=True"),
    (((3, 8),), {"eps": 1e-3}, "(3, 8), eps=0.001, elementwise_affine=True, bias=True"),
    (([8],), {"bias": False}, "(8,), eps=1e-05, elementwise_affine=True, bias=False"),
    ((8,), {"elementwise_affine": False}, "(8,), eps=1e-05, elementwise_affine=False, bias=False"),
    ((8,), {"elementwise_affine": False, "bias": False},
     "(8,), eps=1e-05, elementwise_affine=False, bias=False"),
])
def test_layer_norm_module_repr_and_init(args, kwargs, text, device):
    tm, pm = torch.nn.LayerNorm(*args, **kwargs), nn.LayerNorm(*args, **kwargs, device=device)
    # torch 2.13's repr (the pinned oracle); older torch versions leave out "bias=..."
    assert repr(pm) == f"LayerNorm({text})"
    if "bias=" in repr(tm):
        assert repr(pm) == repr(tm)
    assert pm.normalized_shape == tm.normalized_shape and isinstance(pm.normalized_shape, tuple)
    assert (pm.eps, pm.elementwise_affine) == (tm.eps, tm.elementwise_affine)
    assert list(pm.state_dict()) == list(tm.state_dict())
    for n, p in pm.named_parameters():
        t = dict(tm.named_parameters())[n]
        assert tuple(p.shape) == tuple(t.shape) and p.requires_grad
        assert (p.detach().cpu().numpy() == t.detach().numpy()).all(), f"init of {n}"


def test_layer_norm_module_dtype_device(device):
    m = nn.LayerNorm((2, 3), device=device, dtype=pg.float64)
    assert m.weight.dtype is pg.float64 and m.bias.dtype is pg.float64
    assert m.weight.device == pg.device(device)
    y = m(pg.randn(4, 2, 3, dtype=pg.float64, device=device))
    assert y.dtype is pg.float64 and tuple(y.shape) == (4, 2, 3)
    with pytest.raises(RuntimeError, match="layer_norm: Given normalized_shape=\\[2, 3\\]"):
        m(pg.randn(4, 3, 2, dtype=pg.float64, device=device))
