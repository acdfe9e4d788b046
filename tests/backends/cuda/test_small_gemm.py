"""The small-batch GEMMs of the MLP chain (backends/cuda/matmul/small_gemm.py and .cu)
against float64 products: every epilogue, row counts 1..64, column counts that leave partial
tiles, K shorter than one stage and split over clusters; the whole chain through both
implementations (small_gemm's and cuBLASLt's) against torch. Marked `gpu`."""
import numpy as np
import pytest
import torch

import paragrad as pg

pytestmark = pytest.mark.gpu


def _gelu(z):
    return 0.5 * z * (1 + np.tanh(0.7978845608028654 * (z + 0.044715 * z ** 3)))


def _gelu_grad(z):
    t = np.tanh(0.7978845608028654 * (z + 0.044715 * z ** 3))
    return 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * z * z)


SHAPES = [(64, 784, 784), (1, 5, 3), (17, 100, 10), (64, 784, 10), (33, 40, 300), (64, 1024, 512), (8, 33, 1)]


@pytest.mark.parametrize("act", [None, "relu", "gelu_tanh"])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_forward_matches_float64(m, k, n, act):
    import cupy
    from paragrad.backends.cuda.matmul import small_gemm
    rng = np.random.default_rng(m * 1000 + n)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (n, k), (n,)))
    y, aux = small_gemm.linear_act(cupy.asarray(x), cupy.asarray(w), cupy.asarray(b), act)
    z = x.astype(np.float64) @ w.T.astype(np.float64) + b
    want = {None: z, "relu": np.maximum(z, 0), "gelu_tanh": _gelu(z)}[act]
    tol = 1e-5 * np.sqrt(k)
    np.testing.assert_allclose(y.get(), want, rtol=tol, atol=tol)
    if act == "gelu_tanh":
        np.testing.assert_allclose(aux.get(), z, rtol=tol, atol=tol)
    elif act == "relu":
        assert aux is y
    y2, _ = small_gemm.linear_act(cupy.asarray(x), cupy.asarray(w), cupy.asarray(b), act)
    assert (y2 == y).all(), "the split-K sum must be deterministic"


@pytest.mark.parametrize("act_below", [None, "relu", "gelu_tanh"])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_data_grad_matches_float64(m, n, k, act_below):
    """dz (m, n_out=k) @ w (k, n): the GEMM's reduction runs over the layer's outputs."""
    import cupy
    from paragrad.backends.cuda.matmul import small_gemm
    rng = np.random.default_rng(m + 7 * n)
    dz, w, z = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (m, n)))
    aux = np.maximum(z, 0) if act_below == "relu" else z
    dx, db = small_gemm.data_grad(cupy.asarray(dz), cupy.asarray(w), act_below,
                                  None if act_below is None else cupy.asarray(aux))
    d = dz.astype(np.float64) @ w.astype(np.float64)
    if act_below == "relu":
        d = d * (z > 0)
    elif act_below == "gelu_tanh":
        d = d * _gelu_grad(z.astype(np.float64))
    tol = 1e-5 * np.sqrt(k)
    np.testing.assert_allclose(dx.get(), d, rtol=tol, atol=tol)
    if act_below is None:
        assert db is None
    else:
        np.testing.assert_allclose(db.get(), d.sum(0), rtol=tol, atol=tol * np.sqrt(m))


@pytest.mark.parametrize("small", [True, False], ids=["small_gemm", "cublaslt"])
@pytest.mark.parametrize("acts", [("relu", "relu", None), ("gelu_tanh", "relu", "gelu_tanh"), (None, "relu", None)])
def test_chain_both_implementations_match_torch(acts, small, monkeypatch):
    from paragrad.backends.cuda.matmul import mlp
    monkeypatch.setattr(mlp, "_small_chain", lambda h, layers: small)
    rng = np.random.default_rng(0)
    dims = [50, 64, 40, 10]
    ws = [(rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32) for i, o in zip(dims, dims[1:])]
    bs = [rng.standard_normal(o).astype(np.float32) for o in dims[1:]]
    x = rng.standard_normal((32, dims[0])).astype(np.float32)
    g = rng.standard_normal((32, dims[-1])).astype(np.float32)
    pw = [pg.tensor(w, device="cuda", requires_grad=True) for w in ws]
    pb = [pg.tensor(b, device="cuda", requires_grad=True) for b in bs]
    px = pg.tensor(x, device="cuda", requires_grad=True)
    py = pg.ops.neural.linear.mlp(px, list(zip(pw, pb, acts)))
    py.backward(pg.tensor(g, device="cuda"))
    tw = [torch.tensor(w, dtype=torch.float64, requires_grad=True) for w in ws]
    tb = [torch.tensor(b, dtype=torch.float64, requires_grad=True) for b in bs]
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    h = tx
    for w, b, a in zip(tw, tb, acts):
        h = torch.nn.functional.linear(h, w, b)
        h = {None: lambda v: v, "relu": torch.relu,
             "gelu_tanh": lambda v: torch.nn.functional.gelu(v, approximate="tanh")}[a](h)
    h.backward(torch.tensor(g, dtype=torch.float64))
    np.testing.assert_allclose(py.detach().cpu().numpy(), h.detach().numpy(), rtol=1e-4, atol=1e-4)
    for p, t in zip([px] + pw + pb, [tx] + tw + tb):
        np.testing.assert_allclose(p.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)
