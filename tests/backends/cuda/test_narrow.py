"""The narrow layer's GEMMs (backends/cuda/matmul/narrow.py and .cu), the classifier head on top
of the MLP chain: forward, data gradient (with the ReLU below) and weight gradients against
float64 products in float32, bfloat16 and float16; a chain with and without them. Marked `gpu`."""
import numpy as np
import pytest

import paragrad as pg

pytestmark = pytest.mark.gpu

DTYPES = {"float32": 1e-5, "bfloat16": 1e-2, "float16": 2e-3}     # relative error per sqrt(K)
SHAPES = [(64, 784, 10), (1, 8, 1), (17, 40, 16), (64, 16, 3), (33, 96, 7)]


def _cast(a, dtype):
    import cupy
    if dtype == "bfloat16":
        return cupy.asarray(pg.tensor(a).to(pg.bfloat16).cuda()._data)
    return cupy.asarray(a.astype(dtype))


def _host(a):
    """A device array of any float dtype as float64 NumPy."""
    import cupy
    return cupy.asnumpy(a.astype(cupy.float32)).astype(np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_narrow_gemms_match_float64(m, k, n, dtype):
    from paragrad.backends.cuda.matmul import narrow
    rng = np.random.default_rng(m * 100 + n)
    x, w, b, dz = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (n, k), (n,), (m, n)))
    x[x < 0] = 0                    # x is the ReLU output below: zeros mask its derivative
    cx, cw, cb, cdz = (_cast(a, dtype) for a in (x, w, b, dz))
    assert narrow.takes(m, cw)
    hx, hw, hb, hdz = (_host(a) for a in (cx, cw, cb, cdz))
    tol = DTYPES[dtype] * np.sqrt(k)
    y = narrow.forward(cx, cw, cb)
    assert y.dtype == cx.dtype and y.shape == (m, n)
    np.testing.assert_allclose(_host(y), hx @ hw.T + hb, rtol=tol, atol=tol)
    for relu_y in (None, cx):
        dx = narrow.data_grad(cdz, cw, relu_y)
        want = hdz @ hw * (1 if relu_y is None else (hx > 0))
        np.testing.assert_allclose(_host(dx), want, rtol=tol, atol=tol)
    dw, db = narrow.weight_grads(cx, cdz)
    np.testing.assert_allclose(_host(dw), hdz.T @ hx, rtol=tol, atol=tol * np.sqrt(m))
    np.testing.assert_allclose(_host(db), hdz.sum(0), rtol=tol, atol=tol * np.sqrt(m))
    assert (narrow.weight_grads(cx, cdz)[0] == dw).all(), "fixed summation order"


def test_narrow_takes_only_what_its_kernels_can():
    import cupy
    from paragrad.backends.cuda.matmul import narrow
    w = cupy.zeros((10, 784), cupy.float32)
    assert narrow.takes(64, w) and not narrow.takes(65, w) and not narrow.takes(0, w)
    assert not narrow.takes(64, cupy.zeros((17, 784), cupy.float32))       # 17 outputs
    assert not narrow.takes(64, cupy.zeros((10, 30), cupy.float32))        # rows not whole 16-byte packs
    assert not narrow.takes(64, cupy.zeros((10, 784), cupy.float64))


def test_misaligned_operands_are_copied_not_misread():
    import cupy
    from paragrad.backends.cuda.matmul import narrow
    rng = np.random.default_rng(1)
    flat = cupy.asarray(rng.standard_normal(10 * 64 + 1).astype(np.float32))
    w = flat[1:].reshape(10, 64)                    # 4 bytes past a 16-byte boundary
    x = cupy.asarray(rng.standard_normal((5, 64)).astype(np.float32))
    b = cupy.zeros(10, cupy.float32)
    np.testing.assert_allclose(narrow.forward(x, w, b).get(), x.get() @ w.get().T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("below", ["relu", None])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_chain_with_a_narrow_head_matches_without(dtype, below, monkeypatch):
    """The MNIST MLP's shape (784 -> 784 -> 10, batch 64) through mlp(): the same outputs and
    gradients with the narrow head as with cuBLASLt's / small_gemm's GEMMs for it."""
    from paragrad.backends.cuda.matmul import mlp
    rng = np.random.default_rng(2)
    dt = getattr(pg, dtype)
    params = [rng.standard_normal(s).astype(np.float32) / 28 for s in ((784, 784), (784,), (10, 784), (10,))]
    x = rng.standard_normal((64, 784)).astype(np.float32)
    g = rng.standard_normal((64, 10)).astype(np.float32)
    results = []
    for narrow_on in (True, False):
        if not narrow_on:
            monkeypatch.setattr(mlp, "_narrow_top", lambda h, layers: False)
        ps = [pg.tensor(p, device="cuda").to(dt).requires_grad_() for p in params]
        px = pg.tensor(x, device="cuda").to(dt).requires_grad_()
        y = pg.ops.neural.linear.mlp(px, [(ps[0], ps[1], below), (ps[2], ps[3], None)])
        y.backward(pg.tensor(g, device="cuda").to(dt))
        results.append([t.detach().float().cpu().numpy() for t in [y, px.grad] + [p.grad for p in ps]])
    tol = 1e-4 if dtype == "float32" else 3e-2
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * np.abs(b).max())
