"""Scatter-accumulate against PyTorch: the backend's scatter_add primitive and the ops built on
it (embedding's gradient, index_add, index_put(accumulate=True), scatter_add, bincount, max_pool
and gather gradients), through each of the CPU backend's methods (one-hot GEMM and sorted
runs for slices, a flat index for elements), every dtype, duplicates, negative and
out-of-range indices, non-finite values and -0."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op, fd_check, lib, like

RNG = np.random.default_rng(0)
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]
TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-3, "bfloat16": 1e-2}


def _values(shape, dtype):
    if dtype == "bool":
        return RNG.random(shape) < 0.4
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        return RNG.standard_normal(shape)
    return RNG.integers(-100, 100, shape)


def _pair(a, dtype, device):
    t = torch.tensor(a).to(getattr(torch, dtype))
    p = pg.tensor(t.float().numpy() if dtype == "bfloat16" else t.numpy(), device=device)
    return p.to(getattr(pg, dtype)), t


def _same(p, t, dtype, what=""):
    pa = p.detach().cpu().to(pg.float64).numpy() if dtype != "bool" else p.cpu().numpy()
    ta = t.detach().double().numpy() if dtype != "bool" else t.numpy()
    assert p.dtype.name == str(t.dtype).replace("torch.", ""), what
    if dtype in TOL:
        np.testing.assert_allclose(pa, ta, rtol=TOL[dtype], atol=TOL[dtype], equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(pa, ta, err_msg=what)


# (base shape, dim, index shape, index constant off dim), and the CPU backend's method: slices
# (an index constant off dim) take the GEMM (few targets, floats) or sorted runs (many sources
# per target; one reduction per run where runs are long), any other index the flat index
CASES = [
    ((27, 64), 0, (512, 64), True),     # an embedding gradient: the GEMM (integers: runs)
    ((100, 16), 0, (1000, 16), True),   # sorted runs, np.add.reduceat
    ((70, 64), 0, (9000, 64), True),    # long runs: a reduction per run
    ((3, 20, 9), 1, (3, 200, 9), True),  # slices along a middle axis
    ((300, 16), 0, (700, 16), True),    # few sources per target: the flat index
    ((6, 10), 1, (6, 25), True),        # slices of 6 < 8 elements: the flat index
    ((27, 64), 0, (512, 64), False),    # any index: the flat index
    ((4, 7, 6), 2, (3, 5, 11), False),  # an index smaller than base off dim
    ((50,), 0, (400,), True),           # 1-D (bincount, index_put)
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim,ishape,rows", CASES, ids=str)
def test_scatter_add_matches_torch(device, dtype, shape, dim, ishape, rows):
    n = shape[dim]
    if rows:
        vec = RNG.integers(0, n, ishape[dim])
        view = [1] * len(ishape)
        view[dim] = ishape[dim]
        index = np.broadcast_to(vec.reshape(view), ishape).copy()
    else:
        index = RNG.integers(0, n, ishape)
    base_p, base_t = _pair(_values(shape, dtype), dtype, device)
    src_p, src_t = _pair(_values(ishape, dtype), dtype, device)
    i_p, i_t = pg.tensor(index, device=device), torch.tensor(index)
    if rows:            # as embedding/index_add pass it: expanded with stride 0
        i_p = pg.tensor(vec, device=device).reshape(view).expand(*ishape)
    _same(base_p.scatter_add(dim, i_p, src_p), base_t.scatter_add(dim, i_t, src_t), dtype)


METHODS = {  # module constants of paragrad.backends.cpu_scatter that force one method
    "gemm": {"GEMM_MAX_TARGETS": 10 ** 9, "GEMM_MAX_WORK": 10 ** 12, "RUN_MIN": 0},
    "reduceat": {"GEMM_MAX_TARGETS": 0, "RUN_MIN": 0, "LOOP_MIN_PER_RUN": 10 ** 12},
    "loop": {"GEMM_MAX_TARGETS": 0, "RUN_MIN": 0, "LOOP_MIN_PER_RUN": 0},
    "flat index": {"GEMM_MAX_TARGETS": 0, "RUN_MIN": 10 ** 9},
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_every_cpu_method_matches_torch(device, monkeypatch, method, dtype, dim):
    if device != "cpu":
        pytest.skip("the CPU backend's methods")
    from paragrad.backends import cpu_scatter
    for name, value in METHODS[method].items():
        monkeypatch.setattr(cpu_scatter, name, value)
    shape, ishape = [4, 5, 9], [4, 5, 9]
    shape[dim], ishape[dim] = 6, 40
    vec = RNG.integers(-6, 6, 40)                # (negative indices wrap in the primitive)
    view = [1, 1, 1]
    view[dim] = 40
    base_p, base_t = _pair(_values(shape, dtype), dtype, device)
    src_p, src_t = _pair(_values(ishape, dtype), dtype, device)
    index = np.broadcast_to(vec.reshape(view), ishape)
    b = base_p._backend
    got = b.scatter_add(b.contiguous(base_p._data), index, src_p._data, dim)
    want = base_t.scatter_add(dim, torch.tensor(index % 6), src_t)
    _same(pg.tensor(got).to(base_p.dtype) if dtype == "bfloat16" else pg.tensor(got), want, dtype, method)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("rows", [True, False])
def test_half_precision_accumulates_in_float32(device, dtype, rows):
    # torch's scatter_add sums 4096 ones to 4096; float16 adding one at a time stops at 2048
    # (bfloat16 at 256)
    tt, pt = getattr(torch, dtype), getattr(pg, dtype)
    it = torch.zeros(4096, 1 if rows else 16, dtype=torch.long).expand(4096, 16)
    t = torch.zeros(3, 16, dtype=tt).scatter_add(0, it, torch.ones(4096, 16, dtype=tt))
    ip = pg.zeros(4096, 1 if rows else 16, dtype=pg.int64, device=device).expand(4096, 16)
    p = pg.zeros(3, 16, dtype=pt, device=device).scatter_add(0, ip, pg.ones(4096, 16, dtype=pt, device=device))
    assert t[0, 0].item() == 4096
    _same(p, t, dtype)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_sources_stay_in_their_rows(device, bad):
    # the one-hot GEMM would multiply inf by 0 for every other row: those must stay finite
    g = RNG.standard_normal((512, 64)).astype(np.float32)
    g[7, 3] = bad
    idx = RNG.integers(0, 27, 512)
    t = torch.zeros(27, 64).index_add(0, torch.tensor(idx), torch.tensor(g))
    p = pg.zeros(27, 64, device=device).index_add(0, pg.tensor(idx, device=device), pg.tensor(g, device=device))
    assert np.isfinite(t.numpy()).sum() == 27 * 64 - 1
    _same(p, t, "float32")


def test_untouched_negative_zeros_stay(device):
    base = np.full((30, 8), -0.0, np.float32)
    idx = np.array([1, 4, 4, 29])
    t = torch.tensor(base).index_add(0, torch.tensor(idx), torch.ones(4, 8))
    p = pg.tensor(base, device=device).index_add(0, pg.tensor(idx, device=device), pg.ones(4, 8, device=device))
    np.testing.assert_array_equal(np.signbit(p.cpu().numpy()), np.signbit(t.numpy()))


@pytest.mark.parametrize("layout", ["slices", "elements", "1-D"])
def test_primitive_wraps_negative_and_refuses_out_of_range(device, layout):
    """The primitive itself (the op layer checks first): negative indices wrap, too large ones
    raise IndexError, as np.add.at did."""
    if device != "cpu":
        pytest.skip("the CPU backend's primitive")
    b = pg.zeros(1)._backend

    def index(values):
        col = np.array(values * 8)[:, None]                # (32, 1)
        if layout == "1-D":
            return col[:, 0]
        wide = np.broadcast_to(col, (32, 16))              # slices: stride 0 along dim 1
        return wide if layout == "slices" else wide.copy()
    shape = (5,) if layout == "1-D" else (5, 16)
    src = np.ones((32,) + shape[1:], np.float32)
    out = b.scatter_add(np.zeros(shape, np.float32), index([-1, 0, 4, -5]), src, 0)
    np.testing.assert_array_equal(out.reshape(5, -1)[:, 0], [16, 0, 0, 0, 16])
    for bad in (5, -6):
        with pytest.raises(IndexError, match="out of bounds"):
            b.scatter_add(np.zeros(shape, np.float32), index([0, bad, 1, 2]), src, 0)


# ---- the ops built on it, against torch ------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, {"padding_idx": 3}, {"scale_grad_by_freq": True}], ids=str)
@pytest.mark.parametrize("v,d", [(27, 64), (300, 16), (5, 3)])
def test_embedding_gradient(device, kw, v, d):
    idx = RNG.integers(0, v, (32, 16))
    check_op(lambda w: lib(w).nn.functional.embedding(like(w, idx), w, **kw), [(v, d)], device=device)


def test_embedding_gradient_fd(device):
    idx = RNG.integers(0, 5, (6, 4))
    fd_check(lambda w: pg.nn.functional.embedding(pg.tensor(idx, device=device), w), [(5, 3)], device=device)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_add(device, dim):
    idx = RNG.integers(0, 6, 40)
    shape = [6, 6, 9]
    sshape = list(shape)
    sshape[dim] = 40
    check_op(lambda x, s: x.index_add(dim, like(x, idx), s, alpha=1.5), [tuple(shape), tuple(sshape)], device=device)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8"])
def test_index_put_accumulate(device, dtype):
    a = _values((20, 9), dtype)
    i0, i1 = RNG.integers(-20, 20, 300), RNG.integers(0, 9, 300)
    vals = _values((300,), dtype)
    p, t = _pair(a, dtype, device)
    vp, vt = _pair(vals, dtype, device)
    _same(p.index_put((pg.tensor(i0, device=device), pg.tensor(i1, device=device)), vp, accumulate=True),
          t.index_put((torch.tensor(i0), torch.tensor(i1)), vt, accumulate=True), dtype)


@pytest.mark.parametrize("weighted", [False, True])
def test_bincount(device, weighted):
    x = RNG.integers(0, 40, 5000)
    w = RNG.standard_normal(5000)
    t = torch.bincount(torch.tensor(x), torch.tensor(w) if weighted else None, minlength=50)
    p = pg.bincount(pg.tensor(x, device=device), pg.tensor(w, device=device) if weighted else None, minlength=50)
    _same(p, t, "float64" if weighted else "int64")


def test_max_pool_and_gather_gradients(device):
    check_op(lambda x: lib(x).nn.functional.max_pool2d(x, 3, 2, 1), [(2, 3, 9, 9)], device=device)
    idx = RNG.integers(0, 7, (5, 4))
    check_op(lambda x: x.gather(0, like(x, idx)), [(7, 4)], device=device)
    check_op(lambda x: x[like(x, [-1, 2, -1, 0])], [(5, 6)], device=device)   # negative take


def test_slices_are_added_whole(device, monkeypatch):
    """An embedding gradient adds whole rows (a GEMM, or sums over sorted runs), not element by
    element through NumPy's ufunc.at (whose tuple form cost ~400 us for 512 indices into 27x64,
    against ~85 us for torch's whole embedding forward+backward)."""
    if device != "cpu":
        pytest.skip("the CPU backend's method")
    from paragrad.backends import cpu_scatter
    calls = []
    monkeypatch.setattr(cpu_scatter, "_add_elements", lambda *a: calls.append(a))
    w = pg.zeros(27, 64, requires_grad=True)
    for n in (32, 1024):                # the GEMM; sorted runs
        pg.nn.functional.embedding(pg.tensor(RNG.integers(0, 27, (n, 16))), w).sum().backward()
    assert calls == [] and w.grad.sum().item() == (32 + 1024) * 16 * 64
