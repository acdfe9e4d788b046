"""the composed ops (rearrangement, math, creation, sorting, statistics) against PyTorch: rot90, diag_embed, vander, index factories, sign and
float decomposition, gcd/lcm, isin, logspace, the add-a-product family, std_mean, trapezoid,
cov/corrcoef, renorm and unique_consecutive (values, dtypes, gradients, errors), on every device."""
import math
import warnings

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import assert_close, check_op, fd_check, lib, like, needs_torch_2_13

pytestmark = pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated")


def pair(device):
    """Constructors for the same data in torch and in paragrad on `device`."""
    return torch.tensor, (lambda v, dtype=None: pg.tensor(v, dtype=dtype, device=device))


def same(p, t):
    """Exact equality of values, shapes and dtypes (of tensors or tuples of them)."""
    if isinstance(t, (tuple, list)):
        assert isinstance(p, (tuple, list)) and len(p) == len(t), f"{p!r} vs torch {t!r}"
        for a, b in zip(p, t):
            same(a, b)
        return
    assert_close(p, t, 0, 0)


GRAD = {   # name: (fn, shapes[, check_op options]); outputs and gradients compared with torch
    "rot90": (lambda x: lib(x).rot90(x, 1, [0, 1]), [(3, 4)]),
    "rot90-k2": (lambda x: x.rot90(2, (1, 2)), [(2, 3, 4)]),
    "rot90-k-1": (lambda x: x.rot90(-1, (2, 0)), [(2, 3, 4)]),
    "rot90-k3": (lambda x: x.rot90(3, (-1, -2)), [(2, 3, 4)]),
    "rot90-k4": (lambda x: x.rot90(4), [(3, 4)]),
    "diag_embed": (lambda x: lib(x).diag_embed(x), [(2, 3)]),
    "diag_embed-offset": (lambda x: x.diag_embed(1, 0, 2), [(2, 3)]),
    "diag_embed-negative": (lambda x: x.diag_embed(-2, -1, 0), [(2, 3)]),
    "diagflat": (lambda x: x.diagflat(-1), [(2, 3)]),
    # (torch's vander fills a tensor in place: its backward fails; the gradient is checked
    # against finite differences below)
    "vander": (lambda x: lib(x).vander(x), [(4,)], {"grad": False}),
    "vander-N-increasing": (lambda x: lib(x).vander(x, 5, True), [(3,)], {"grad": False}),
    "combinations": (lambda x: lib(x).combinations(x), [(5,)]),
    "combinations-3-replacement": (lambda x: lib(x).combinations(x, 3, with_replacement=True), [(4,)]),
    "narrow_copy": (lambda x: x.narrow_copy(1, 1, 2), [(3, 4)]),
    "positive": (lambda x: x.positive() * 2, [(3, 4)]),
    "rsub": (lambda x, y: lib(x).rsub(x, y, alpha=2), [(3, 4), (4,)]),
    "rsub-scalar": (lambda x: lib(x).rsub(x, 1.5), [(3, 4)]),
    "copysign": (lambda x, y: lib(x).copysign(x, y), [(3, 4), (3, 4)]),
    "copysign-broadcast": (lambda x, y: x.copysign(y), [(3, 4), (4,)]),
    "copysign-scalar": (lambda x: x.copysign(-0.0), [(3, 4)]),
    "ldexp-float-exponent": (lambda x, y: lib(x).ldexp(x, y), [(3, 4), (3, 4)]),
    "frexp": (lambda x: lib(x).frexp(x * 100), [(3, 4)]),
    "sinc": (lambda x: x.sinc(), [(3, 4)]),
    "addbmm": (lambda i, a, b: lib(i).addbmm(i, a, b, beta=0.5, alpha=2), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    "addbmm-broadcast": (lambda i, a, b: i.addbmm(a, b), [(5,), (2, 3, 4), (2, 4, 5)]),
    "addmv": (lambda i, m, v: lib(i).addmv(i, m, v, beta=0.5, alpha=2), [(3,), (3, 4), (4,)]),
    "addmv-beta0": (lambda i, m, v: i.addmv(m, v, beta=0), [(1,), (3, 4), (4,)]),
    "addr": (lambda i, a, b: lib(i).addr(i, a, b, alpha=-1), [(3, 4), (3,), (4,)]),
    "addr-beta0": (lambda i, a, b: i.addr(a, b, beta=0), [(3, 4), (3,), (4,)]),
    "chain_matmul": (lambda a, b, c, d: lib(a).chain_matmul(a, b, c, d), [(2, 5), (5, 3), (3, 6), (6, 2)]),
    "std_mean": (lambda x: lib(x).std_mean(x, 1), [(3, 4)]),
    "std_mean-keepdim": (lambda x: lib(x).std_mean(x, dim=(0, 2), correction=0, keepdim=True), [(2, 3, 4)]),
    "std_mean-legacy": (lambda x: lib(x).std_mean(x, False), [(3, 4)]),
    "std_mean-positional": (lambda x: lib(x).std_mean(x, 0, False, True), [(3, 4)]),
    "trapezoid": (lambda y: lib(y).trapezoid(y), [(3, 4)]),
    "trapezoid-dx": (lambda y: lib(y).trapezoid(y, dx=0.5, dim=0), [(3, 4)]),
    "trapezoid-x1d": (lambda y, x: lib(y).trapezoid(y, x), [(3, 4), (4,)]),
    "trapezoid-x": (lambda y, x: lib(y).trapezoid(y, x, dim=0), [(3, 4), (3, 4)]),
    "trapezoid-x-broadcast": (lambda y, x: lib(y).trapezoid(y, x), [(2, 3, 4), (3, 4)]),
    "trapz": (lambda y: lib(y).trapz(y, dx=2.0), [(3, 4)]),
    "cumulative_trapezoid": (lambda y: lib(y).cumulative_trapezoid(y), [(3, 4)]),
    "cumulative_trapezoid-dx": (lambda y: lib(y).cumulative_trapezoid(y, dx=0.5, dim=0), [(3, 4)]),
    "cumulative_trapezoid-x1d": (lambda y, x: lib(y).cumulative_trapezoid(y, x), [(3, 4), (4,)]),
    "cumulative_trapezoid-x": (lambda y, x: lib(y).cumulative_trapezoid(y, x, dim=0), [(3, 4), (3, 4)]),
    "cov": (lambda x: lib(x).cov(x), [(3, 6)]),
    "cov-1d": (lambda x: x.cov(correction=0), [(6,)]),
    "cov-weights": (lambda x, w: x.cov(correction=2, fweights=like(x, [1, 2, 1, 3, 1, 2]), aweights=w.abs() + 0.1),
                    [(3, 6), (6,)]),
    "cov-fweights": (lambda x: x.cov(fweights=like(x, [1, 0, 3, 2, 1, 1])), [(2, 6)]),
    "corrcoef": (lambda x: x.corrcoef(), [(3, 6)]),
    "corrcoef-1d": (lambda x: lib(x).corrcoef(x), [(6,)]),
    "renorm": (lambda x: x.renorm(2, 0, 2.5), [(4, 5)]),
    "renorm-inf-dim1": (lambda x: lib(x).renorm(x, float("inf"), 1, 1.5), [(4, 5)]),
    "renorm-p1-3d": (lambda x: x.renorm(1, -1, 3.0), [(2, 3, 4)]),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=needs_torch_2_13) if n == "narrow_copy" else n
                                  for n in GRAD])    # (older torch has no narrow_copy derivative)
def test_matches_torch_with_gradients(name, device):
    fn, shapes, *opts = GRAD[name]
    check_op(fn, shapes, device=device, **(opts[0] if opts else {}))


def test_finite_differences(device):
    fd_check(lambda x: x.renorm(2, 0, 2.5), [(3, 4)], device=device)
    fd_check(lambda x: pg.frexp(x * 10).mantissa, [(2, 3)], device=device)
    fd_check(lambda x: x.cov(), [(2, 5)], device=device)
    fd_check(lambda x: x.corrcoef(), [(2, 5)], device=device)
    fd_check(lambda x: x.sinc(), [(2, 3)], device=device)
    fd_check(lambda y, x: pg.cumulative_trapezoid(y, x), [(2, 4), (4,)], device=device)
    fd_check(lambda x, y: pg.ldexp(x, y), [(2, 3), (2, 3)], device=device)
    fd_check(lambda x: pg.vander(x, 4), [(3,)], device=device)


def test_half_precision(device):
    check_op(lambda x: x.renorm(2, 0, 1.0), [(3, 4)], dtype="float16", device=device)
    check_op(lambda x: x.sinc(), [(3, 4)], dtype="float16", device=device)
    check_op(lambda x: x.frexp(), [(3, 4)], dtype="bfloat16", device=device)


def test_integer_inputs_match_torch(device):
    tt, pt = pair(device)
    v = [[1, 4, 2], [3, 0, 5]]
    same(pg.vander(pt(v[0], dtype=pg.int32)), torch.vander(tt(v[0], dtype=torch.int32)))
    same(pg.vander(pt([True, False])), torch.vander(tt([True, False])))
    same(pg.vander(pt([1.0, 2.0]), 0), torch.vander(tt([1.0, 2.0]), 0))
    same(pg.diag_embed(pt([True, False])), torch.diag_embed(tt([True, False])))
    same(pg.rot90(pt(v)), torch.rot90(tt(v)))
    same(pg.copysign(pt([1, 2, 0]), pt([-1, 0, -3])), torch.copysign(tt([1, 2, 0]), tt([-1, 0, -3])))
    same(pg.ldexp(pt([1, 3]), pt([2, -1])), torch.ldexp(tt([1, 3]), tt([2, -1])))
    same(pg.ldexp(pt([1.0], dtype=pg.float16), pt([3])), torch.ldexp(tt([1.0], dtype=torch.float16), tt([3])))
    same(pg.rsub(pt([1, 2]), 2.5, alpha=3), torch.rsub(tt([1, 2]), 2.5, alpha=3))
    same(pg.rsub(pt([1, 2]), pt([7]), alpha=3), torch.rsub(tt([1, 2]), tt([7]), alpha=3))
    same(pg.sinc(pt([0, 1, 2])), torch.sinc(tt([0, 1, 2])))
    same(pg.addmv(pt([1, 2]), pt(v).T[:2], pt([1, -1])), torch.addmv(tt([1, 2]), tt(v).T[:2], tt([1, -1])))
    same(pg.addr(pt([[1]]), pt([1, 2]), pt([3, 4]), beta=2, alpha=3),
         torch.addr(tt([[1]]), tt([1, 2]), tt([3, 4]), beta=2, alpha=3))
    b = pt([True, False])
    same(pg.addr(pg.zeros(2, 2, dtype=pg.bool, device=device), b, b),
         torch.addr(torch.zeros(2, 2, dtype=torch.bool), tt([True, False]), tt([True, False])))
    same(pg.addbmm(pt([[1]]), pt([[[1, 2]], [[3, 4]]]), pt([[[1], [1]], [[2], [0]]])),
         torch.addbmm(tt([[1]]), tt([[[1, 2]], [[3, 4]]]), tt([[[1], [1]], [[2], [0]]])))
    same(pg.chain_matmul(pt(v), pt(v).T), torch.chain_matmul(tt(v), tt(v).T))
    same(pg.trapezoid(pt([1, 2, 4])), torch.trapezoid(tt([1, 2, 4])))
    same(pg.trapezoid(pt([1, 2, 4]), pt([1, 2, 5])), torch.trapezoid(tt([1, 2, 4]), tt([1, 2, 5])))
    same(pg.trapezoid(pt([1, 2, 4]), dx=2), torch.trapezoid(tt([1, 2, 4]), dx=2))
    same(pg.cumulative_trapezoid(pt([1, 2, 4])), torch.cumulative_trapezoid(tt([1, 2, 4])))
    same(pg.cumulative_trapezoid(pt([1, 2, 4]), pt([0, 2, 3])), torch.cumulative_trapezoid(tt([1, 2, 4]), tt([0, 2, 3])))
    same(pg.trapezoid(pg.ones(2, 0, dtype=pg.int64, device=device)), torch.trapezoid(torch.ones(2, 0, dtype=torch.int64)))
    same(pg.trapezoid(pg.ones(2, 0, device=device), pg.ones(0, device=device)),
         torch.trapezoid(torch.ones(2, 0), torch.ones(0)))
    same(pg.cumulative_trapezoid(pg.ones(2, 0, device=device)), torch.cumulative_trapezoid(torch.ones(2, 0)))
    w = [[1, 2, 4, 0], [3, 3, 1, 5]]
    assert_close(pg.cov(pt(w)), torch.cov(tt(w)), 1e-6, 1e-6)
    assert_close(pg.corrcoef(pt(w)), torch.corrcoef(tt(w)), 1e-6, 1e-6)
    aw = [0.5, 2.0, 1.0, 3.0]
    assert_close(pg.cov(pt(w), aweights=pt(aw, dtype=pg.float64)),
                 torch.cov(tt(w), aweights=tt(aw, dtype=torch.float64)), 1e-9, 1e-9)


def test_index_factories(device):
    for args in [(3, 4), (3, 4, 1), (4, 3, -1), (3, 4, -5), (0, 4), (5, 5, 10), (3, 3, 0)]:
        for name in ("tril_indices", "triu_indices"):
            same(getattr(pg, name)(*args, device=device), getattr(torch, name)(*args))
    same(pg.tril_indices(3, 4, dtype=pg.int32, device=device), torch.tril_indices(3, 4, dtype=torch.int32))
    assert pg.triu_indices(2, 2, device=device).device == pg.device(device)
    x, tx = pg.arange(4.0, device=device), torch.arange(4.0)
    for r, rep in [(0, False), (1, False), (4, False), (5, False), (2, True), (5, True)]:
        same(pg.combinations(x, r, rep), torch.combinations(tx, r, rep))
    same(pg.combinations(x[:0]), torch.combinations(tx[:0]))
    a = np.array([[0, 1.5, 0], [2, 0, -1]], np.float32)
    same(pg.tensor(a, device=device).argwhere(), torch.tensor(a).argwhere())
    same(pg.argwhere(pg.tensor(2.0, device=device)), torch.argwhere(torch.tensor(2.0)))
    same(pg.argwhere(pg.tensor(0, device=device)), torch.argwhere(torch.tensor(0)))


def test_special_values(device):
    tt, pt = pair(device)
    inf, nan = math.inf, math.nan
    v = [0.0, -0.0, 1.5, -2.0, inf, -inf, nan, 1e-42, -3e38]
    x, t = pt(v), tt(v)
    for name in ("isposinf", "isneginf", "isreal", "signbit"):
        same(getattr(x, name)(), getattr(t, name)())
    for ints in ([1, -2, 0], [True, False]):
        for name in ("isposinf", "isneginf", "isreal", "signbit"):
            same(getattr(pg, name)(pt(ints)), getattr(torch, name)(tt(ints)))
    same(pg.signbit(pt([3, 0], dtype=pg.uint8)), torch.signbit(tt([3, 0], dtype=torch.uint8)))
    same(pg.isreal(pt(2.0)), torch.isreal(tt(2.0)))
    finite = [0.0, -0.0, 1.5, -2.0, inf, -inf, 3.0]
    for other in ([-0.0, 0.0, -1.0, 2.0, -inf, inf, -5.0], -0.0, 2):
        same(pg.copysign(pt(finite), pt(other) if isinstance(other, list) else other),
             torch.copysign(tt(finite), tt(other) if isinstance(other, list) else other))
    same(pg.ldexp(pt([1.0, 1e-30, 3.0]), pt([200, 100, -2])), torch.ldexp(tt([1.0, 1e-30, 3.0]), tt([200, 100, -2])))
    # frexp: zeros, infinities, NaN, powers of two, subnormals and the extremes of each dtype
    subnormal32 = [1e-45, 1e-40] if device == "cpu" else []     # (CUDA's float32 kernels flush them)
    for dtype, extra in [("float64", [5e-324, 2.2e-308, 1.7976931348623157e308, 2.0 ** 1000, 2.0 ** -1022]),
                         ("float32", subnormal32 + [3.4028234e38, 2.0 ** -126, 0.75]),
                         ("float16", [6e-8, 1e-5, 65504.0, 2.0 ** -14, 1024.0])]:
        vals = [0.0, -0.0, inf, -inf, nan, 1.0, -1.0, 0.5, 2.0, 3.0, -7.25, 1 / 3] + extra
        same(pg.frexp(pt(vals, dtype=getattr(pg, dtype))), torch.frexp(tt(vals, dtype=getattr(torch, dtype))))
    p = pg.tensor([0.0, 0.5, -1.0], device=device, requires_grad=True)
    q = torch.tensor([0.0, 0.5, -1.0], requires_grad=True)
    p.sinc().sum().backward()
    q.sinc().sum().backward()
    same(p.sinc(), q.sinc().detach())
    assert_close(p.grad, q.grad, 1e-6, 1e-5)


def test_gcd_lcm(device):
    rng = np.random.default_rng(0)
    a = rng.integers(-60, 60, size=(3, 8))
    b = rng.integers(-60, 60, size=(8,))
    a[0, :3], b[:3] = [0, 0, 12], [0, -5, 0]
    tt, pt = pair(device)
    for name in ("gcd", "lcm"):
        same(getattr(pg, name)(pt(a), pt(b)), getattr(torch, name)(tt(a), tt(b)))
        same(getattr(pt(a, dtype=pg.int32), name)(pt(b, dtype=pg.int16)),
             getattr(tt(a, dtype=torch.int32), name)(tt(b, dtype=torch.int16)))
    same(pg.gcd(pt([2 ** 62, 7540113804746346429]), pt([2 ** 40 * 3, 4660046610375530309])),  # Fibonacci: 90 rounds
         torch.gcd(tt([2 ** 62, 7540113804746346429]), tt([2 ** 40 * 3, 4660046610375530309])))
    same(pg.lcm(pt([100], dtype=pg.int8), pt([3], dtype=pg.int8)),
         torch.lcm(tt([100], dtype=torch.int8), tt([3], dtype=torch.int8)))
    same(pg.gcd(pt([12, 200], dtype=pg.uint8), pt([18, 150], dtype=pg.uint8)),
         torch.gcd(tt([12, 200], dtype=torch.uint8), tt([18, 150], dtype=torch.uint8)))


def test_isin(device):
    tt, pt = pair(device)
    rng = np.random.default_rng(1)
    e = rng.integers(0, 20, size=(4, 6))
    for test in (rng.integers(0, 20, size=3), rng.integers(0, 20, size=(5, 7)), np.array([], np.int64)):
        for invert in (False, True):
            same(pg.isin(pt(e), pt(test), invert=invert), torch.isin(tt(e), tt(test), invert=invert))
    u, v = rng.permutation(40)[:24].reshape(4, 6), rng.permutation(40)[:25]     # unique values
    for invert in (False, True):
        same(pg.isin(pt(u), pt(v), assume_unique=True, invert=invert),
             torch.isin(tt(u), tt(v), assume_unique=True, invert=invert))
    f = np.array([1.0, math.nan, -0.0, 2.5, math.inf, 7.0], np.float32)
    g = np.array([0.0, math.nan, math.inf, 2.5, 3.0] * 4, np.float32)     # many: the sorting path
    same(pg.isin(pt(f), pt(g)), torch.isin(tt(f), tt(g)))
    same(pg.isin(pt(f), pt(g[:2])), torch.isin(tt(f), tt(g[:2])))
    same(pg.isin(pt([1, 2, 3]), pt([1.5, 2.0])), torch.isin(tt([1, 2, 3]), tt([1.5, 2.0])))
    same(pg.isin(pt([1, 2, 3], dtype=pg.int32), pt([2] * 30)), torch.isin(tt([1, 2, 3], dtype=torch.int32), tt([2] * 30)))
    same(pg.isin(2, pt([1, 2])), torch.isin(2, tt([1, 2])))
    same(pg.isin(pt([[1, 2]]), 2), torch.isin(tt([[1, 2]]), 2))
    same(pg.isin(pt(np.zeros((0, 3))), pt([1.0])), torch.isin(tt(np.zeros((0, 3))), tt([1.0])))


def test_logspace(device):
    cases = [((0, 3, 4), {}), ((0, 3, 7), {"dtype": "int64"}), ((-1, 3, 7), {"base": 2, "dtype": "int32"}),
             ((0, 3, 4), {"base": 3}), ((3, 0, 4), {"base": -2}), ((0, 1, 1), {}), ((0, 1, 0), {}),
             ((0.5, 10.3, 7), {"dtype": "int64"}), ((0.5, 10.3, 7), {}), ((0.5, 10.3, 7), {"dtype": "float64"}),
             ((0.1, 2.3, 5), {"dtype": "float16"}), ((0, 2, 3), {"dtype": "uint8", "base": 7}),
             ((-2.5, 1.1, 6), {"base": 0.5}), ((1.7, -0.3, 1), {"dtype": "float64"})]
    for args, kw in cases:
        p = pg.logspace(*args, **{k: getattr(pg, v) if k == "dtype" else v for k, v in kw.items()}, device=device)
        t = torch.logspace(*args, **{k: getattr(torch, v) if k == "dtype" else v for k, v in kw.items()})
        assert_close(p, t, 0, 1e-6 if t.dtype == torch.float32 else 1e-12 if t.dtype == torch.float64 else 0)
    assert pg.logspace(0, 1, 3, requires_grad=True).requires_grad


def test_unique_consecutive(device):
    tt, pt = pair(device)
    x = [[1, 1, 2, 2, 2], [3, 3, 0, 0, 1]]
    cases = [(x, {}), (x, {"dim": 1}), (x, {"dim": 0}), (np.array(x).T.tolist(), {"dim": 0}),
             ([1.0, math.nan, math.nan, 2.0, 2.0], {}), (5, {}), ([], {}), (np.ones((2, 0)), {"dim": 1}),
             ([[1.0, 1.0], [1.0, 1.0]], {"dim": -1}), ([7], {"dim": 0})]
    for v, kw in cases:
        for inv in (False, True):
            for counts in (False, True):
                kw2 = dict(kw, return_inverse=inv, return_counts=counts)
                same(pg.unique_consecutive(pt(v), **kw2), torch.unique_consecutive(tt(v), **kw2))
    same(pt(x).unique_consecutive(return_counts=True), tt(x).unique_consecutive(return_counts=True))
    r = pg.tensor([1.0, 1.0], device=device, requires_grad=True).unique_consecutive()
    assert not r.requires_grad


def test_in_place_forms_match_torch(device):
    rng = np.random.default_rng(2)
    a, b = rng.uniform(-2, 2, (3, 4)).astype(np.float32), rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    tt, pt = pair(device)
    ints = rng.integers(-20, 20, (3, 4))
    cases = [
        (lambda x, M: x.copysign_(M(b)), a), (lambda x, M: x.copysign_(-1.0), a),
        (lambda x, M: x.ldexp_(M(ints[0])), a), (lambda x, M: x.sinc_(), a),
        (lambda x, M: x.gcd_(M(ints[1])), ints), (lambda x, M: x.lcm_(M(ints[2])), ints),
        (lambda x, M: x.addbmm_(M(np.stack([a, b])), M(np.stack([b.T, a.T])), beta=2), a[:, :3]),
        (lambda x, M: x.addmv_(M(a), M(b[0]), alpha=0.5), a[:, 0]),
        (lambda x, M: x.addr_(M(a[:, 0]), M(b[0])), a), (lambda x, M: x.renorm_(2, 1, 1.0), a),
    ]
    for fn, start in cases:
        p, t = pt(start), tt(start)
        rp, rt = fn(p, pt), fn(t, tt)
        assert rp is p
        assert_close(p, t, 1e-5, 1e-5)
        assert_close(rp, rt, 1e-5, 1e-5)
    # the result must fit self: a float result into an int tensor, or a broadcast past its shape
    for fn in (lambda x, M: x.copysign_(M([1.0, -1.0])), lambda x, M: x.addr_(M([1, 2, 3]), M([1, 1]))):
        with pytest.raises(RuntimeError):
            fn(torch.tensor([1, 2]), torch.tensor)
        with pytest.raises(RuntimeError):
            fn(pt([1, 2]), pt)
    w = pg.tensor(a, device=device, requires_grad=True)
    y = w * 1
    y.renorm_(2, 0, 1.0)
    y.sum().backward()
    w2 = torch.tensor(a, requires_grad=True)
    y2 = w2 * 1
    y2.renorm_(2, 0, 1.0)
    y2.sum().backward()
    assert_close(w.grad, w2.grad, 1e-5, 1e-4)


ERRORS = {   # name: fn(M, T) raising the same exception type in torch (M, T = torch, torch.tensor)
    "rot90-3dims": lambda M, T: M.rot90(T([[1.0]]), 1, [0, 1, 0]),
    "rot90-1d": lambda M, T: M.rot90(T([1.0, 2.0])),
    "rot90-same": lambda M, T: M.rot90(T([[1.0]]), 1, [1, -1]),
    "rot90-range": lambda M, T: M.rot90(T([[1.0]]), 1, [0, 5]),
    "diag_embed-same": lambda M, T: M.diag_embed(T([1.0]), 0, 0, 0),
    "diag_embed-range": lambda M, T: M.diag_embed(T([[1.0]]), 0, 0, 3),
    "diag_embed-0d": lambda M, T: M.diag_embed(T(2.0)),
    "vander-2d": lambda M, T: M.vander(T([[1.0]])),
    "vander-N": lambda M, T: M.vander(T([1.0]), -1),
    "tril_indices-float": lambda M, T: M.tril_indices(3, 3, dtype=M.float32),
    "tril_indices-row": lambda M, T: M.tril_indices(-1, 3),
    "triu_indices-col": lambda M, T: M.triu_indices(3, -2),
    "combinations-2d": lambda M, T: M.combinations(T([[1.0]])),
    "combinations-r": lambda M, T: M.combinations(T([1.0]), -1),
    "narrow_copy": lambda M, T: M.narrow_copy(T([1.0, 2.0]), 0, 1, 5),
    "positive-bool": lambda M, T: M.positive(T([True])),
    "rsub-float-alpha": lambda M, T: M.rsub(T([1]), T([2]), alpha=1.5),
    "rsub-bool": lambda M, T: M.rsub(T([True]), T([True])),
    "rsub-scalar-first": lambda M, T: M.rsub(2, T([1.0])),
    "ldexp-scalar": lambda M, T: M.ldexp(T([1.0]), 3),
    "frexp-int": lambda M, T: M.frexp(T([1])),
    "gcd-float": lambda M, T: M.gcd(T([1.0]), T([2.0])),
    "gcd-bool": lambda M, T: M.gcd(T([True]), T([True])),
    "lcm-scalar": lambda M, T: M.lcm(T([4]), 2),
    "logspace-steps": lambda M, T: M.logspace(0, 1, -1),
    "logspace-bool": lambda M, T: M.logspace(0, 1, 3, dtype=M.bool),
    "addbmm-2d": lambda M, T: M.addbmm(T([[1.0]]), T([[1.0]]), T([[[1.0]]])),
    "addbmm-batches": lambda M, T: M.addbmm(T([[1.0]]), T([[[1.0]]] * 2), T([[[1.0]]] * 3)),
    "addbmm-inner": lambda M, T: M.addbmm(T([[1.0]]), T([[[1.0, 2.0]]]), T([[[1.0]]])),
    "addbmm-input": lambda M, T: M.addbmm(T([[1.0, 2.0]] * 2), T([[[1.0]]]), T([[[1.0]]])),
    "addmv-dims": lambda M, T: M.addmv(T([1.0]), T([[[1.0]]]), T([1.0])),
    "addmv-size": lambda M, T: M.addmv(T([1.0, 2.0]), T([[1.0, 2.0]] * 3), T([1.0, 2.0])),
    "addr-2d": lambda M, T: M.addr(T([1.0]), T([[1.0]]), T([1.0])),
    "addr-float-alpha": lambda M, T: M.addr(T([[1]]), T([1]), T([1]), alpha=0.5),
    "chain_matmul-none": lambda M, T: M.chain_matmul(),
    "chain_matmul-1d": lambda M, T: M.chain_matmul(T([[1.0]]), T([1.0])),
    "chain_matmul-shapes": lambda M, T: M.chain_matmul(T([[1.0, 2.0]]), T([[1.0, 2.0]])),
    "chain_matmul-dtypes": lambda M, T: M.chain_matmul(T([[1.0]]), T([[1.0]], dtype=M.float64)),
    "std_mean-int": lambda M, T: M.std_mean(T([1, 2])),
    "trapezoid-x-size": lambda M, T: M.trapezoid(T([1.0, 2.0, 3.0]), T([1.0, 2.0])),
    "trapezoid-0d": lambda M, T: M.trapezoid(T(1.0)),
    "trapezoid-bool": lambda M, T: M.trapezoid(T([True, False])),
    "trapezoid-both": lambda M, T: M.trapezoid(T([1.0, 2.0]), T([1.0, 2.0]), dx=1),
    "cumulative_trapezoid-x-size": lambda M, T: M.cumulative_trapezoid(T([1.0, 2.0]), T([1.0, 2.0, 3.0])),
    "cov-3d": lambda M, T: M.cov(T([[[1.0]]])),
    "cov-fweights-float": lambda M, T: M.cov(T([1.0, 2.0]), fweights=T([1.0, 2.0])),
    "cov-fweights-2d": lambda M, T: M.cov(T([1.0, 2.0]), fweights=T([[1, 2]])),
    "cov-fweights-size": lambda M, T: M.cov(T([1.0, 2.0]), fweights=T([1, 2, 3])),
    "cov-fweights-negative": lambda M, T: M.cov(T([1.0, 2.0]), fweights=T([1, -2])),
    "cov-aweights-int": lambda M, T: M.cov(T([1.0, 2.0]), aweights=T([1, 2])),
    "cov-aweights-negative": lambda M, T: M.cov(T([1.0, 2.0]), aweights=T([1.0, -2.0])),
    "cov-weights-zero": lambda M, T: M.cov(T([1.0, 2.0]), fweights=T([0, 0])),
    "corrcoef-3d": lambda M, T: M.corrcoef(T([[[1.0]]])),
    "renorm-1d": lambda M, T: M.renorm(T([1.0]), 2, 0, 1),
    "renorm-p": lambda M, T: M.renorm(T([[1.0]]), 0, 0, 1),
    "renorm-maxnorm": lambda M, T: M.renorm(T([[1.0]]), 2, 0, -1),
    "renorm-int": lambda M, T: M.renorm(T([[1]]), 2, 0, 1),
    "unique_consecutive-0d-dim": lambda M, T: M.unique_consecutive(T(5), dim=0),
    "unique_consecutive-range": lambda M, T: M.unique_consecutive(T([[1]]), dim=2),
    "unique_consecutive-empty": lambda M, T: M.unique_consecutive(M.ones(0, 2), dim=1),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=needs_torch_2_13) if n == "rot90-range" else n
                                  for n in ERRORS])  # (older torch raises another type there)
def test_errors_match_torch(name, device):
    fn = ERRORS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(torch, torch.tensor)
        except Exception as e:      # noqa: BLE001  (the type torch raises is the expectation)
            expected = type(e)
        else:
            pytest.fail("torch raised nothing")

    class OnDevice:   # pg with tensor()/ones() defaulting to the device under test
        def __getattr__(self, n):
            if n in ("tensor", "ones"):
                f = getattr(pg, n)
                return lambda *a, **k: f(*a, **k, device=device)
            return getattr(pg, n)
    with pytest.raises(expected):
        fn(OnDevice(), lambda *a, **k: pg.tensor(*a, **k, device=device))


def test_warnings_and_degenerate_cases(device):
    tt, pt = pair(device)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        p = pg.cov(pt([[1.0], [2.0]]))
    with pytest.warns(UserWarning, match="degrees of freedom"):
        t = torch.cov(tt([[1.0], [2.0]]))
    same(p, t)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        pg.cov(pt([1.0, 2.0, 3.0]), correction=3)
    same(pg.cov(pt(2.0), correction=0), torch.cov(tt(2.0), correction=0))
    same(pg.corrcoef(pt([[1.0, 1.0, 1.0], [3.0, 3.0, 1.0]])), torch.corrcoef(tt([[1.0, 1.0, 1.0], [3.0, 3.0, 1.0]])))
    # beta == 0: nan in input is ignored
    nan_in = [[math.nan, 1.0], [math.inf, 0.0]]
    same(pg.addr(pt(nan_in), pt([1.0, 2.0]), pt([3.0, 4.0]), beta=0),
         torch.addr(tt(nan_in), tt([1.0, 2.0]), tt([3.0, 4.0]), beta=0))
    same(pg.addmm(pt(nan_in), pt([[1.0, 2.0], [3.0, 4.0]]), pt([[1.0], [2.0]]).expand(2, 2), beta=0),
         torch.addmm(tt(nan_in), tt([[1.0, 2.0], [3.0, 4.0]]), tt([[1.0], [2.0]]).expand(2, 2), beta=0))
    same(pg.baddbmm(pt([nan_in]), pt([[[1.0, 2.0], [3.0, 4.0]]]), pt([[[1.0, 0.0], [2.0, 1.0]]]), beta=0, alpha=2),
         torch.baddbmm(tt([nan_in]), tt([[[1.0, 2.0], [3.0, 4.0]]]), tt([[[1.0, 0.0], [2.0, 1.0]]]), beta=0, alpha=2))
    # renorm: a zero row keeps a finite gradient
    z = np.array([[0.0, 0.0], [3.0, 4.0]], np.float32)
    check_op(lambda x: x.renorm(2, 0, 1.0), [], inputs=[z], device=device)
    same(pg.chain_matmul(pt([[1.0, 2.0]])), torch.chain_matmul(tt([[1.0, 2.0]])))
    assert pg.positive(x := pt([1.0])) is x
