"""cummax/cummin, quantile/nanquantile, mode, nanmedian, histc, scatter_reduce, masked_scatter,
put and index_put against PyTorch: values, indices, gradients, dtypes and errors, on every
device."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op, fd_check, lib, like

NAN = float("nan")


def ties(shape, seed=0, k=3):
    return np.random.default_rng(seed).integers(0, k, size=shape).astype(np.float32)


def same(p, t):
    """paragrad result == torch result: named-tuple fields, exact values (NaN == NaN) and dtype."""
    if isinstance(t, tuple):
        assert type(p).__name__ and len(p) == len(t)
        for a, b in zip(p, t):
            same(a, b)
        return
    assert tuple(p.shape) == tuple(t.shape), (tuple(p.shape), tuple(t.shape))
    assert p.dtype.name == str(t.dtype).replace("torch.", "")
    np.testing.assert_array_equal(p.detach().cpu().float().numpy() if p.dtype is pg.bfloat16 else
                                  p.detach().cpu().numpy(),
                                  t.detach().float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy())


def both(fn, *arrays, device="cpu"):
    """fn on paragrad and torch copies of the arrays (no gradients): compared exactly."""
    p = fn(*[pg.tensor(a, device=device) for a in arrays])
    t = fn(*[torch.tensor(a) for a in arrays])
    same(p, t)
    return p


# ---- cummax / cummin ----------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin(op, device):
    for dim in (0, 1, -1):
        check_op(lambda x: getattr(lib(x), op)(x, dim), [(5, 7)], device=device)
        check_op(lambda x: getattr(x, op)(dim), [], inputs=[ties((5, 7), dim + 3)], device=device)
    x = np.array([[1, 3, NAN, 2, 3, NAN, 5, 1], [2, 2, 1, 1, 2, 0, -1, 9]], np.float32)
    both(lambda t: getattr(t, op)(1), x, device=device)
    both(lambda t: getattr(t, op)(0), np.array([2, 2, 1, 1, 2, 0], np.int64), device=device)
    both(lambda t: getattr(t, op)(0), np.array([True, False, True, False]), device=device)
    both(lambda t: getattr(t, op)(0), np.array([-0.0, 0.0, -0.0], np.float32), device=device)
    both(lambda t: getattr(t, op)(0), np.array(3.0, np.float32), device=device)
    both(lambda t: getattr(t, op)(1), np.zeros((0, 3), np.float32), device=device)
    check_op(lambda x: getattr(x, op)(0), [(17,)], dtype="float64", device=device)
    fd_check(lambda x: getattr(x, op)(1).values, [(3, 6)], device=device)
    with pytest.raises(IndexError):
        getattr(pg.zeros(3, device=device), op)(1)


# ---- quantile / nanquantile ---------------------------------------------------------------------
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_matches_torch(interpolation, device):
    kw = {"interpolation": interpolation}
    check_op(lambda x: lib(x).quantile(x, 0.3, **kw), [(4, 5)], device=device)
    check_op(lambda x: x.quantile(like(x, [0.0, 0.25, 0.5, 0.9, 1.0]), dim=1, **kw), [(4, 5)], device=device)
    check_op(lambda x: lib(x).nanquantile(x, like(x, 0.6), dim=0, keepdim=True, **kw), [(4, 5)],
             device=device)
    check_op(lambda x: x.quantile(like(x, [0.1, 0.8]), keepdim=True, **kw), [(2, 3, 4)], device=device)
    check_op(lambda x: x.nanquantile(0.7, dim=-2, **kw), [(2, 3, 4)], dtype="float64", device=device)
    q = np.array([0.0, 0.125, 0.375, 0.5, 0.625, 0.9, 1.0], np.float32)
    x = np.array([[1, NAN, 3, 2], [NAN, NAN, NAN, NAN], [5, NAN, 1, NAN], [2, 2, 4, 2]], np.float32)
    for op in ("quantile", "nanquantile"):
        check_op(lambda x, q: getattr(lib(x), op)(x, q, dim=1, **kw), [], inputs=[x, q], device=device,
                 grad=False)
        check_op(lambda x: getattr(x, op)(0.5, dim=1, **kw), [], inputs=[x[[0, 2, 3]]], device=device)


def test_quantile_shapes_and_errors(device):
    check_op(lambda x: x.quantile(0.3), [()], device=device)
    check_op(lambda x: x.quantile(0.3, dim=0, keepdim=True), [()], device=device)
    check_op(lambda x, q: x.quantile(q, dim=1), [(3, 6), (4,)], low=0, high=1, device=device)  # q's grad
    fd_check(lambda x: x.quantile(pg.tensor([0.2, 0.7], dtype=pg.float64, device=device), dim=1),
             [(3, 5)], device=device)
    x = pg.tensor([1.0, 2.0], device=device)
    for bad, err in [(lambda: x.quantile(1.5), RuntimeError),
                     (lambda: x.quantile(pg.tensor([0.5, -1.0], device=device)), RuntimeError),
                     (lambda: x.quantile(pg.tensor([0.5, NAN], device=device)), RuntimeError),
                     (lambda: x.quantile(pg.tensor([[0.5]], device=device)), RuntimeError),
                     (lambda: x.quantile(pg.tensor([0.5], dtype=pg.float64, device=device)), RuntimeError),
                     (lambda: x.quantile(0.5, interpolation="foo"), RuntimeError),
                     (lambda: x.quantile([0.5, 0.2]), TypeError),
                     (lambda: x.half().quantile(0.5), RuntimeError),
                     (lambda: pg.tensor([1, 2], device=device).quantile(0.5), RuntimeError),
                     (lambda: pg.zeros(2, 0, device=device).quantile(0.5, dim=0), RuntimeError),
                     (lambda: x.nanquantile(0.5, dim=3), IndexError)]:
        with pytest.raises(err):
            bad()


# ---- mode / nanmedian ---------------------------------------------------------------------------
def test_mode_matches_torch(device):
    for seed in range(4):
        a = ties((6, 9), seed, k=4)
        both(lambda t: t.mode(1), a, device=device)
        both(lambda t: torch.mode(t, 0, True) if isinstance(t, torch.Tensor) else pg.mode(t, 0, True), a,
             device=device)
        both(lambda t: t.mode(), a.astype(np.int64), device=device)
    both(lambda t: t.mode(0), np.array([NAN, NAN, 1, 1, NAN, 2], np.float32), device=device)
    both(lambda t: t.mode(0), np.array([True, False, True]), device=device)
    both(lambda t: t.mode(), np.array(4.0, np.float32), device=device)
    both(lambda t: t.mode(1), np.zeros((0, 3), np.float32), device=device)
    check_op(lambda x: x.mode(1), [], inputs=[ties((5, 8), 7)], device=device)
    check_op(lambda x: x.mode(0).values, [(3, 4)], dtype="float64", device=device)
    with pytest.raises(IndexError):
        pg.zeros(2, 0, device=device).mode(1)


def test_nanmedian_matches_torch(device):
    x = np.array([[1, NAN, 3, 2], [5, NAN, 1, NAN], [2, 2, NAN, 2], [2, 1, 2, 2], [7, 7, 7, 7]], np.float32)
    both(lambda t: t.nanmedian(1), x, device=device)
    both(lambda t: t.nanmedian(0, keepdim=True), x, device=device)
    both(lambda t: t.nanmedian(), x, device=device)
    both(lambda t: t.nanmedian(1), np.array([[2, 1, 2, 2, 1, 1], [3, 3, 0, 1, 2, 5]], np.int64), device=device)
    for seed in range(3):
        both(lambda t: t.nanmedian(1), ties((5, 7), seed), device=device)
    both(lambda t: t.nanmedian(), np.array([NAN, NAN], np.float32), device=device)
    both(lambda t: t.nanmedian(), np.zeros(0, np.float32), device=device)
    both(lambda t: t.nanmedian(1), np.zeros((0, 3), np.float32), device=device)
    # a row of only NaNs: the value is NaN (PyTorch's index there is arbitrary)
    v, i = pg.tensor([[NAN, NAN, NAN, NAN]], device=device).nanmedian(1)
    assert np.isnan(v.cpu().numpy()).all() and 0 <= int(i) < 4
    check_op(lambda x: lib(x).nanmedian(x, 1), [], inputs=[x[[0, 1, 2, 3]]], device=device)
    for data in (x[[0, 2, 3]], ties((4, 5), 3), np.array([NAN, 2, NAN], np.float32),
                 np.array([NAN, NAN], np.float32)):
        check_op(lambda x: x.nanmedian(), [], inputs=[data], device=device)    # shared among ties
    for shape, dim in (((2, 0), 1), ((0, 3), 0)):
        with pytest.raises(IndexError):
            pg.zeros(*shape, device=device).nanmedian(dim)


# ---- histc --------------------------------------------------------------------------------------
def test_histc_matches_torch(device):
    rng = np.random.default_rng(0)
    x = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -1, 11, NAN], np.float32)
    both(lambda t: t.histc(bins=10, min=0, max=10), x, device=device)
    both(lambda t: lib(t).histc(t, bins=3, min=0, max=0), x[:-1], device=device)
    both(lambda t: t.histc(4), np.array([2, 2, 2], np.float32), device=device)
    both(lambda t: t.histc(4, min=2, max=2), np.array([1, 2], np.float32), device=device)
    both(lambda t: t.histc(4), np.zeros(0, np.float32), device=device)
    both(lambda t: t.histc(10, 0, 1), np.array([0.1, 0.2, 0.3, 0.7, 0.6, 0.9], np.float32), device=device)
    for dtype in (np.float32, np.float64, np.float16):
        both(lambda t: t.histc(37, -1.3, 2.1), rng.uniform(-2, 3, (40, 30)).astype(dtype), device=device)
        edges = torch.linspace(-1.3, 2.1, 38, dtype=getattr(torch, np.dtype(dtype).name)).numpy()
        both(lambda t: t.histc(37, -1.3, 2.1), edges, device=device)       # values on the edges
        both(lambda t: t.histc(7), rng.integers(-5, 9, 200).astype(dtype), device=device)
    p = pg.tensor(rng.uniform(-1, 1, 50).astype(np.float32), device=device).bfloat16()
    same(p.histc(8), torch.tensor(p.float().cpu().numpy()).bfloat16().histc(8))
    h = pg.tensor([1.0, 2.0], device=device, requires_grad=True).histc(4)
    assert not h.requires_grad
    for bad, err in [(lambda: pg.tensor([1, 2], device=device).histc(4), NotImplementedError),
                     (lambda: pg.tensor([1.0, 2.0], device=device).histc(0), RuntimeError),
                     (lambda: pg.tensor([1.0, 2.0], device=device).histc(4, 3, 1), RuntimeError),
                     (lambda: pg.tensor([1.0, NAN], device=device).histc(4), RuntimeError),
                     (lambda: pg.tensor([1.0, 2.0], device=device).histc(4, 0, float("inf")), RuntimeError)]:
        with pytest.raises(err):
            bad()


# ---- scatter_reduce -----------------------------------------------------------------------------
REDUCES = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_torch(reduce, include_self, device):
    idx0 = [[0, 1, 0, 3], [2, 2, 0, 3], [0, 2, 2, 1]]           # repeats along dim 0
    idx1 = [[0, 0, 1], [3, 3, 3], [1, 0, 1], [2, 2, 2], [0, 4, 0]]
    kw = {"include_self": include_self}
    check_op(lambda x, s: x.scatter_reduce(0, like(x, idx0), s, reduce, **kw), [(4, 5), (3, 4)], device=device)
    # src larger than index (torch 2.13's backward fails on that shape: finite differences below)
    check_op(lambda x, s: lib(x).scatter_reduce(x, 1, like(x, idx1), s, reduce=reduce, **kw),
             [(5, 5), (5, 4)], device=device, grad=False)
    # ties: the amax/amin gradient is shared among equal elements of self and src
    check_op(lambda x, s: x.scatter_reduce(1, like(x, idx1), s, reduce, **kw), [],
             inputs=[ties((5, 5), 1), ties((5, 3), 2)], device=device)
    ints = [np.random.default_rng(3).integers(-4, 5, (4, 5)), np.random.default_rng(4).integers(-4, 5, (3, 4))]
    check_op(lambda x, s: x.scatter_reduce(0, like(x, idx0, "int32"), s, reduce, **kw), [], inputs=ints,
             device=device)                                         # integer mean rounds down
    if reduce != "mean":
        fd_check(lambda x, s: x.scatter_reduce(1, pg.tensor(idx1, device=device), s, reduce, **kw),
                 [(5, 5), (5, 4)], device=device)


def test_scatter_reduce_nan_inplace_and_errors(device):
    x = np.array([1, NAN, 3, 4], np.float32)
    s = np.array([NAN, 5, 1, 2, 7], np.float32)
    i = np.array([0, 0, 2, 2, 3])
    for r in REDUCES:
        both(lambda x, s, i: x.scatter_reduce(0, i, s, r), x, s, i, device=device)
    both(lambda x, s, i: x.scatter_reduce(0, i, s, "max", include_self=False), x, s, i, device=device)
    check_op(lambda x, s: x.scatter_reduce(0, like(x, [0, 0, 2]), s, "amax"), [],
             inputs=[np.array([3, 1, NAN, 2], np.float32), np.array([3, 3, 1], np.float32)], device=device)
    check_op(lambda x, s: (x * 2).scatter_reduce_(0, like(x, [[1, 1, 0], [0, 2, 2]]), s, "prod"),
             [(3, 3), (2, 3)], device=device)
    a = pg.arange(5, device=device)
    assert a.scatter_reduce_(0, pg.tensor([1, 1, 4], device=device), pg.tensor([5, 6, 7], device=device),
                             "sum") is a
    same(a, torch.tensor([0, 12, 2, 3, 11]))
    x, i = pg.zeros(5, device=device), pg.tensor([0, 1], device=device)
    for bad, err in [(lambda: x.scatter_reduce(0, i, pg.ones(2, device=device), "foo"), RuntimeError),
                     (lambda: x.scatter_reduce(0, i, pg.ones(2, dtype=pg.float64, device=device), "sum"), RuntimeError),
                     (lambda: x.scatter_reduce(0, i + 5, pg.ones(2, device=device), "amax"), RuntimeError),
                     (lambda: x.scatter_reduce(0, i, pg.ones(1, device=device), "sum"), RuntimeError),
                     (lambda: x.scatter_reduce(0, i.float(), pg.ones(2, device=device), "sum"), RuntimeError)]:
        with pytest.raises(err):
            bad()


# ---- masked_scatter / put / index_put --------------------------------------------------------------
def test_masked_scatter(device):
    m = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]])
    check_op(lambda x, s: x.masked_scatter(like(x, m), s), [(3, 4), (9,)], device=device)
    check_op(lambda x, s: lib(x).masked_scatter(x, like(x, m[0]), s), [(3, 4), (2, 5)], device=device)
    check_op(lambda x, s: x.masked_scatter(like(x, [[True], [False], [True]]), s), [(1, 4), (3, 3)],
             device=device)                                          # broadcast both ways
    check_op(lambda x, s: (x * 1).masked_scatter_(like(x, m[1]), s), [(3, 4), (6,)], device=device)
    both(lambda x, m, s: x.masked_scatter(m, s), np.arange(6).reshape(2, 3), m[2, :3], np.arange(9) * 10,
         device=device)
    both(lambda x, m, s: x.masked_scatter(m, s), np.zeros(3, np.float32), np.zeros(3, bool),
         np.zeros(0, np.float32), device=device)
    x = pg.zeros(5, device=device)
    mk = pg.tensor([True, False, True, False, True], device=device)
    for bad in [lambda: x.masked_scatter(mk, pg.ones(2, device=device)),
                lambda: x.masked_scatter(mk.long(), pg.ones(3, device=device)),
                lambda: x.masked_scatter(mk, pg.ones(3, dtype=pg.float64, device=device)),
                lambda: x.masked_scatter_(mk.reshape(1, 5), pg.ones(5, device=device))]:
        with pytest.raises(RuntimeError):
            bad()


def test_put(device):
    for acc in (False, True):
        # a repeated position (-12 is 0) only with accumulate: without it, which write wins is undefined
        idx = [[1, -2], [7, 0], [-12 if acc else -9, 5]]
        check_op(lambda x, s: x.put(like(x, idx), s, acc), [(3, 4), (3, 2)], device=device)
        check_op(lambda x, s: lib(x).put(x, like(x, [3, 3, -1, 0]), s, accumulate=True), [(2, 3), (4,)],
                 device=device)
        check_op(lambda x, s: (x + 0).put_(like(x, [4, 1]), s, accumulate=acc), [(5,), (2,)], device=device)
    both(lambda x, i, s: x.put(i, s, True), np.arange(6), np.array([0, 0, 5]), np.array([3, 4, 5]),
         device=device)
    x = pg.zeros(5, device=device)
    for bad, err in [(lambda: x.put(pg.tensor([1, 7], device=device), pg.ones(2, device=device)), IndexError),
                     (lambda: x.put(pg.tensor([1, -6], device=device), pg.ones(2, device=device)), IndexError),
                     (lambda: x.put(pg.tensor([1, 2], dtype=pg.int32, device=device), pg.ones(2, device=device)),
                      RuntimeError),
                     (lambda: x.put(pg.tensor([1, 2], device=device), pg.ones(2, dtype=pg.float64, device=device)),
                      RuntimeError),
                     (lambda: x.put(pg.tensor([1, 2], device=device), pg.ones(3, device=device)), IndexError)]:
        with pytest.raises(err):
            bad()


def test_index_put(device):
    for acc in (False, True):
        # repeated positions only with accumulate: without it, which write wins is undefined
        rows, cols = ([0, 2, 2, 0], [1, 3, 3, 1]) if acc else ([0, 2, 1, 0], [1, 3, 3, 0])
        check_op(lambda x, v: x.index_put((like(x, rows), like(x, cols)), v, accumulate=acc), [(3, 4), (4,)],
                 device=device)
        check_op(lambda x, v: lib(x).index_put(x, (like(x, [2, 0]),), v, acc), [(3, 4), (4,)], device=device)
        check_op(lambda x, v: x.index_put((like(x, [True, False, True]),), v, acc), [(3, 4), (1, 4)],
                 device=device)
        check_op(lambda x, v: (x * 1).index_put_([like(x, [[1], [0]]), like(x, [2, 3])], v, accumulate=acc),
                 [(2, 4), ()], device=device)
    both(lambda x, i, v: x.index_put((i,), v, accumulate=True), np.zeros(5), np.array([1, 2, 1]),
         np.array([1.0, 2, 3]), device=device)
    a = pg.zeros(5, device=device)
    assert pg.index_put_(a, (pg.tensor([1, 3], device=device),), pg.tensor(2.0, device=device)) is a
    same(a, torch.tensor([0, 2, 0, 2, 0.0]))
    for bad, err in [(lambda: a.index_put((pg.tensor([1, 2], device=device),),
                                          pg.ones(2, dtype=pg.float64, device=device)), RuntimeError),
                     (lambda: a.index_put((pg.tensor([1, 2], device=device),), pg.ones(3, device=device)),
                      RuntimeError),
                     (lambda: a.index_put((pg.tensor([1, 7], device=device),), pg.ones(2, device=device)),
                      IndexError),
                     (lambda: a.index_put(pg.tensor([1, 2], device=device), pg.ones(2, device=device)), TypeError),
                     (lambda: a.index_put((None, pg.tensor([1], device=device)), pg.ones(1, device=device)),
                      TypeError),
                     (lambda: a.index_put((pg.tensor([1.0, 2.0], device=device),), pg.ones(2, device=device)),
                      IndexError)]:
        with pytest.raises(err):
            bad()
    leaf = pg.zeros(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError):
        leaf.index_put_((pg.tensor([0], device=device),), pg.ones(1, device=device))
