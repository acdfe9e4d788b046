"""float16/bfloat16 reductions accumulate in float32 and round once, as torch's opmath: a mean
of values whose sum overflows float16 is still the value, a variance of large values is not
inf, and a bfloat16 softmax over thousands of entries still sums to 1. Each case fails when
the reduction accumulates in the input's own dtype."""
import numpy as np
import pytest

import paragrad as pg
from tests.helpers import check_op, lib

RNG = np.random.default_rng(0)
INPUTS = {   # (name, float32 values): each overflows or drifts when summed in half precision
    "sum over float16 max": np.full((4, 300), 1000.0, np.float32),
    "large spread": (RNG.standard_normal((4, 300)) * 300).astype(np.float32),
    "many near 1": (RNG.random((2, 5000)) * 0.1 + 1).astype(np.float32),
}


def _f(m):
    return lib(m).nn.functional


OPS = {
    "mean": lambda x: x.mean(-1), "mean all": lambda x: x.mean(), "var": lambda x: x.var(-1),
    "std": lambda x: x.std(-1), "var all": lambda x: x.var(), "std unbiased=False": lambda x: x.std(-1, unbiased=False),
    "var_mean": lambda x: lib(x).var_mean(x, -1), "std_mean": lambda x: lib(x).std_mean(x, -1),
    "norm": lambda x: x.norm(dim=-1), "vector_norm 3": lambda x: lib(x).linalg.vector_norm(x / 100, 3, dim=-1),
    "dist": lambda x: lib(x).dist(x, x.detach() * 0),
    "normalize": lambda x: _f(x).normalize(x, dim=-1),
    "softmax": lambda x: (lib(x).softmax(x / 100, -1) * x.detach()).sum(-1),
    "log_softmax": lambda x: (lib(x).log_softmax(x / 100, -1) * x.detach()).sum(-1),
    "layer_norm": lambda x: _f(x).layer_norm(x, (x.shape[-1],)),
    # over the leading axes, as a Linear layer's bias gradient (a GEMM with ones on CUDA)
    "sum dim 0": lambda x: x.sum(0), "sum dim 0 keepdim": lambda x: x.sum(0, keepdim=True),
    "sum leading 2 of 3": lambda x: x.reshape(2, x.shape[0] // 2, -1).sum((0, 1)),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("what", INPUTS)
@pytest.mark.parametrize("op", OPS)
def test_half_precision_reductions_accumulate_in_float32(op, what, dtype, device):
    data = INPUTS[what]
    # one rounding step of the half dtype at the values' scale: torch rounds once, so do we
    atol = 2.0 if what == "large spread" or op == "dist" else None
    check_op(OPS[op], [], dtype=dtype, device=device, inputs=[data], atol=atol)


def test_float16_mean_of_values_whose_sum_overflows(device):
    x = pg.full((100,), 1000.0, dtype=pg.float16, device=device)
    assert x.mean().item() == 1000.0
    assert x.var().item() == 0.0 and x.std().item() == 0.0
    assert x.mean().dtype is pg.float16 and x.std().dtype is pg.float16
    assert x.sum().item() == float("inf")      # the sum itself does overflow float16, as torch's
