"""Every op of torch's CPU autocast lists that paragrad has, run under
pg.autocast("cpu", dtype=...) and torch.autocast("cpu", dtype=...) with bfloat16 and float16:
the output dtype and the values must match torch's.

The three lists (torch 2.13, probed op by op): "lower" ops get float32 inputs and run in the
autocast dtype; "fp32" ops get inputs in the autocast dtype and run in float32; "promote" ops get
inputs of mixed dtypes and run in the widest. An op on no list (layer_norm on the CPU) runs on
its inputs as they are, which for layer_norm means a half input with float32 parameters."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_raises

RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _u(*shape):
    return RNG.uniform(0.05, 0.95, shape).astype(np.float32)


def _spd(n):
    m = _r(n, n)
    return (m @ m.T + n * np.eye(n)).astype(np.float32)


def _labels(n, c):
    return RNG.integers(0, c, n)


def _signs(*shape):
    return np.where(RNG.random(shape) < 0.5, -1.0, 1.0).astype(np.float32)


# name -> (list, inputs, fn(lib, *tensors)); integer arrays stay integer, float arrays become
# float32 ("lower", "promote") or the autocast dtype ("fp32") before the autocast block
F = lambda L: L.nn.functional  # noqa: E731
CASES = {
    # lower precision
    "conv1d": ("lower", [_r(2, 3, 8), _r(4, 3, 3), _r(4)], lambda L, x, w, b: F(L).conv1d(x, w, b)),
    "conv2d": ("lower", [_r(1, 2, 5, 5), _r(3, 2, 3, 3), _r(3)], lambda L, x, w, b: F(L).conv2d(x, w, b)),
    "conv_transpose1d": ("lower", [_r(1, 3, 6), _r(3, 2, 3)],
                         lambda L, x, w: F(L).conv_transpose1d(x, w)),
    "conv_transpose2d": ("lower", [_r(1, 3, 4, 4), _r(3, 2, 3, 3)],
                         lambda L, x, w: F(L).conv_transpose2d(x, w)),
    "bmm": ("lower", [_r(2, 3, 4), _r(2, 4, 5)], lambda L, a, b: L.bmm(a, b)),
    "mm": ("lower", [_r(3, 4), _r(4, 5)], lambda L, a, b: L.mm(a, b)),
    "linalg_vecdot": ("lower", [_r(3, 4), _r(3, 4)], lambda L, a, b: L.linalg.vecdot(a, b)),
    "baddbmm": ("lower", [_r(2, 3, 5), _r(2, 3, 4), _r(2, 4, 5)], lambda L, c, a, b: L.baddbmm(c, a, b)),
    "addmm": ("lower", [_r(3, 5), _r(3, 4), _r(4, 5)], lambda L, c, a, b: L.addmm(c, a, b)),
    "addbmm": ("lower", [_r(3, 5), _r(2, 3, 4), _r(2, 4, 5)], lambda L, c, a, b: L.addbmm(c, a, b)),
    "linear": ("lower", [_r(3, 4), _r(5, 4), _r(5)], lambda L, x, w, b: F(L).linear(x, w, b)),
    "matmul": ("lower", [_r(2, 3, 4), _r(4, 5)], lambda L, a, b: L.matmul(a, b)),
    "prelu": ("lower", [_r(2, 3, 4), _u(3)], lambda L, x, w: F(L).prelu(x, w)),
    "scaled_dot_product_attention": (
        "lower", [_r(1, 2, 4, 8), _r(1, 2, 4, 8), _r(1, 2, 4, 8)],
        lambda L, q, k, v: F(L).scaled_dot_product_attention(q, k, v, is_causal=True)),
    # float32
    "binary_cross_entropy": ("fp32", [_u(4, 3), _u(4, 3)],
                             lambda L, x, y: F(L).binary_cross_entropy(x, y)),
    "prod": ("fp32", [_u(3, 4) + 0.5], lambda L, x: L.prod(x, 1)),
    "quantile": ("fp32", [_r(3, 7)], lambda L, x: L.quantile(x, 0.3, dim=1)),
    "nanquantile": ("fp32", [_r(3, 7)], lambda L, x: L.nanquantile(x, 0.6, dim=1)),
    "cdist": ("fp32", [_r(3, 4), _r(5, 4)], lambda L, a, b: L.cdist(a, b)),
    "trace": ("fp32", [_r(4, 4)], lambda L, x: L.trace(x)),
    "cholesky": ("fp32", [_spd(4)], lambda L, x: L.cholesky(x)),
    "cholesky_inverse": ("fp32", [np.tril(_spd(4))], lambda L, x: L.cholesky_inverse(x)),
    "cholesky_solve": ("fp32", [_r(4, 2), np.tril(_spd(4))], lambda L, b, u: L.cholesky_solve(b, u)),
    "inverse": ("fp32", [_spd(4)], lambda L, x: L.inverse(x)),
    "pinverse": ("fp32", [_r(4, 3)], lambda L, x: L.pinverse(x)),
    "max_unpool2d": ("fp32", [_r(1, 2, 4, 4)], lambda L, x: F(L).max_unpool2d(
        *F(L).max_pool2d(x, 2, return_indices=True), 2)),
    "mse_loss": ("fp32", [_r(3, 5), _r(3, 5)], lambda L, x, y: F(L).mse_loss(x, y)),
    "cosine_embedding_loss": ("fp32", [_r(4, 5), _r(4, 5), _signs(4)],
                              lambda L, a, b, y: F(L).cosine_embedding_loss(a, b, y)),
    "nll_loss": ("fp32", [_r(6, 5), _labels(6, 5)], lambda L, x, y: F(L).nll_loss(x, y)),
    "nll_loss2d": ("fp32", [_r(2, 5, 3, 3), RNG.integers(0, 5, (2, 3, 3))],
                   lambda L, x, y: F(L).nll_loss(x, y)),
    "hinge_embedding_loss": ("fp32", [_r(4, 5), _signs(4, 5)],
                             lambda L, x, y: F(L).hinge_embedding_loss(x, y)),
    "poisson_nll_loss": ("fp32", [_r(4, 5), _u(4, 5) * 3],
                         lambda L, x, y: F(L).poisson_nll_loss(x, y)),
    "smooth_l1_loss": ("fp32", [_r(3, 5), _r(3, 5)], lambda L, x, y: F(L).smooth_l1_loss(x, y)),
    "cross_entropy": ("fp32", [_r(6, 5), _labels(6, 5)], lambda L, x, y: F(L).cross_entropy(x, y)),
    "l1_loss": ("fp32", [_r(3, 5), _r(3, 5)], lambda L, x, y: F(L).l1_loss(x, y)),
    "huber_loss": ("fp32", [_r(3, 5), _r(3, 5)], lambda L, x, y: F(L).huber_loss(x, y, delta=0.5)),
    "margin_ranking_loss": ("fp32", [_r(6), _r(6), _signs(6)],
                            lambda L, a, b, y: F(L).margin_ranking_loss(a, b, y)),
    "soft_margin_loss": ("fp32", [_r(3, 5), _signs(3, 5)], lambda L, x, y: F(L).soft_margin_loss(x, y)),
    "triplet_margin_loss": ("fp32", [_r(4, 5), _r(4, 5), _r(4, 5)],
                            lambda L, a, p, n: F(L).triplet_margin_loss(a, p, n)),
    "multilabel_margin_loss": ("fp32", [_r(3, 5), np.array([[3, 0, -1, 1, 2], [1, 2, 3, -1, 0],
                                                             [4, -1, 0, 0, 0]])],
                               lambda L, x, y: F(L).multilabel_margin_loss(x, y)),
    "multi_margin_loss": ("fp32", [_r(6, 5), _labels(6, 5)],
                          lambda L, x, y: F(L).multi_margin_loss(x, y)),
    "kl_div": ("fp32", [_r(3, 5), _u(3, 5)], lambda L, x, y: F(L).kl_div(x, y, reduction="batchmean")),
    "binary_cross_entropy_with_logits": (
        "fp32", [_r(4, 3), _u(4, 3)], lambda L, x, y: F(L).binary_cross_entropy_with_logits(x, y)),
    "linalg_cond": ("fp32", [_spd(4)], lambda L, x: L.linalg.cond(x)),
    "linalg_matrix_rank": ("fp32", [_r(4, 4)], lambda L, x: L.linalg.matrix_rank(x)),
    "linalg_solve": ("fp32", [_spd(4), _r(4, 2)], lambda L, a, b: L.linalg.solve(a, b)),
    "linalg_cholesky": ("fp32", [_spd(4)], lambda L, x: L.linalg.cholesky(x)),
    "linalg_svdvals": ("fp32", [_r(4, 3)], lambda L, x: L.linalg.svdvals(x)),
    "linalg_eigvalsh": ("fp32", [_spd(4)], lambda L, x: L.linalg.eigvalsh(x)),
    "linalg_inv": ("fp32", [_spd(4)], lambda L, x: L.linalg.inv(x)),
    "linalg_eigh": ("fp32", [_spd(4)], lambda L, x: L.linalg.eigh(x)[0]),
    "linalg_qr": ("fp32", [_r(4, 3)], lambda L, x: L.linalg.qr(x)[1].abs()),
    "linalg_svd": ("fp32", [_r(4, 3)], lambda L, x: L.linalg.svd(x, full_matrices=False)[1]),
    "linalg_lstsq": ("fp32", [_r(5, 3), _r(5, 2)], lambda L, a, b: L.linalg.lstsq(a, b).solution),
    "qr": ("fp32", [_r(4, 3)], lambda L, x: L.qr(x)[1].abs()),
    "svd": ("fp32", [_r(4, 3)], lambda L, x: L.svd(x)[1]),
    "triangular_solve": ("fp32", [_r(4, 2), np.triu(_spd(4))],
                         lambda L, b, a: L.triangular_solve(b, a)[0]),
    # promote: the widest floating dtype among the inputs
    "cat": ("promote", [_r(3, 4), _r(2, 4)], lambda L, a, b: L.cat([a, b])),
    "stack": ("promote", [_r(3, 4), _r(3, 4)], lambda L, a, b: L.stack([a, b])),
    "index_copy": ("promote", [_r(5, 3), _r(2, 3)],
                   lambda L, x, s: x.index_copy(0, L.tensor([3, 0]), s)),
    "reflection_pad1d": ("fp32", [_r(1, 3, 5)], lambda L, x: F(L).pad(x, (1, 2), mode="reflect")),
    "reflection_pad2d": ("fp32", [_r(1, 2, 4, 4)],
                         lambda L, x: F(L).pad(x, (1, 1, 2, 0), mode="reflect")),
    "replication_pad1d": ("fp32", [_r(1, 3, 5)], lambda L, x: F(L).pad(x, (1, 2), mode="replicate")),
    "replication_pad2d": ("fp32", [_r(1, 2, 4, 4)],
                          lambda L, x: F(L).pad(x, (1, 1, 2, 0), mode="replicate")),
    # on no CPU list: runs on what it is given (half input, float32 parameters), and a
    # composite of listed ops does not autocast its inner ops
    "layer_norm": ("none", [_r(4, 6), _r(6), _r(6)],
                   lambda L, x, w, b: F(L).layer_norm(x, (6,), w, b)),
    "linalg_matrix_exp": ("none32", [_r(4, 4) * 0.3], lambda L, x: L.linalg.matrix_exp(x)),
}

def _inputs(lib, arrays, kind, dtype):
    """Each float array as lib's tensor: float32, the autocast dtype for the "fp32" ops, and for
    "promote" and "none" the first in the autocast dtype, the rest float32 (mixed dtypes)."""
    low = getattr(lib, dtype)
    out = []
    for i, a in enumerate(arrays):
        t = lib.tensor(a)
        if np.issubdtype(a.dtype, np.floating):
            if kind == "fp32" or (kind in ("promote", "none") and i == 0):     # ("none32": float32)
                t = t.to(low)
        out.append(t)
    return out


def _name(d):
    return str(d).replace("torch.", "").replace("paragrad.", "")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_cpu_autocast_op_matches_torch(name, dtype):
    kind, arrays, fn = CASES[name]
    with torch.autocast("cpu", dtype=getattr(torch, dtype)):
        want = fn(torch, *_inputs(torch, arrays, kind, dtype))
    with pg.autocast("cpu", dtype=getattr(pg, dtype)):
        got = fn(pg, *_inputs(pg, arrays, kind, dtype))
    assert _name(got.dtype) == _name(want.dtype), (got.dtype, want.dtype)
    want = want.detach().double().numpy()
    got = got.detach().double().numpy()
    # float32 results come from the same rounded inputs: float32 agreement; a result in the
    # autocast dtype may round differently where the two accumulate in another order: one ulp
    scale = max(1.0, float(np.abs(want).max()))
    rtol = {"lower": {"bfloat16": 1.6e-2, "float16": 2e-3}[dtype], "fp32": 1e-4}.get(
        kind, {"bfloat16": 1.6e-2, "float16": 2e-3}[dtype])
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_layer_norm_half_input_float32_parameters_gradients(dtype):
    """A float32 LayerNorm reading an autocast half activation on the CPU: a half output and
    half input gradient, float32 parameter gradients, as torch's mixed-dtype kernel gives."""
    x, w, b, g = _r(4, 6), _r(6), _r(6), _r(4, 6)
    outs = {}
    for L in (torch, pg):
        xt = L.tensor(x).to(getattr(L, dtype)).detach().requires_grad_(True)
        wt, bt = L.tensor(w, requires_grad=True), L.tensor(b, requires_grad=True)
        with L.autocast("cpu", dtype=getattr(L, dtype)):
            y = F(L).layer_norm(xt, (6,), wt, bt)
        y.backward(L.tensor(g).to(y.dtype))
        outs[L] = [y, xt.grad, wt.grad, bt.grad]
    for t, p in zip(outs[torch], outs[pg]):
        assert _name(p.dtype) == _name(t.dtype)
        tol = 2e-2 if _name(t.dtype) == "bfloat16" else 5e-3
        np.testing.assert_allclose(p.detach().double().numpy(), t.detach().double().numpy(),
                                   rtol=tol, atol=tol)


def test_layer_norm_mixed_parameters_must_both_be_float32():
    check_raises(lambda L, x, w, b: F(L).layer_norm(x.to(L.bfloat16), (3,), w.to(L.bfloat16), b),
                 [[1.0, 2.0, 4.0]], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0], error=RuntimeError)
    check_raises(lambda L, x, w: F(L).layer_norm(x.double(), (3,), w.float()), [[1.0, 2.0, 4.0]],
                 [1.0, 1.0, 1.0], error=RuntimeError)
