"""ops/properties.py (and the family files) and the top-level nn.functional aliases against torch: predicates and
metadata, the complex family on real tensors, h/v/dsplit, logaddexp2 (with gradients),
sum_to_size, unravel_index, broadcast_shapes, can_cast, bernoulli/normal statistics, and the
errors, on every device."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import assert_close, check_op, lib


def test_predicates_and_metadata(device):
    for dtype in ("float32", "float64", "int64", "uint8", "bool", "float16"):
        t = torch.zeros(2, 3, dtype=getattr(torch, dtype))
        p = pg.zeros(2, 3, dtype=getattr(pg, dtype), device=device)
        assert pg.is_floating_point(p) == torch.is_floating_point(t)
        assert pg.is_complex(p) is torch.is_complex(t) is False
        assert p.is_signed() == t.is_signed()
        assert (p.nbytes, p.itemsize, p.ndimension()) == (t.nbytes, t.itemsize, t.ndimension())
    p = pg.ones(2, device=device)
    assert p.is_cpu == (device == "cpu")
    assert pg.is_same_size(p, pg.zeros(2)) and not p.is_same_size(pg.zeros(3))
    assert pg.is_nonzero(pg.tensor([2.0], device=device)) and not pg.tensor(0, device=device).is_nonzero()
    for bad, why in ((pg.ones(2), "more than one value"), (pg.ones(0), "no values")):
        with pytest.raises(RuntimeError, match=why):
            bad.is_nonzero()
    for a, b in [("float64", "int32"), ("int8", "bool"), ("bool", "int8"), ("float32", "float16"),
                 ("int64", "float32"), ("uint8", "int8")]:
        assert pg.can_cast(getattr(pg, a), getattr(pg, b)) == torch.can_cast(getattr(torch, a), getattr(torch, b))
    assert pg.broadcast_shapes((2, 1), (3,)) == torch.broadcast_shapes((2, 1), (3,))
    assert pg.broadcast_shapes(5, (2, 1)) == (2, 5)
    with pytest.raises(RuntimeError, match="cannot be broadcast"):
        pg.broadcast_shapes((2, 3), (4,))


def test_complex_family_on_real_tensors(device):
    p = pg.randn(2, 3, device=device)
    assert pg.conj(p) is p and p.conj() is p and p.resolve_conj() is p and p.resolve_neg() is p
    assert not p.is_conj() and not pg.is_neg(p) and p.real is p and pg.real(p) is p
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        p.imag
    assert tuple(p.H.shape) == (3, 2) and tuple(p.adjoint().shape) == (3, 2)
    assert tuple(pg.randn(4, 2, 3, device=device).mH.shape) == (4, 3, 2)
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        pg.ones(3, device=device).H


@pytest.mark.parametrize("name,shape,arg", [
    ("hsplit", (2, 6), 3), ("hsplit", (6,), [1, 4]), ("vsplit", (4, 2), 2), ("vsplit", (5, 2), [2]),
    ("dsplit", (1, 2, 4), 2), ("hsplit", (2, 5, 3), [2, 3]),
])
def test_splits_match_torch(name, shape, arg, device):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    ps, ts = getattr(pg, name)(pg.tensor(x, device=device), arg), getattr(torch, name)(torch.tensor(x), arg)
    assert len(ps) == len(ts)
    for p, t in zip(ps, ts):
        assert p.cpu().tolist() == t.tolist()
    assert [q.cpu().tolist() for q in getattr(pg.tensor(x, device=device), name)(arg)] == [t.tolist() for t in ts]


def test_split_errors(device):
    for fn, x, match in ((pg.hsplit, pg.ones(2, 6), "not divisible by the split_size 4"),
                         (pg.vsplit, pg.ones(6), "at least 2 dimension"),
                         (pg.dsplit, pg.ones(2, 2), "at least 3 dimension")):
        with pytest.raises(RuntimeError, match=match):
            fn(x.to(device), 4)


def test_logaddexp2_and_aliases(device):
    check_op(lambda a, b: lib(a).logaddexp2(a, b), [(3, 4), (4,)], device=device)
    check_op(lambda a, b: a.logaddexp2(b), [(3,), (3,)], device=device, dtype="float64")
    check_op(lambda a: lib(a).clamp_min(a, 0.1) + lib(a).clamp_max(a, -0.2), [(5,)], device=device)
    check_op(lambda a: lib(a).swapdims(a, 0, 2) * 1, [(2, 3, 4)], device=device)
    check_op(lambda a, b: lib(a).row_stack([a, b]), [(2, 3), (3,)], device=device)
    t, p = torch.tensor([-np.inf, 3.0]), pg.tensor([-np.inf, 3.0], device=device)
    assert_close(pg.logaddexp2(p, p), torch.logaddexp2(t, t), 0, 1e-6)


def test_sum_to_size(device):
    check_op(lambda a: a.sum_to_size(1, 3), [(2, 3)], device=device)
    check_op(lambda a: a.sum_to_size((4, 1, 1)), [(2, 4, 3, 5)], device=device)
    with pytest.raises(RuntimeError, match=r"size \{\[4\]\} is not expandable to size \{\[2, 3\]\}"):
        pg.ones(2, 3, device=device).sum_to_size(4)


def test_unravel_index_matches_torch(device):
    for idx, shape in (([4, 5, -1, 6, -7], (3, 2)), (3, 4), ([[0, 11], [7, 5]], (2, 3, 2))):
        ps = pg.unravel_index(pg.tensor(idx, device=device), shape)
        ts = torch.unravel_index(torch.tensor(idx), shape)
        assert [p.cpu().tolist() for p in ps] == [t.tolist() for t in ts]
    with pytest.raises(TypeError, match="integer dtype"):
        pg.unravel_index(pg.tensor(1.0, device=device), (2, 2))


def test_bernoulli_and_normal(device):
    g = pg.Generator(device=device).manual_seed(3)
    probs = pg.tensor([0.0, 1.0, 0.3], device=device).expand(20000, 3)
    draws = pg.bernoulli(probs, generator=g)
    assert draws.dtype is pg.float32 and set(np.unique(draws.cpu().numpy())) <= {0.0, 1.0}
    np.testing.assert_allclose(draws.mean(0).cpu().numpy(), [0.0, 1.0, 0.3], atol=0.02)
    assert abs(pg.ones(20000, device=device).bernoulli(0.25).mean().item() - 0.25) < 0.02
    with pytest.raises(RuntimeError, match="floating dtypes only"):
        pg.bernoulli(pg.ones(3, dtype=pg.int64, device=device))
    m, s = pg.tensor([0.0, 10.0], device=device), pg.tensor([1.0, 0.5], device=device)
    z = pg.normal(m.expand(20000, 2), s)
    assert tuple(z.shape) == (20000, 2) and z.device == m.device
    np.testing.assert_allclose(z.mean(0).cpu().numpy(), [0.0, 10.0], atol=0.05)
    np.testing.assert_allclose(z.std(0).cpu().numpy(), [1.0, 0.5], atol=0.05)
    f = pg.normal(2.0, 3.0, size=(3, 4), generator=g, device=device)
    assert tuple(f.shape) == (3, 4) and f.dtype is pg.float32 and f.device == pg.device(device)
    assert pg.normal(pg.zeros(2, dtype=pg.float64, device=device), 1.0).dtype is pg.float64
    for bad, exc in ((lambda: pg.normal(0.0, 1.0), TypeError), (lambda: pg.normal(0.0, -1.0, size=(2,)), RuntimeError),
                     (lambda: pg.normal(m, -s), RuntimeError)):
        with pytest.raises(exc):
            bad()


@pytest.mark.parametrize("name,args", [
    ("conv1d", lambda L, d: (L.ones(2, 3, 8, **d), L.ones(4, 3, 3, **d))), ("max_pool1d", lambda L, d: (L.arange(16.0, **d).reshape(2, 8), 2)),
    ("max_pool2d", lambda L, d: (L.arange(32.0, **d).reshape(2, 4, 4), 2)), ("avg_pool1d", lambda L, d: (L.arange(16.0, **d).reshape(2, 8), 3, 2, 1)),
    ("adaptive_avg_pool1d", lambda L, d: (L.arange(14.0, **d).reshape(2, 7), 3)), ("celu", lambda L, d: (L.linspace(-2, 2, 5, **d), 0.5)),
    ("selu", lambda L, d: (L.linspace(-2, 2, 5, **d),)), ("threshold", lambda L, d: (L.linspace(-2, 2, 5, **d), 0.1, 9.0)),
    ("hardshrink", lambda L, d: (L.linspace(-2, 2, 9, **d), 0.7)), ("dropout", lambda L, d: (L.ones(4, **d), 0.5, False)),
    ("cosine_similarity", lambda L, d: (L.linspace(-2, 2, 6, **d).reshape(2, 3), L.ones(2, 3, **d))),
    ("pairwise_distance", lambda L, d: (L.linspace(-2, 2, 6, **d).reshape(2, 3), L.ones(2, 3, **d))),
    ("pdist", lambda L, d: (L.linspace(-2, 2, 6, **d).reshape(3, 2),)),
    ("prelu", lambda L, d: (L.linspace(-2, 2, 6, **d).reshape(1, 2, 3), L.tensor([0.1, 0.3], **d))),
    ("group_norm", lambda L, d: (L.linspace(-2, 2, 24, **d).reshape(2, 4, 3), 2)),
    ("bilinear", lambda L, d: (L.ones(2, 3, **d), L.ones(2, 4, **d), L.linspace(-1, 1, 60, **d).reshape(5, 3, 4))),
])
def test_functional_forms_at_top_level(name, args, device):
    p = getattr(pg, name)(*args(pg, {"device": device}))
    t = getattr(torch, name)(*args(torch, {}))
    assert_close(p, t, 1e-5, 1e-5)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_bit_shifts_match_torch(dtype, device):
    lo = 0 if dtype == "uint8" else -100
    a = np.random.default_rng(0).integers(lo, 100, 12)
    bits = {"int64": 64, "int32": 32, "int16": 16, "int8": 8, "uint8": 8}[dtype]
    s = np.array([0, 1, 2, bits - 2, bits - 1, bits, bits + 5, -1, 3, 5, 7, 1]) % 127
    s[7] = -1
    pa, ps = (pg.tensor(v, dtype=getattr(pg, dtype), device=device) for v in (a, s))
    ta, ts = (torch.tensor(v, dtype=getattr(torch, dtype)) for v in (a, s))
    if dtype == "uint8":
        ps, ts = ps.clamp(0, 126), ts.clamp(0, 126)
    assert (pa << ps).cpu().tolist() == (ta << ts).tolist()
    assert (pa >> ps).cpu().tolist() == (ta >> ts).tolist()
    assert pg.bitwise_left_shift(pa, 3).cpu().tolist() == torch.bitwise_left_shift(ta, 3).tolist()
    assert (3 >> ps).cpu().tolist() == (3 >> ts).tolist() and (1 << ps).cpu().tolist() == (1 << ts).tolist()
    x, y = pa.clone(), ta.clone()
    x <<= 1
    y <<= 1
    x >>= 2
    y >>= 2
    assert x.cpu().tolist() == y.tolist() and x.dtype is pa.dtype
    with pytest.raises(RuntimeError, match="integer dtypes only"):
        pg.ones(2, device=device) << 1


def test_augmented_assignments_contains_reversed_complex(device):
    for L, kw in ((torch, {}), (pg, {"device": device})):
        y = L.tensor([5, 6, 7], **kw)
        y **= 2
        y %= 7
        y //= 2
        y &= 6
        y |= 1
        y ^= 2
        if L is torch:
            want = y.tolist()
    assert y.cpu().tolist() == want
    t = pg.tensor([1.0, 2.0, 3.0], device=device)
    assert 2 in t and 2.5 not in t and pg.tensor(3.0) in t
    assert [float(v) for v in reversed(t)] == [3.0, 2.0, 1.0]
    assert complex(pg.tensor(2.5, device=device)) == 2.5 + 0j
    with pytest.raises(RuntimeError, match="__contains__ only supports Tensor or scalar"):
        "a" in t  # noqa: B015


@pytest.mark.parametrize("name,extra", [("hann_window", ()), ("hamming_window", (0.5, 0.5)), ("blackman_window", ()),
                                        ("bartlett_window", ()), ("kaiser_window", (5.0,))])
def test_windows_match_torch(name, extra, device):
    for n in (0, 1, 2, 5, 8):
        for periodic in (True, False):
            p = getattr(pg, name)(n, periodic, *extra, device=device)
            t = getattr(torch, name)(n, periodic, *extra)
            assert p.device == pg.device(device) and tuple(p.shape) == tuple(t.shape)
            assert_close(p, t, 1e-6, 1e-6)
    assert getattr(pg, name)(4, dtype=pg.float64).dtype is pg.float64
    with pytest.raises(RuntimeError, match="expects floating point dtypes"):
        getattr(pg, name)(3, dtype=pg.int64)
    with pytest.raises(RuntimeError, match="requires non-negative window_length"):
        getattr(pg, name)(-1)
