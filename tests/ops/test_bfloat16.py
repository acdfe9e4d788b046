"""bfloat16 (through ml_dtypes) on every device: a representative op of each family, forward
and gradient against PyTorch's bfloat16, with the bfloat16 tolerances of tests/helpers.py."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op

CASES = [
    ("add", lambda x, y: x + y, [(4, 8), (8,)]),
    ("mul", lambda x, y: x * y, [(4, 8), (4, 8)]),
    ("matmul", lambda x, y: x @ y, [(4, 8), (8, 3)]),
    ("exp", lambda x: x.exp(), [(4, 8)]),
    ("tanh", lambda x: x.tanh(), [(4, 8)]),
    ("relu", lambda x: x.relu(), [(4, 8)]),
    ("gelu", lambda x: (pg if isinstance(x, pg.Tensor) else torch).nn.functional.gelu(x), [(4, 8)]),
    ("sum", lambda x: x.sum(-1), [(4, 64)]),
    ("mean", lambda x: x.mean(), [(4, 64)]),
    ("amax", lambda x: x.amax(0), [(4, 8)]),
    # a language model's sampling on bfloat16 logits: top-k, top-p's sort, greedy argmax
    ("topk", lambda x: x.topk(3, dim=-1).values, [(4, 8)]),
    ("sort", lambda x: x.sort(dim=-1, descending=True).values, [(4, 8)]),
    ("argmax", lambda x: x.argmax(-1), [(4, 8)]),
    ("softmax", lambda x: x.softmax(-1), [(4, 8)]),
    ("log_softmax", lambda x: x.log_softmax(-1), [(4, 8)]),
    ("transpose", lambda x: x.t().reshape(-1), [(4, 8)]),
    ("getitem", lambda x: x[1:, ::2], [(4, 8)]),
    ("cat", lambda x, y: pg.cat([x, y]) if isinstance(x, pg.Tensor) else __import__("torch").cat([x, y]),
     [(2, 8), (3, 8)]),
]


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_bfloat16_matches_torch(name, fn, shapes, device):
    if pg.bfloat16.np is None:
        pytest.fail("bfloat16 needs ml_dtypes (in the dev extra): pip install ml_dtypes")
    check_op(fn, shapes, dtype="bfloat16", device=device)


def test_bfloat16_sum_accumulates_in_float32(device):
    x = pg.full((4096,), 1.0, dtype=pg.bfloat16, device=device)
    assert x.sum().item() == 4096.0          # a bfloat16 accumulator would stop at 256


@pytest.mark.parametrize("op", ["__mul__", "__add__", "__sub__", "__truediv__", "__pow__", "__rmul__",
                                "__radd__", "__rsub__", "__rpow__"])
@pytest.mark.parametrize("scalar", [0.1, 2.5, 1e-3])
def test_bfloat16_with_a_python_float_stays_bfloat16_as_torch(op, scalar, device):
    """NumPy promotes ml_dtypes' bfloat16 with a Python float to float32; torch casts the scalar
    to bfloat16 first and keeps the tensor's dtype."""
    data = [2.5, 0.1, 3.3, -7.7]
    p = getattr(pg.tensor(data, device=device).bfloat16(), op)(scalar)
    t = getattr(torch.tensor(data).bfloat16(), op)(scalar)
    assert p.dtype is pg.bfloat16 and p.cpu()._data.dtype == pg.bfloat16.np
    # pow rounds through exp/log: one bfloat16 step apart at most. On CUDA the scalar stays in
    # float32, as torch's CUDA kernels keep it (bf16(0.1) - 0.1 is 1e-4 there, 0 on the CPU)
    exact = "pow" not in op and device == "cpu"
    np.testing.assert_allclose(p.float().cpu().numpy(), t.float().numpy(), rtol=0 if exact else 8e-3,
                               atol=0 if exact else 2e-4)
