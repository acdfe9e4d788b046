"""The CPU backend runs the GEMMs of float16 and bfloat16 tensors as float32 GEMMs on float32
copies, rounded once: NumPy's own float16 matmul has no BLAS path (a (64, 784) @ (784, 784)
product took 260 ms against 1.3 ms in float32 on 2 cores, which made `paragrad train mnist
--precision fp16` take minutes an epoch), and ml_dtypes' bfloat16 one returns float32."""
import numpy as np
import pytest

import paragrad as pg
from paragrad.ops.neural.linear import linear_act


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_gemms_run_in_float32_and_round_once(monkeypatch, dtype):
    half = getattr(pg, dtype)
    seen = []
    real = np.matmul

    def spy(a, b, *args, **kwargs):
        seen.append((np.asarray(a).dtype.name, np.asarray(b).dtype.name))
        return real(a, b, *args, **kwargs)

    monkeypatch.setattr(np, "matmul", spy)
    x = pg.randn(8, 32, dtype=half, requires_grad=True)
    w = pg.randn(16, 32, dtype=half, requires_grad=True)
    b = pg.randn(16, dtype=half, requires_grad=True)
    for act in ("relu", "gelu_tanh"):
        linear_act(x, w, b, act).sum().backward()                   # the fused Linear+act
    (pg.nn.functional.linear(x, w, b).sum() + (x.reshape(2, 4, 32) @ w.T).sum()).backward()
    assert seen, "no GEMM went through np.matmul"
    assert all(pair == ("float32", "float32") for pair in seen), seen
    for t in (x.grad, w.grad, b.grad, x @ w.T):
        assert t._data.dtype == half.to_numpy()
