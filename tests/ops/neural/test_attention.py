"""scaled_dot_product_attention against PyTorch: forward and gradients of q, k, v (and a float
mask) over a table of shapes and masks, finite differences, double backward, fully masked rows,
dropout statistics and reproducibility, errors, and the fused fast-path plumbing (a reference
kernel written with backend primitives plugged in as the backend's fast path)."""
import math
import re
from contextlib import nullcontext

import numpy as np
import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import paragrad as pg
from paragrad.backends.base import fast_paths
from paragrad.ops.neural.attention import ScaledDotProductAttentionBackward
from tests.helpers import assert_close, check_op, fd_check, make_input, needs_torch_2_13


def sdpa(transpose=False, **kw):
    """f(q, k, v[, mask]) for both libraries; transpose=True passes (B, L, H, E) views. A mask
    of fewer than 2 dims goes to torch's math backend (its default CPU dispatch raises an
    IndexError for those; the math backend broadcasts them, as paragrad does)."""
    def f(q, k, v, m=None):
        if transpose:
            q, k, v = (x.transpose(1, 2) for x in (q, k, v))
        if isinstance(q, pg.Tensor):
            return pg.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
        with sdpa_kernel(SDPBackend.MATH) if m is not None and m.ndim < 2 else nullcontext():
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    return f


def masked(shape, seed=1, dead_row=True):
    """A bool mask (True = take part) with, where the shape allows, one fully masked row."""
    m = np.random.default_rng(seed).random(shape) < 0.6
    if dead_row and len(shape) >= 2:
        m[..., 1, :] = False
    return m


def float_mask(shape, seed=2, dead_row=True):
    m = make_input(shape, "float64", -2, 2, np.random.default_rng(seed))
    m[np.random.default_rng(seed + 1).random(shape) < 0.3] = -np.inf
    if dead_row and len(shape) >= 2:
        m[..., 1, :] = -np.inf
    return m


QKV = [(2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4)]
CROSS = [(2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 4)]
CASES = {  # name: (shapes q, k, v; kwargs; mask array or None)
    "self": (QKV, {}, None),
    "self_causal": (QKV, {"is_causal": True}, None),
    "cross": (CROSS, {}, None),
    "cross_causal_L<S": (CROSS, {"is_causal": True}, None),
    "cross_causal_L>S": ([(2, 3, 7, 4), (2, 3, 5, 4), (2, 3, 5, 4)], {"is_causal": True}, None),
    "broadcast_kv": ([(2, 3, 5, 4), (1, 3, 7, 4), (1, 3, 7, 4)], {}, None),
    "broadcast_mixed": ([(1, 3, 5, 4), (2, 3, 7, 4), (2, 1, 7, 4)], {}, None),
    "broadcast_rank": ([(3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)], {}, None),
    "3d": ([(3, 5, 4), (3, 7, 4), (3, 7, 4)], {}, None),
    "2d": ([(5, 4), (7, 4), (7, 4)], {"is_causal": True}, None),
    "5d": ([(2, 2, 2, 5, 4), (2, 2, 2, 7, 4), (2, 2, 2, 7, 4)], {}, None),
    "Ev!=E": ([(2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)], {}, None),
    "scale": (CROSS, {"scale": 0.3}, None),
    "scale_causal": (QKV, {"scale": 2.5, "is_causal": True}, None),
    "gqa": ([(2, 4, 5, 4), (2, 2, 7, 4), (2, 2, 7, 4)], {"enable_gqa": True}, None),
    "gqa_mixed_heads": ([(2, 4, 5, 4), (2, 2, 7, 4), (2, 1, 7, 6)], {"enable_gqa": True}, None),
    "gqa_causal_bcast": ([(2, 6, 5, 4), (1, 3, 7, 4), (1, 3, 7, 4)],
                         {"enable_gqa": True, "is_causal": True}, None),
    "gqa_same_heads": (QKV, {"enable_gqa": True}, None),
    "bool_mask_LS": (CROSS, {}, masked((5, 7))),
    "bool_mask_head": (CROSS, {}, masked((3, 1, 7), dead_row=False)),
    "bool_mask_full": (CROSS, {}, masked((2, 3, 5, 7))),
    "bool_mask_batch": (CROSS, {}, masked((2, 1, 5, 7))),
    "bool_mask_keys": (CROSS, {}, masked((7,), dead_row=False)),
    "bool_mask_gqa": ([(2, 4, 5, 4), (2, 2, 7, 4), (2, 2, 7, 4)], {"enable_gqa": True},
                      masked((4, 5, 7))),
    "float_mask_LS": (CROSS, {}, float_mask((5, 7))),
    "float_mask_full": (CROSS, {}, float_mask((2, 3, 5, 7))),
    "float_mask_bcast": (CROSS, {}, float_mask((1, 7), dead_row=False)),
    "float_mask_head": ([(2, 3, 5, 4), (1, 3, 7, 4), (1, 3, 7, 6)], {}, float_mask((3, 1, 7), dead_row=False)),
    "empty_S": ([(2, 3, 5, 4), (2, 3, 0, 4), (2, 3, 0, 4)], {}, None),
    "empty_L": ([(2, 3, 0, 4), (2, 3, 7, 4), (2, 3, 7, 4)], {}, None),
}


def _inputs(shapes, mask, dtype, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [make_input(s, dtype, -2, 2, rng) for s in shapes]
    if mask is not None:
        arrays.append(mask if mask.dtype == np.bool_ else mask.astype(dtype))
    return arrays


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", [pytest.param(n, marks=needs_torch_2_13 if n.startswith("empty") else ())
                                  for n in CASES])     # (older torch ends an empty one in another node)
def test_sdpa_vs_torch(device, name, dtype):
    shapes, kw, mask = CASES[name]
    check_op(sdpa(**kw), shapes, dtype=dtype, device=device, inputs=_inputs(shapes, mask, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sdpa_noncontiguous(device, dtype):
    shapes = [(2, 5, 3, 4), (2, 7, 3, 4), (2, 7, 3, 6)]      # (B, L, H, E), transposed inside
    check_op(sdpa(transpose=True, is_causal=True), shapes, dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sdpa_half(device, dtype):
    check_op(sdpa(), [(2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8)], dtype=dtype, device=device,
             grad=False)


@pytest.mark.parametrize("name", ["self_causal", "cross_causal_L>S", "broadcast_mixed", "gqa_mixed_heads",
                                  "bool_mask_full", "float_mask_LS", "Ev!=E"])
def test_sdpa_fd(device, name):
    shapes, kw, mask = CASES[name]
    shapes = [s[:-3] + (min(s[-3], 2),) + s[-2:] if len(s) >= 3 and not kw.get("enable_gqa") else s
              for s in shapes]
    if mask is not None and mask.ndim == 4:
        mask = mask[:, :2]
    fd_check(sdpa(**kw), shapes, device=device, inputs=_inputs(shapes, mask, "float64", seed=3))


def test_fully_masked_rows_match_torch(device):
    """A row with no key to attend to gives 0 output and 0 gradient (PyTorch's math backend
    and its CPU kernels agree), for a bool mask, a float -inf mask and -inf scores."""
    for mask in (masked((3, 5, 7)), float_mask((5, 7))):
        out = check_op(sdpa(), CROSS, dtype="float64", device=device,
                       inputs=_inputs(CROSS, mask, "float64"))
        assert not out.detach().cpu().numpy()[:, :, 1].any()
    q = make_input((1, 1, 2, 4), "float64")
    q[0, 0, 0] = [-np.inf, 0, 0, 0]
    k = np.ones((1, 1, 3, 4))
    check_op(sdpa(), None, device=device, grad=False, inputs=[q, k, make_input((1, 1, 3, 4), "float64")])


@pytest.mark.parametrize("name", ["self_causal", "cross_causal_L>S", "broadcast_mixed", "gqa",
                                  "bool_mask_full", "float_mask_head"])
def test_sdpa_double_backward(device, name):
    """A gradient-penalty loss: |d(out . w)/d(q, k, v[, mask])|^2, differentiated again."""
    shapes, kw, mask = CASES[name]
    arrays = _inputs(shapes, mask, "float64", seed=4)
    grads = []
    for lib in (torch, pg):
        ins = [lib.tensor(a, requires_grad=a.dtype != np.bool_) if lib is torch else
               pg.tensor(a, device=device, requires_grad=a.dtype != np.bool_) for a in arrays]
        with sdpa_kernel(SDPBackend.MATH):   # the torch kernel with a double backward
            out = sdpa(**kw)(*ins)
            w = make_input(tuple(out.shape), "float64", -1, 1, np.random.default_rng(9))
            w = torch.tensor(w) if lib is torch else pg.tensor(w, device=device)
            diff = [x for x in ins if x.requires_grad]
            gs = lib.autograd.grad((out * w).sum(), diff, create_graph=True)
            sum((g * g).sum() for g in gs).backward()
        grads.append((gs, [x.grad for x in diff]))
    (tg, tgg), (pg_, pgg) = grads
    for i, (p, t) in enumerate(zip(pg_, tg)):
        assert_close(p, t, 1e-9, 1e-7, f"first derivative {i}")
    for i, (p, t) in enumerate(zip(pgg, tgg)):
        assert_close(p, t, 1e-9, 1e-7, f"second derivative {i}")


# ---- dropout -----------------------------------------------------------------------------------
def _dropout_run(device, p, v=None, seed=123, shape=(4, 2, 64, 8)):
    rng = np.random.default_rng(7)
    q, k = (pg.tensor(make_input(shape, "float64", -1, 1, rng), device=device, requires_grad=True)
            for _ in range(2))
    S = shape[-2]
    v = pg.tensor(np.eye(S) if v is None else v, device=device, requires_grad=True)
    pg.manual_seed(seed)
    out = pg.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=p)
    return q, k, v, out


def test_dropout_statistics(device):
    """With v = I the output is the dropped, rescaled attention weights themselves."""
    p = 0.3
    _, _, _, out = _dropout_run(device, p)
    _, _, _, ref = _dropout_run(device, 0.0)
    o, r = out.detach().cpu().numpy(), ref.detach().cpu().numpy()
    kept = o != 0
    assert abs(1 - kept.mean() - p) < 0.02, f"dropped fraction {1 - kept.mean():.3f}, expected {p}"
    np.testing.assert_allclose(o[kept], r[kept] / (1 - p), rtol=1e-12)
    # unbiased: the mean of many dropped weights is near the weights' mean
    assert abs(o.mean() - r.mean()) < 0.03 * r.mean()
    # p = 1 drops everything (as torch.dropout)
    _, _, _, none = _dropout_run(device, 1.0)
    assert not none.detach().cpu().numpy().any()


def test_dropout_reproducible(device):
    a = _dropout_run(device, 0.5, seed=5)[3].detach().cpu().numpy()
    b = _dropout_run(device, 0.5, seed=5)[3].detach().cpu().numpy()
    c = _dropout_run(device, 0.5, seed=6)[3].detach().cpu().numpy()
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()
    # the default generator advances: two draws after one seed differ
    q, k, v, first = _dropout_run(device, 0.5, seed=5)
    second = pg.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert (first.detach().cpu().numpy() != second.detach().cpu().numpy()).any()


def test_dropout_gradients(device):
    """Gradients with dropout equal torch's for the same keep mask (read off a v = I run with
    the same seed, which draws the same mask)."""
    p, S = 0.4, 16
    shape = (2, 2, S, 4)
    _, _, _, eye_out = _dropout_run(device, p, shape=shape)
    keep = eye_out.detach().cpu().numpy() != 0
    vals = make_input((2, 2, S, 3), "float64", -2, 2, np.random.default_rng(8))
    q, k, v, out = _dropout_run(device, p, v=vals, shape=shape)
    w = make_input(tuple(out.shape), "float64", -1, 1, np.random.default_rng(9))
    (out * pg.tensor(w, device=device)).sum().backward()
    tq, tk = (torch.tensor(x.detach().cpu().numpy(), requires_grad=True) for x in (q, k))
    tv = torch.tensor(vals, requires_grad=True)

    def torch_out():
        return (torch.softmax(tq @ tk.mT / math.sqrt(4), -1) * torch.tensor(keep) / (1 - p)) @ tv
    tout = torch_out()
    (tout * torch.tensor(w)).sum().backward()
    for pt, t, what in ((out, tout, "output"), (q.grad, tq.grad, "dq"), (k.grad, tk.grad, "dk"),
                        (v.grad, tv.grad, "dv")):
        assert_close(pt, t, 1e-10, 1e-8, what)
    # double backward (gradient penalty) through the same dropout mask
    q, k, v, out = _dropout_run(device, p, v=vals, shape=shape)
    gs = pg.autograd.grad((out * pg.tensor(w, device=device)).sum(), [q, k, v], create_graph=True)
    sum((g * g).sum() for g in gs).backward()
    for x in (tq, tk, tv):
        x.grad = None
    tgs = torch.autograd.grad((torch_out() * torch.tensor(w)).sum(), [tq, tk, tv], create_graph=True)
    sum((g * g).sum() for g in tgs).backward()
    for i, (pt, t) in enumerate(zip(gs, tgs)):
        assert_close(pt, t, 1e-10, 1e-8, f"first derivative {i}")
    for i, (pt, t) in enumerate(zip((q, k, v), (tq, tk, tv))):
        assert_close(pt.grad, t.grad, 1e-10, 1e-8, f"second derivative {i}")


# ---- errors --------------------------------------------------------------------------------------
def _t(*shape, dtype=pg.float32, device="cpu"):
    return pg.zeros(shape, dtype=dtype, device=device)


@pytest.mark.parametrize("case,pattern", [
    (lambda d: dict(query=_t(2, 3, 5, 4, device=d), key=_t(2, 3, 7, 4, device=d), value=_t(2, 3, 7, 4, device=d),
                    attn_mask=_t(5, 7, dtype=pg.bool, device=d), is_causal=True),
     r"attn_mask should not be set when is_causal.*\(5, 7\)"),
    (lambda d: dict(query=_t(2, 3, 5, 4, device=d), key=_t(2, 3, 7, 3, device=d), value=_t(2, 3, 7, 4, device=d)),
     r"embedding size E.*\(2, 3, 5, 4\).*\(2, 3, 7, 3\)"),
    (lambda d: dict(query=_t(2, 3, 5, 4, device=d), key=_t(2, 3, 7, 4, device=d), value=_t(2, 3, 6, 4, device=d)),
     r"sequence length S.*\(2, 3, 7, 4\).*\(2, 3, 6, 4\)"),
    (lambda d: dict(query=_t(2, 3, 5, 4, device=d), key=_t(4, 3, 7, 4, device=d), value=_t(4, 3, 7, 4, device=d)),
     r"not broadcastable.*\(2, 3, 5, 4\).*\(4, 3, 7, 4\)"),
    (lambda d: dict(query=_t(2, 4, 5, 4, device=d), key=_t(2, 2, 7, 4, device=d), value=_t(2, 2, 7, 4, device=d)),
     r"not broadcastable.*\(2, 4, 5, 4\).*\(2, 2, 7, 4\)"),
    (lambda d: dict(query=_t(2, 3, 5, 4, device=d), key=_t(2, 3, 7, 4, device=d), value=_t(2, 3, 7, 4, device=d),
                    attn_mask=_t(5, 6, dtype=pg.bool, device=d)),
     r"attn_mask of shape \(5, 6\).*\(2, 3, 5, 7\)"),
    (lambda d: dict(query=_t(3, 5, 4, device=d), key=_t(3, 7, 4, device=d), value=_t(3, 7, 4, device=d),
                    attn_mask=_t(2, 3, 5, 7, device=d)),
     r"attn_mask of shape \(2, 3, 5, 7\).*\(3, 5, 7\)"),
    (lambda d: dict(query=_t(2, 3, 5, 4, device=d), key=_t(2, 3, 7, 4, device=d), value=_t(2, 3, 7, 4, device=d),
                    attn_mask=_t(5, 7, dtype=pg.int64, device=d)),
     r"attn_mask dtype.*int64"),
    (lambda d: dict(query=_t(2, 3, 5, 4, device=d), key=_t(2, 3, 7, 4, device=d), value=_t(2, 3, 7, 4, device=d),
                    attn_mask=_t(5, 7, dtype=pg.float64, device=d)),
     r"attn_mask dtype.*float32.*float64"),
    (lambda d: dict(query=_t(4, device=d), key=_t(4, device=d), value=_t(4, device=d)),
     r"at least 2-D.*query \(4,\)"),
    (lambda d: dict(query=_t(2, 3, 5, 4, device=d), key=_t(2, 3, 7, 4, dtype=pg.float64, device=d),
                    value=_t(2, 3, 7, 4, device=d)),
     r"same dtype.*float32.*float64"),
    (lambda d: dict(query=_t(2, 3, 5, 4, dtype=pg.int64, device=d), key=_t(2, 3, 7, 4, dtype=pg.int64, device=d),
                    value=_t(2, 3, 7, 4, dtype=pg.int64, device=d)),
     r"floating-point.*int64"),
    (lambda d: dict(query=_t(2, 4, 5, 4, device=d), key=_t(2, 3, 7, 4, device=d), value=_t(2, 3, 7, 4, device=d),
                    enable_gqa=True),
     r"heads in key \(3\).*must divide.*query \(4\).*\(2, 4, 5, 4\)"),
    (lambda d: dict(query=_t(5, 4, device=d), key=_t(7, 4, device=d), value=_t(7, 4, device=d), enable_gqa=True),
     r"enable_gqa needs a head dim.*\(5, 4\)"),
    (lambda d: dict(query=_t(2, 3, 5, 4, device=d), key=_t(2, 3, 7, 4, device=d), value=_t(2, 3, 7, 4, device=d),
                    attn_mask=_t(5, 6, dtype=pg.bool, device=d), dropout_p=0.5),
     r"attn_mask of shape \(5, 6\)"),
    (lambda d: dict(query=_t(2, 3, 5, 4, device=d), key=_t(2, 3, 7, 4, device=d), value=_t(2, 3, 7, 4, device=d),
                    dropout_p=1.5),
     r"dropout probability.*1.5"),
])
def test_sdpa_errors(device, case, pattern):
    kw = case(device)
    for name in ("query", "key", "value"):
        kw[name].requires_grad_(kw[name].dtype.is_floating_point)
    state = pg.get_rng_state()
    with pytest.raises(RuntimeError, match="scaled_dot_product_attention") as info:
        pg.nn.functional.scaled_dot_product_attention(**kw)
    assert re.search(pattern, str(info.value)), str(info.value)
    assert pg.get_rng_state() == state          # nothing drawn before the checks
    assert all(kw[n].grad is None for n in ("query", "key", "value"))


def test_sdpa_type_errors(device):
    with pytest.raises(TypeError, match="scaled_dot_product_attention.*'key'"):
        pg.nn.functional.scaled_dot_product_attention(_t(2, 3, device=device), np.zeros((2, 3)), _t(2, 3, device=device))


# ---- fast path plumbing --------------------------------------------------------------------------
def _ref_fast(b, calls):
    """A reference fused kernel written with backend primitives: the documented signatures."""
    def swap(x):
        return b.permute(x, (0, 1, 3, 2))

    def scores(q, k, scale, is_causal):
        s = b.binary("mul", b.matmul(q, swap(k)), scale)
        if is_causal:
            L, S = s.shape[-2:]
            tri = b.from_numpy(np.tril(np.ones((L, S), dtype=bool)), pg.bool)
            s = b.where(tri, s, b.full((), -np.inf, _dtype(q), None))
        return s

    def fwd(q, k, v, scale, is_causal, dropout_p=0.0, rng_state=None):
        if dropout_p:       # (this reference drops nothing: it declines, and the op composes)
            return None
        for x in (q, k, v):
            assert x.ndim == 4     # (any strides: the reference reads them as they lie)
        s = scores(q, k, scale, is_causal)
        m = b.reduce("max", s, (3,), True)
        e = b.unary("exp", b.binary("sub", s, m))
        den = b.reduce("sum", e, (3,), True)
        lse = b.cast(b.binary("add", b.unary("log", den), m), pg.float32)
        calls.append("forward")
        return b.matmul(b.binary("div", e, den), v), lse, None

    def bwd(q, k, v, out, dout, stats, scale, is_causal, dropout_p=0.0, rng=None):
        assert dropout_p == 0 and rng is None
        assert stats.shape == q.shape[:3] + (1,) and str(stats.dtype) == "float32"
        assert out.shape == dout.shape == q.shape[:3] + (v.shape[-1],)
        s = scores(q, k, scale, is_causal)
        p = b.unary("exp", b.binary("sub", s, b.cast(stats, _dtype(q))))   # P from the logsumexp
        dv = b.matmul(swap(p), dout)
        dp = b.matmul(dout, swap(v))
        rows = b.reduce("sum", b.binary("mul", dout, out), (3,), True)     # = rowsum(dP * P)
        ds = b.binary("mul", p, b.binary("sub", dp, rows))
        calls.append("backward")
        return (b.binary("mul", b.matmul(ds, k), scale), b.binary("mul", b.matmul(swap(ds), q), scale), dv)
    return fwd, bwd


def _dtype(buf):
    return getattr(pg, str(buf.dtype))


@pytest.mark.parametrize("which", ["both", "forward_only", "backward_only", "declined"])
@pytest.mark.parametrize("shapes,kw", [(QKV, {}), (QKV, {"is_causal": True}),
                                       ([(2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)], {"is_causal": True})])
def test_fast_path_plumbing(device, monkeypatch, which, shapes, kw):
    b = pg.zeros(1, device=device)._backend
    calls = []
    fwd, bwd = _ref_fast(b, calls)
    if which == "declined":
        def fwd(q, k, v, scale, is_causal, dropout_p=0.0, rng_state=None):
            if not dropout_p:       # (dropout: the reference declines without a record)
                calls.append("declined")
        bwd = lambda *a: calls.append("declined")  # noqa: E731
    monkeypatch.setattr(b, "fast_scaled_dot_product_attention", fwd if which != "backward_only" else None,
                        raising=False)
    monkeypatch.setattr(b, "fast_scaled_dot_product_attention_backward", bwd if which != "forward_only" else None,
                        raising=False)
    check_op(sdpa(**kw), shapes, dtype="float32", device=device)   # stats are float32
    want = {"both": ["forward", "backward"], "forward_only": ["forward"],
            "backward_only": ["backward"], "declined": ["declined", "declined"]}[which]
    assert calls == want
    # not eligible: a mask, GQA, batch broadcasting, 3-D; dropout the reference declines; under
    # create_graph the backward is the differentiable composite
    calls.clear()
    check_op(sdpa(), CASES["bool_mask_full"][0], dtype="float64", device=device,
             inputs=_inputs(*CASES["bool_mask_full"][::2], "float64"))
    for name in ("gqa", "broadcast_kv", "3d"):
        check_op(sdpa(**CASES[name][1]), CASES[name][0], dtype="float64", device=device)
    x = pg.tensor(make_input((2, 3, 5, 4), "float64"), device=device, requires_grad=True)
    pg.nn.functional.scaled_dot_product_attention(x, x, x, dropout_p=0.1).sum().backward()
    assert calls == []
    test_sdpa_double_backward(device, "self_causal")
    assert "backward" not in calls


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{}, {"is_causal": True}])
def test_fast_path_matches_composite(device, dtype, kw):
    """Whatever fast path this backend ships agrees with the composition of primitives."""
    arrays = [make_input(s, dtype, -2, 2, np.random.default_rng(i)) for i, s in enumerate(CROSS)]
    w = make_input((2, 3, 5, 4), dtype, -1, 1, np.random.default_rng(5))
    res = []
    for fast in (True, False):
        with fast_paths(fast):
            ins = [pg.tensor(a, device=device, requires_grad=True) for a in arrays]
            out = sdpa(**kw)(*ins)
            (out * pg.tensor(w, device=device)).sum().backward()
        res.append([out.detach()] + [x.grad for x in ins])
    atol, rtol = (1e-5, 1e-4) if dtype == "float32" else (1e-12, 1e-10)
    for f, c in zip(*res):
        np.testing.assert_allclose(f.cpu().numpy(), c.cpu().numpy(), atol=atol, rtol=rtol)


def test_one_node(device):
    q = pg.tensor(make_input((2, 3, 5, 4)), device=device, requires_grad=True)
    m = pg.tensor(make_input((5, 5)), device=device, requires_grad=True)
    out = pg.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=m)
    # (named as torch's math path ends: a mask that needs a gradient keeps flash out)
    assert isinstance(out.grad_fn, ScaledDotProductAttentionBackward)
    assert out.grad_fn.name() == "UnsafeViewBackward0"
    assert len(out.grad_fn.next_functions) == 4
    with pg.no_grad():
        assert pg.nn.functional.scaled_dot_product_attention(q, q, q).grad_fn is None


def _split_heads_attention(qkv, n_head=2):
    """A GPT's attention over q, k, v split from one (B, T, 3C) projection, heads-inner."""
    B, T, C3 = qkv.shape
    q, k, v = (x.reshape(B, T, n_head, C3 // 3 // n_head).transpose(1, 2) for x in qkv.split(C3 // 3, dim=2))
    lib = pg if isinstance(qkv, pg.Tensor) else torch
    return lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_packed_qkv_gradient(device, dtype, monkeypatch):
    """The gradient of the packed (B, T, 3C) projection matches PyTorch. With bf16 on CUDA
    cuDNN writes dq, dk and dv into one buffer, which split's backward takes whole."""
    b = pg.zeros(1, device=device)._backend
    joined = []
    real = getattr(b, "fast_joined_view", None)
    if real is not None:
        def spy(pieces, axis):
            r = real(pieces, axis)
            joined.append(r is not None)
            return r
        monkeypatch.setattr(b, "fast_joined_view", spy)
    check_op(_split_heads_attention, [(2, 16, 3 * 32)], dtype=dtype, device=device)
    assert (True in joined) == (device == "cuda" and dtype == "bfloat16")
