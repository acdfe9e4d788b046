"""layer_norm against PyTorch: forward values and the gradients of input, weight and bias (random
cotangent) over normalized shapes, affine variants and eps; float16; float64 finite
differences; double backward; the fast path against the composition it replaces (and each
half of it against the other half); and the errors."""
import numpy as np
import pytest
import torch

import paragrad as pg
from paragrad.backends.base import fast_paths
from tests.helpers import assert_close, check_op, fd_check, make_input


def ln(ns, affine="both", eps=1e-5):
    """A function of (x[, w][, b]) calling layer_norm in whichever library x belongs to."""
    def f(x, *params):
        lib = torch if isinstance(x, torch.Tensor) else pg
        w = params[0] if affine in ("both", "weight") else None
        b = params[-1] if affine in ("both", "bias") else None
        return lib.nn.functional.layer_norm(x, ns, w, b, eps)
    return f


def shapes_for(shape, ns, affine):
    return [shape] + [ns] * {"both": 2, "weight": 1, "bias": 1, "none": 0}[affine]


CASES = [((4, 8), (8,)), ((2, 3, 8), (8,)), ((2, 3, 8), (3, 8))]
AFFINE = ["both", "weight", "bias", "none"]


@pytest.mark.parametrize("affine", AFFINE)
@pytest.mark.parametrize("shape,ns", CASES, ids=[f"{s}-{n}" for s, n in CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm(device, dtype, shape, ns, affine):
    check_op(ln(ns, affine), shapes_for(shape, ns, affine), dtype=dtype, device=device)


@pytest.mark.parametrize("eps", [0.0, 1e-5, 1e-2, 1.0])
def test_layer_norm_eps(device, eps):
    check_op(ln((3, 8), "both", eps), [(2, 3, 8), (3, 8), (3, 8)], device=device)


@pytest.mark.parametrize("name,fn,shapes", [
    ("1d", ln((6,)), [(6,), (6,), (6,)]),
    ("whole_tensor", ln((2, 3, 4)), [(2, 3, 4), (2, 3, 4), (2, 3, 4)]),
    ("4d_last_two", ln((3, 5)), [(2, 2, 3, 5), (3, 5), (3, 5)]),
    ("size1_norm", ln((1,)), [(3, 1), (1,), (1,)]),
    ("empty_rows", ln((8,)), [(0, 8), (8,), (8,)]),
    ("noncontiguous", lambda x, w, b: ln((4,))(x.transpose(0, 1), w, b), [(4, 3), (4,), (4,)]),
    ("large_offset", lambda x, w, b: ln((8,))(x * 10 + 1000, w, b), [(3, 8), (8,), (8,)]),
    ("chained", lambda x, w, b: ln((8,))(ln((8,))(x, w, b) * 3, w, b), [(3, 8), (8,), (8,)]),
])
def test_layer_norm_cases(device, name, fn, shapes):
    check_op(fn, shapes, device=device)


def test_layer_norm_list_and_int_shape(device):
    a = make_input((3, 5))
    x = pg.tensor(a, device=device)
    ref = torch.nn.functional.layer_norm(torch.tensor(a), (5,))
    for ns in ([5], 5, pg.Size([5])):
        assert_close(pg.nn.functional.layer_norm(x, ns), ref, 1e-5, 1e-4, f"normalized_shape={ns!r}")
    assert pg.layer_norm is pg.nn.functional.layer_norm


def test_layer_norm_empty_normalized_dim(device):
    y = pg.layer_norm(pg.ones(2, 0, device=device), (0,))
    assert tuple(y.shape) == (2, 0)


@pytest.mark.parametrize("affine", ["both", "none"])
def test_layer_norm_float16(device, affine):
    check_op(ln((8,), affine), shapes_for((3, 8), (8,), affine), dtype="float16", device=device,
             grad=False)
    check_op(ln((3, 8), affine), shapes_for((2, 3, 8), (3, 8), affine), dtype="float16",
             device=device)


def test_layer_norm_float16_large_offset(device):
    # statistics in float32: a float16 mean/variance would lose the 1e-2 spread around 100
    a = (100 + make_input((4, 16), "float64", -1, 1)).astype(np.float16)
    y = pg.layer_norm(pg.tensor(a, device=device), (16,))
    assert y.dtype is pg.float16
    assert_close(y, torch.nn.functional.layer_norm(torch.tensor(a), (16,)), 1e-2, 1e-2)


@pytest.mark.parametrize("affine", ["both", "weight", "none"])
@pytest.mark.parametrize("shape,ns", [((3, 5), (5,)), ((2, 3, 4), (3, 4))])
def test_layer_norm_fd(device, shape, ns, affine):
    fd_check(ln(ns, affine), shapes_for(shape, ns, affine), device=device)


def test_grad_of_parameters_only(device):
    a, w, b = make_input((3, 8)), make_input((8,), rng=np.random.default_rng(1)), make_input((8,))
    c = make_input((3, 8), rng=np.random.default_rng(2))
    res = []
    for lib in (torch, pg):
        x = lib.tensor(a)
        x = x.to(device) if lib is pg else x
        wt, bt = lib.tensor(w, requires_grad=True), lib.tensor(b, requires_grad=True)
        if lib is pg:
            wt, bt = (pg.tensor(v, device=device, requires_grad=True) for v in (w, b))
        y = lib.nn.functional.layer_norm(x, (8,), wt, bt)
        (y * lib.tensor(c).to(y.device)).sum().backward()
        res.append((x.grad, wt.grad, bt.grad))
    assert res[1][0] is None
    assert_close(res[1][1], res[0][1], 1e-4, 1e-4, "weight grad")
    assert_close(res[1][2], res[0][2], 1e-4, 1e-4, "bias grad")


def test_one_recorded_node(device):
    x = pg.randn(3, 8, device=device, requires_grad=True)
    w = pg.ones(8, device=device, requires_grad=True)
    y = pg.layer_norm(x, 8, w)
    assert y.grad_fn.name() == "NativeLayerNormBackward0" and len(y.grad_fn.next_functions) == 3
    assert y.grad_fn.next_functions[2] == (None, 0)
    with pg.no_grad():
        assert pg.layer_norm(x, 8, w).grad_fn is None
    assert pg.layer_norm(x.detach(), 8).grad_fn is None


# ---- double backward ---------------------------------------------------------------------------
@pytest.mark.parametrize("affine", ["both", "none"])
@pytest.mark.parametrize("shape,ns", [((4, 6), (6,)), ((2, 3, 4), (3, 4))])
def test_double_backward(device, shape, ns, affine):
    """A gradient penalty: the first derivatives (w.r.t. x and weight) are differentiated again.
    The loss is quadratic in y, so its cotangent depends on x, weight and bias too."""
    a = make_input(shape, "float64")
    ps = [make_input(ns, "float64", rng=np.random.default_rng(i + 1)) for i in range(2)]
    c = make_input(shape, "float64", rng=np.random.default_rng(7))
    out = []
    for lib in (torch, pg):
        kw = {"device": device} if lib is pg else {}
        x = lib.tensor(a, requires_grad=True, **kw)
        w, b = (lib.tensor(p, requires_grad=True, **kw) for p in ps) if affine == "both" else (None, None)
        y = lib.nn.functional.layer_norm(x, ns, w, b)
        loss = (y * y * lib.tensor(c, **kw)).sum() + (y * lib.tensor(c, **kw)).sum()
        wrt = (x, w) if w is not None else (x,)
        firsts = lib.autograd.grad(loss, wrt, create_graph=True)
        penalty = sum((g * g).sum() for g in firsts)
        penalty.backward()
        out.append((firsts, [t.grad for t in (x, w, b) if t is not None]))
    (t_first, t_second), (p_first, p_second) = out
    for i, (p, t) in enumerate(zip(p_first, t_first)):
        assert_close(p, t, 1e-9, 1e-7, f"first derivative {i}")
    for i, (p, t) in enumerate(zip(p_second, t_second)):
        assert_close(p, t, 1e-9, 1e-7, f"second derivative {i}")


# ---- fast path vs composition ------------------------------------------------------------------
def _run(a, w, b, c, ns, device, fast_fwd, fast_bwd):
    with fast_paths(fast_fwd):
        x = pg.tensor(a, device=device, requires_grad=True)
        wt = None if w is None else pg.tensor(w, device=device, requires_grad=True)
        bt = None if b is None else pg.tensor(b, device=device, requires_grad=True)
        y = pg.layer_norm(x, ns, wt, bt, eps=1e-3)
    with fast_paths(fast_bwd):
        (y * pg.tensor(c, device=device)).sum().backward()
    return [y.detach()] + [t.grad for t in (x, wt, bt) if t is not None]


@pytest.mark.parametrize("affine", ["both", "none"])
@pytest.mark.parametrize("shape,ns", [((5, 16), (16,)), ((2, 3, 8), (3, 8))])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_fast_path_matches_composite(device, dtype, shape, ns, affine):
    a = make_input(shape, dtype, -5, 5)
    w, b = ((make_input(ns, dtype, rng=np.random.default_rng(i)) for i in (1, 2))
            if affine == "both" else (None, None))
    c = make_input(shape, dtype, -1, 1, np.random.default_rng(3))
    atol, rtol = {"float16": (2e-3, 2e-3), "float32": (1e-5, 1e-5), "float64": (1e-12, 1e-10)}[dtype]
    comp = _run(a, w, b, c, ns, device, False, False)
    for fast_fwd, fast_bwd in ((True, True), (True, False), (False, True)):
        fast = _run(a, w, b, c, ns, device, fast_fwd, fast_bwd)
        for i, (f, r) in enumerate(zip(fast, comp)):
            what = f"output {i} (fast forward {fast_fwd}, fast backward {fast_bwd})"
            assert f.dtype is r.dtype and f.shape == r.shape, what
            np.testing.assert_allclose(f.cpu().numpy().astype(np.float64),
                                       r.cpu().numpy().astype(np.float64),
                                       atol=atol, rtol=rtol, err_msg=what)


def test_composite_matches_torch(device):
    with fast_paths(False):
        check_op(ln((3, 8)), [(2, 3, 8), (3, 8), (3, 8)], device=device)
        check_op(ln((8,), "none"), [(4, 8)], device=device)
        check_op(ln((8,)), [(3, 8), (8,), (8,)], dtype="float16", device=device)
        fd_check(ln((4,)), [(3, 4), (4,), (4,)], device=device)


def test_fast_path_signature(device):
    """The backend hook itself: shapes and dtypes of what it returns (documented in base.py)."""
    x = pg.randn(2, 3, 8, device=device)
    be = x._backend
    fwd, bwd = be.fast("layer_norm"), be.fast("layer_norm_backward")
    if fwd is None or bwd is None:
        pytest.skip(f"{device} backend has no layer_norm fast path")
    for dtype, stat in ((pg.float32, "float32"), (pg.float16, "float32"), (pg.float64, "float64")):
        xd = x.to(dtype)._data
        y, mean, rstd = fwd(xd, None, None, 2, 1e-5)
        assert y.shape == xd.shape and y.dtype == xd.dtype
        assert mean.shape == rstd.shape == (2, 1, 1) and str(mean.dtype) == str(rstd.dtype) == stat
        dx, dw, db = bwd(xd, xd, None, mean, rstd, 2, False, False)
        assert dx.shape == xd.shape and dx.dtype == xd.dtype and dw is None and db is None
        w = pg.ones(3, 8, dtype=dtype, device=device)._data
        dx, dw, db = bwd(xd, xd, w, mean, rstd, 2, True, True)
        assert dw.shape == db.shape == (3, 8) and dw.dtype == db.dtype == xd.dtype


# ---- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,exc,match", [
    (((4, 7), (8,), None, None), RuntimeError,
     r"layer_norm: Given normalized_shape=\[8\], expected input with shape \[\*, 8\], but got "
     r"input of size \[4, 7\]"),
    (((7,), (2, 7), None, None), RuntimeError, r"normalized_shape=\[2, 7\].*size \[7\]"),
    (((4, 7), (7,), (6,), None), RuntimeError,
     r"layer_norm: Expected weight to be of same shape as normalized_shape, but got weight of "
     r"shape \[6\] and normalized_shape = \[7\]"),
    (((4, 7), (7,), None, (7, 1)), RuntimeError, r"bias of shape \[7, 1\] and normalized_shape = \[7\]"),
    (((4, 7), (), None, None), RuntimeError, r"layer_norm: Expected normalized_shape to be at least 1-dim"),
    (((4, 7), 7.0, None, None), TypeError, r"layer_norm\(\): argument 'normalized_shape'"),
])
def test_errors(device, args, exc, match):
    xs, ns, ws, bs = args
    x = pg.ones(*xs, device=device)
    w = None if ws is None else pg.ones(*ws, device=device)
    b = None if bs is None else pg.ones(*bs, device=device)
    with pytest.raises(exc, match=match):
        pg.layer_norm(x, ns, w, b)


def test_dtype_errors(device):
    x = pg.ones(4, 7, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"layer_norm: expected weight to have the input's dtype "
                                           r"paragrad.float32, but got paragrad.float64"):
        pg.layer_norm(x, (7,), pg.ones(7, dtype=pg.float64, device=device))
    with pytest.raises(RuntimeError, match=r"layer_norm: expected bias .*float32, but got paragrad.float16"):
        pg.layer_norm(x, (7,), None, pg.ones(7, dtype=pg.float16, device=device))
    with pytest.raises(RuntimeError, match=r"layer_norm: expected a floating-point input, got paragrad.int64"):
        pg.layer_norm(pg.ones(4, 7, dtype=pg.int64, device=device), (7,))
    with pytest.raises(TypeError, match=r"layer_norm\(\): argument 'weight' must be Tensor"):
        pg.layer_norm(x, (7,), np.ones(7))
    assert x.grad is None and x.grad_fn is None


@pytest.mark.parametrize("half", ["bfloat16", "float16"])
@pytest.mark.parametrize("cols", [384, 1100])        # a warp a row on CUDA, and a wider row
def test_layer_norm_cast_is_the_norm_then_the_cast(device, half, cols):
    """F.layer_norm_cast(x, ..., dtype) equals layer_norm(x).to(dtype) bit for bit, and its
    gradients (taken back in dtype) equal those through the cast, in a residual block where
    x's gradient sums the skip path and the norm's (add_into on the stream's buffer)."""
    dtype = getattr(pg, half)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((3, 5, cols), (cols,), (cols,), (3, 5, cols))]
    results = []
    for fused in (True, False):
        x, w, b, g = (pg.tensor(a, device=device, requires_grad=i < 3) for i, a in enumerate(arrays))
        y = pg.nn.functional.layer_norm_cast(x, (cols,), w, b, 1e-5, dtype) if fused else \
            pg.nn.functional.layer_norm(x, (cols,), w, b).to(dtype)
        assert y.dtype is dtype
        h = pg.nn.functional.residual_dropout(x, y * g.to(dtype), 0.0)     # x + branch
        (pg.nn.functional.layer_norm(h, (cols,)) * g).sum().backward()
        results.append([t.detach().float().cpu().numpy() for t in (y, x.grad, w.grad, b.grad)])
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want)


def test_gpt_block_under_autocast_reads_the_norms_as_its_linears_do():
    """Under bf16 autocast (CPU) the GPT's blocks take ln_1 and ln_2 straight in bf16: the
    same loss and gradients as the plain norms followed by the Linears' casts."""
    from paragrad.models import GPT, GPTConfig, gpt as gpt_module
    cfg = GPTConfig(block_size=16, vocab_size=32, n_layer=2, n_head=2, n_embd=32, dropout=0.0)
    idx = pg.tensor(np.random.default_rng(1).integers(0, 32, (2, 16)))
    results = []
    for fused in (True, False):
        pg.manual_seed(0)
        model = GPT(cfg)
        plain = gpt_module._normed
        if not fused:
            gpt_module._normed = lambda ln, x: ln(x)
        try:
            with pg.autocast("cpu", dtype=pg.bfloat16):
                loss = model(idx, idx)[1]
        finally:
            gpt_module._normed = plain
        loss.backward()
        results.append([loss.item()] + [p.grad.numpy() for p in model.parameters()])
    assert results[0][0] == results[1][0]
    for got, want in zip(results[0][1:], results[1][1:]):
        np.testing.assert_array_equal(got, want)


def test_layer_norm_cast_refuses_a_dtype_it_cannot_write(device):
    x = pg.randn(2, 8, device=device)
    with pytest.raises(TypeError, match="layer_norm_cast: dtype must be a floating-point paragrad dtype, got"):
        pg.nn.functional.layer_norm_cast(x, (8,), dtype=pg.int32)
