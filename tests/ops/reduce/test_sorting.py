"""sort/argsort/topk/kthvalue/msort, multinomial, and the composed functions (tril, triu,
cumsum, roll, norm, diag, diagonal, trace, elementwise extras, closeness, nan-reductions)
against PyTorch: values, indices and gradients, on every device."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import TORCH_2_13, check_op, fd_check, lib, like


UNARY = {
    "tril": lambda x: lib(x).tril(x, 1), "triu": lambda x: lib(x).triu(x, -1), "triu-method": lambda x: x.triu(2),
    "cumsum": lambda x: lib(x).cumsum(x, 1), "cumsum0": lambda x: x.cumsum(0),
    "cumprod": lambda x: x.cumprod(1), "logcumsumexp": lambda x: lib(x).logcumsumexp(x, 0),
    "roll": lambda x: x.roll(2, 1), "roll-2d": lambda x: x.roll((1, -2), (0, 1)), "roll-flat": lambda x: x.roll(5),
    "norm": lambda x: x.norm(), "norm-1-dim": lambda x: x.norm(1, 1), "norm-3-keep": lambda x: x.norm(3, 0, True),
    "diagonal": lambda x: x.diagonal(1), "diag": lambda x: lib(x).diag(x, -1), "trace": lambda x: x[:, :4].trace(),
    "diag-1d": lambda x: lib(x).diag(x[0], 1),
    "square": lambda x: x.square(), "tan": lambda x: x.tan(), "sinh": lambda x: x.sinh(), "cosh": lambda x: x.cosh(),
    "log2": lambda x: x.abs().log2(), "log10": lambda x: x.abs().log10(), "exp2": lambda x: x.exp2(),
    "deg2rad": lambda x: x.deg2rad(), "rad2deg": lambda x: x.rad2deg(), "frac": lambda x: x.frac(),
    "sort-values": lambda x: x.sort(1, descending=True).values, "msort": lambda x: lib(x).msort(x),
    "topk-values": lambda x: x.topk(3).values, "topk-smallest": lambda x: x.topk(2, 0, largest=False).values,
    "kthvalue": lambda x: x.kthvalue(2, 1).values,
}


@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_torch(name, device):
    check_op(UNARY[name], [(4, 6)], device=device)


@pytest.mark.parametrize("name,low,high", [("asin", -0.95, 0.95), ("acos", -0.95, 0.95), ("atan", -3, 3),
                                           ("asinh", -3, 3), ("acosh", 1.1, 4), ("atanh", -0.95, 0.95),
                                           ("arcsin", -0.9, 0.9)])
def test_inverse_trig_matches_torch(name, low, high, device):
    check_op(lambda x: getattr(x, name)(), [(3, 5)], low=low, high=high, device=device)
    fd_check(lambda x: getattr(x, name)(), [(2, 3)], low=low, high=high, device=device)


BINARY = {
    "lerp": lambda x, y: lib(x).lerp(x, y, 0.3), "addcmul": lambda x, y: lib(x).addcmul(x, x, y, value=0.5),
    "addcdiv": lambda x, y: lib(x).addcdiv(x, x, y.abs() + 1, value=2), "logaddexp": lambda x, y: lib(x).logaddexp(x, y),
    "hypot": lambda x, y: lib(x).hypot(x, y), "atan2": lambda x, y: lib(x).atan2(x, y), "xlogy": lambda x, y: lib(x).xlogy(x, y.abs() + 0.1),
}


@pytest.mark.parametrize("name", BINARY)
def test_binary_matches_torch(name, device):
    check_op(BINARY[name], [(4, 6), (4, 6)], device=device)


def test_finite_differences(device):
    fd_check(lambda x: x.cumsum(1), [(3, 5)], device=device)
    fd_check(lambda x: x.cumprod(1), [(3, 5)], device=device)
    fd_check(lambda x: pg.logcumsumexp(x, 1), [(3, 5)], device=device)
    fd_check(lambda x: x.sort(1).values, [(3, 5)], device=device)
    fd_check(lambda x: x.norm(3, 1), [(3, 5)], device=device)
    fd_check(lambda x, y: pg.logaddexp(x, y), [(3, 5), (3, 5)], device=device)


def test_sort_indices_and_ties_match_torch(device):
    x = np.array([[3, 1, 3, 2, np.nan, 1, 2], [0, 0, -1, 5, 5, 4, -2]], np.float32)
    for descending in (False, True):
        p = pg.tensor(x, device=device).sort(1, descending=descending, stable=True)
        t = torch.sort(torch.tensor(x), dim=1, descending=descending, stable=True)
        np.testing.assert_array_equal(p.indices.cpu().numpy(), t.indices.numpy())
        np.testing.assert_array_equal(p.values.cpu().numpy(), t.values.numpy())
    # (PyTorch's topk orders tied values as its kernel happens to: compared on distinct values)
    y = np.random.default_rng(0).permutation(12).reshape(2, 6).astype(np.float32)
    i = pg.tensor(y, device=device).topk(3).indices
    np.testing.assert_array_equal(i.cpu().numpy(), torch.tensor(y).topk(3).indices.numpy())
    ints = np.array([5, 3, 9, 3], np.int64)
    np.testing.assert_array_equal(pg.tensor(ints, device=device).argsort().cpu().numpy(),
                                  torch.sort(torch.tensor(ints), stable=True).indices.numpy())
    np.testing.assert_array_equal(pg.tensor(ints, device=device).cumsum(0).cpu().numpy(), np.cumsum(ints))


def test_closeness_and_nan_reductions(device):
    a = pg.tensor([1.0, float("nan"), 3.0, float("inf")], device=device)
    b = pg.tensor([1.0 + 1e-7, float("nan"), 3.1, float("inf")], device=device)
    assert pg.isclose(a, b).tolist() == [True, False, False, True]
    assert pg.isclose(a, b, equal_nan=True).tolist() == [True, True, False, True]
    assert not pg.allclose(a, b) and pg.equal(a[:1], a[:1]) and not pg.equal(a[:2], a[:3])
    assert pg.nansum(a[:3]).item() == 4.0 and pg.nanmean(a[:3]).item() == 2.0
    assert pg.count_nonzero(pg.tensor([[0, 1], [2, 0]], device=device)).item() == 2


def test_multinomial_draws_match_the_distribution(device):
    pg.manual_seed(0)
    probs = pg.tensor([[0.2, 0.5, 0.3, 0.0]] * 3000, device=device)
    draws = pg.multinomial(probs, 1, replacement=True).reshape(-1).cpu().numpy()
    np.testing.assert_allclose(np.bincount(draws, minlength=4) / 3000, [0.2, 0.5, 0.3, 0.0], atol=0.03)
    without = pg.multinomial(pg.tensor([0.1, 0.0, 0.6, 0.3], device=device), 3).cpu().numpy()
    assert sorted(without) == [0, 2, 3]
    firsts = pg.multinomial(probs[:, :3], 2).cpu().numpy()
    assert (firsts[:, 0] != firsts[:, 1]).all()
    for bad in (lambda: pg.multinomial(pg.tensor([0.5, 0.0]), 2),
                lambda: pg.multinomial(pg.tensor([-1.0, 2.0]), 1),
                lambda: pg.multinomial(pg.tensor([1.0, 2.0]), 3)):
        with pytest.raises(RuntimeError):
            bad()


MOVES = {
    "tile": (lambda x: x.tile((2, 1, 2)), [(3, 4)]),
    "tile-short": (lambda x: x.tile((2,)), [(3, 4)]),
    "repeat_interleave": (lambda x: x.repeat_interleave(2, 1), [(3, 4)]),
    "repeat_interleave-flat": (lambda x: x.repeat_interleave(3), [(3, 4)]),
    "tensor_split-n": (lambda x: x.tensor_split(3, 1), [(3, 4)]),
    "tensor_split-at": (lambda x: x.tensor_split([1, 3], 0), [(5, 2)]),
    "index_add": (lambda x, s: x.index_add(1, like(x, [0, 2, 0]), s, alpha=2), [(3, 4), (3, 3)]),
    "index_fill": (lambda x: x.index_fill(1, like(x, [1, 3]), -1.0), [(3, 4)]),
    "index_copy": (lambda x, s: x.index_copy(0, like(x, [2, 0]), s), [(3, 4), (2, 4)]),
}


@pytest.mark.parametrize("name", MOVES)
def test_movement_and_indexed_updates_match_torch(name, device):
    fn, shapes = MOVES[name]
    check_op(fn, shapes, device=device)


def test_counting_and_unique_match_torch(device):
    idx = np.array([1, 1, 4, 0], np.int64)
    np.testing.assert_array_equal(pg.bincount(pg.tensor(idx, device=device)).cpu().numpy(),
                                  torch.bincount(torch.tensor(idx)).numpy())
    w = np.array([0.5, 0.5, 2.0, 1.0], np.float32)
    np.testing.assert_allclose(pg.bincount(pg.tensor(idx, device=device), pg.tensor(w, device=device), 7).cpu().numpy(),
                               torch.bincount(torch.tensor(idx), torch.tensor(w), 7).numpy())
    v = np.array([[3, 1], [3, 2]], np.int64)
    got = pg.unique(pg.tensor(v, device=device), return_inverse=True, return_counts=True)
    want = torch.unique(torch.tensor(v), return_inverse=True, return_counts=True)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.cpu().numpy(), b.numpy())
    counts = pg.tensor([1, 0, 2], device=device)
    np.testing.assert_array_equal(pg.arange(3.0, device=device).repeat_interleave(counts).cpu().numpy(), [0, 2, 2])


SMALL = {   # name: (fn(x[, y]), shapes)
    "ravel": (lambda x: x.ravel(), [(3, 4)]), "fliplr": (lambda x: x.fliplr(), [(3, 4)]),
    "flipud": (lambda x: x.flipud(), [(3, 4)]), "select": (lambda x: x.select(1, -1), [(3, 4)]),
    "take": (lambda x: x.take(like(x, [[0, 5], [11, 2]])), [(3, 4)]),
    "take_along_dim": (lambda x: x.take_along_dim(like(x, [[0], [2], [1]]), 1), [(3, 4)]),
    "diff": (lambda x: x.diff(2, 1), [(3, 5)]), "erfc": (lambda x: x.erfc(), [(3, 4)]),
    "logit": (lambda x: x.sigmoid().logit(), [(3, 4)]), "fmod": (lambda x: (x * 5).fmod(2.0), [(3, 4)]),
    "addmm": (lambda a, b: lib(a).addmm(a, b, b.T, beta=0.5, alpha=2), [(3, 3), (3, 4)]),
    "dist": (lambda a, b: a.dist(b, 3), [(3, 4), (3, 4)]),
    "cross": (lambda a, b: lib(a).cross(a, b, dim=1), [(4, 3), (4, 3)]),
    "median": (lambda x: x.median(), [(3, 5)]), "median-dim": (lambda x: x.median(1).values, [(3, 5)]),
    "aminmax": (lambda x: x.aminmax(dim=0).max, [(3, 4)]),
    "fmax": (lambda a, b: lib(a).fmax(a, b), [(3, 4), (3, 4)]),
    "float_power": (lambda x: x.abs().float_power(1.5), [(3, 4)]),
}


@pytest.mark.parametrize("name", SMALL)
def test_small_composites_match_torch(name, device):
    if name == "aminmax" and not TORCH_2_13:
        pytest.skip(f"torch {torch.__version__} has no derivative for aminmax")
    fn, shapes = SMALL[name]
    check_op(fn, shapes, device=device)


def test_nan_to_num_heaviside_and_device_queries(device):
    x = pg.tensor([float("nan"), float("inf"), -float("inf"), 1.5], device=device)
    t = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.5])
    np.testing.assert_array_equal(x.nan_to_num().cpu().numpy(), t.nan_to_num().numpy())
    np.testing.assert_array_equal(x.nan_to_num(1.0, 2.0, -3.0).cpu().numpy(), t.nan_to_num(1.0, 2.0, -3.0).numpy())
    h = pg.tensor([-1.0, 0.0, 2.0], device=device).heaviside(pg.tensor(0.5, device=device))
    assert h.cpu().tolist() == [0.0, 0.5, 1.0]
    assert pg.ones(1, device=device).get_device() == (-1 if device == "cpu" else 0)
    assert not pg.ones(1).is_complex()


def test_combining_and_searching_match_torch(device):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    P = lambda v: pg.tensor(v, device=device)  # noqa: E731
    T = torch.tensor

    def same(x, y):
        for u, v in zip(x if isinstance(x, tuple) else (x,), y if isinstance(y, tuple) else (y,)):
            assert tuple(u.shape) == tuple(v.shape)
            np.testing.assert_allclose(u.detach().cpu().numpy(), v.detach().numpy(), rtol=1e-5, atol=1e-6)
    same(pg.atleast_3d(P(a)), torch.atleast_3d(T(a)))
    zero_d, row = np.float32(2.0), a[0]
    for f in ("atleast_1d", "atleast_2d", "atleast_3d"):     # one tensor -> a tensor; a list -> a tuple
        for args in ((zero_d,), ([zero_d],), ((zero_d, row),), (zero_d, row)):
            ours = getattr(pg, f)(*[[P(v) for v in x] if isinstance(x, (list, tuple)) else P(x) for x in args])
            theirs = getattr(torch, f)(*[[T(v) for v in x] if isinstance(x, (list, tuple)) else T(x) for x in args])
            assert type(ours) is tuple if type(theirs) is tuple else isinstance(ours, pg.Tensor), (f, args)
            same(ours, theirs)
    same(pg.hstack([P(zero_d), P(row), P(zero_d)]), torch.hstack([T(zero_d), T(row), T(zero_d)]))
    with pytest.raises(RuntimeError):
        pg.broadcast_tensors(P(a), P(b))
    same(pg.broadcast_tensors(P(a[:, :1]), P(a[:1])), torch.broadcast_tensors(T(a[:, :1]), T(a[:1])))
    for ix in ("ij", "xy"):
        same(pg.meshgrid(P(a[0]), P(b[0]), P(a[1, :2]), indexing=ix),
             torch.meshgrid(T(a[0]), T(b[0]), T(a[1, :2]), indexing=ix))
    same(pg.cartesian_prod(P(a[0, :2]), P(b[0, :3])), torch.cartesian_prod(T(a[0, :2]), T(b[0, :3])))
    same(pg.block_diag(P(a[:2, :2]), P(b[:1]), P(a[0, :1])), torch.block_diag(T(a[:2, :2]), T(b[:1]), T(a[0, :1])))
    same(pg.column_stack([P(a[0]), P(a[1])]), torch.column_stack([T(a[0]), T(a[1])]))
    same(pg.dstack([P(a), P(a)]), torch.dstack([T(a), T(a)]))
    same(pg.tensordot(P(a), P(b), 1), torch.tensordot(T(a), T(b), 1))
    same(pg.tensordot(P(a), P(a), ([1], [1])), torch.tensordot(T(a), T(a), ([1], [1])))
    same(pg.cdist(P(a), P(a[:2])), torch.cdist(T(a), T(a[:2])))
    same(pg.cdist(P(a), P(a[:2]), p=1.0), torch.cdist(T(a), T(a[:2]), p=1.0))
    seq = np.array([1.0, 3.0, 5.0, 7.0], np.float32)
    v = np.array([[0.0, 3.0, 6.0], [7.0, 8.0, 1.0]], np.float32)
    for right in (False, True):
        same(pg.searchsorted(P(seq), P(v), right=right), torch.searchsorted(T(seq), T(v), right=right))
    same(pg.bucketize(P(v), P(seq)), torch.bucketize(T(v), T(seq)))


def test_tensordot_and_cdist_gradients(device):
    check_op(lambda x, y: (torch if isinstance(x, torch.Tensor) else pg).tensordot(x, y, 1), [(3, 4), (4, 5)],
             device=device)
    check_op(lambda x, y: (torch if isinstance(x, torch.Tensor) else pg).cdist(x, y), [(3, 4), (2, 4)],
             device=device)


@pytest.mark.parametrize("args", [(1, 3, 2), (1, 2, 1), (0, 1, 1), (2, 3, 3), (-2, 7, 1)])
def test_unfold_matches_torch(args, device):
    check_op(lambda x: x.unfold(*args), [(2, 7, 3)], device=device)


@pytest.mark.parametrize("shifts,dims", [(0, 1), (4, 1), ((3, -5), (0, 1)), (-1, -1)], ids=repr)
def test_roll_is_a_new_tensor_even_unmoved(device, shifts, dims):
    a = np.arange(12.0).reshape(3, 4)
    x = pg.tensor(a, device=device, requires_grad=True)
    y = x.roll(shifts, dims)
    np.testing.assert_array_equal(y.detach().cpu().numpy(), torch.tensor(a).roll(shifts, dims).numpy())
    assert y is not x
    y.detach()[0, 0] = -1.0            # (a copy: writing it leaves x alone)
    assert x[0, 0].item() == 0.0
    (y * pg.arange(12.0, device=device).reshape(3, 4)).sum().backward()
    t = torch.tensor(a, requires_grad=True)
    (t.roll(shifts, dims) * torch.arange(12.0).reshape(3, 4)).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), t.grad.numpy())
