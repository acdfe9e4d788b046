"""Every required primitive of backends/base.py, called directly on buffers of each device of
PARAGRAD_TEST_DEVICES and compared with NumPy: small cases, exact where the arithmetic is
(integer-valued floats, movement, indexing) and tight otherwise, with broadcasting and strided
(non-contiguous) inputs wherever the primitive takes them. A primitive added to the interface
without a case here fails test_every_required_primitive_has_a_case.

Also: the optional decompositions raise an error naming the op and the backend where a
backend lacks them."""
import math

import numpy as np
import pytest

import paragrad as pg
from paragrad.backends import backend_for
from paragrad.backends.base import BINARY_OPS, REDUCE_OPS, UNARY_OPS, Backend
from paragrad.backends.cpu import CPUBackend

F64, F32, I64, BOOL = pg.float64, pg.float32, pg.int64, pg.bool


def _np(b, buf):
    return np.asarray(b.to_numpy(buf))


def _put(b, a, dtype=None):
    a = np.asarray(a)
    dtype = dtype or {"float64": F64, "float32": F32, "int64": I64, "bool": BOOL}[a.dtype.name]
    return b.from_numpy(a, dtype)


def _eq(b, buf, ref):
    got = _np(b, buf)
    ref = np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    np.testing.assert_array_equal(got, ref)


def _close(b, buf, ref, rtol=1e-12, atol=1e-12):
    got = _np(b, buf)
    ref = np.asarray(ref)
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, got.dtype, ref.shape, ref.dtype)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True)


def _grid(*shape, dtype=np.float64):
    """Integer-valued entries (exact sums and products), some negative."""
    return (np.arange(math.prod(shape)).reshape(shape) % 7 - 3).astype(dtype)


def _strided(b, a):
    """A non-contiguous buffer with a's values: the transpose of a's transposed copy."""
    return b.permute(_put(b, np.ascontiguousarray(a.T)), tuple(reversed(range(a.ndim))))


# ---- transfer / creation ----------------------------------------------------------------------
def _from_numpy(b):
    a = _grid(2, 3)
    buf = b.from_numpy(a, F32)                 # converted to the requested dtype
    a[0, 0] = 100                              # a copy: the source changing doesn't reach it
    _eq(b, buf, _grid(2, 3).astype(np.float32))
    _eq(b, b.from_numpy(a.T, I64), a.T.astype(np.int64))     # from a non-contiguous array


def _to_numpy(b):
    a = _grid(3, 4)
    got = b.to_numpy(_put(b, a))
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, a)
    np.testing.assert_array_equal(b.to_numpy(_strided(b, a)), a)


def _empty(b):
    for dtype, npd in ((F32, np.float32), (I64, np.int64), (BOOL, np.bool_)):
        got = _np(b, b.empty((2, 0, 3), dtype))
        assert got.shape == (2, 0, 3) and got.dtype == npd
        assert _np(b, b.empty((4, 5), dtype)).shape == (4, 5)


def _full(b):
    _eq(b, b.full((2, 3), 7.5, F32), np.full((2, 3), 7.5, np.float32))
    _eq(b, b.full((3,), 0, I64), np.zeros(3, np.int64))
    _eq(b, b.full((), True, BOOL), np.array(True))
    got = _np(b, b.full((2,), -0.0, F64))
    assert (np.signbit(got)).all()            # -0.0 stays negative zero


def _copy_(b):
    dst = _put(b, np.zeros((2, 3)))
    assert b.copy_(dst, _put(b, np.array([1.5, -2.5, 3.0], np.float32))) is dst     # broadcast, cast
    _eq(b, dst, np.broadcast_to(np.array([1.5, -2.5, 3.0]), (2, 3)))
    dst = _put(b, np.zeros((3, 2), np.int64))
    b.copy_(dst, _strided(b, _grid(3, 2)))     # a strided source, float -> int
    _eq(b, dst, _grid(3, 2).astype(np.int64))
    view = b.permute(_put(b, np.zeros((3, 2))), (1, 0))     # a strided destination
    b.copy_(view, _put(b, _grid(2, 3)))
    _eq(b, view, _grid(2, 3))


# ---- random -----------------------------------------------------------------------------------
def _generator(b):
    draws = [_np(b, b.uniform(b.generator(seed), (64,), 0.0, 1.0, F64)) for seed in (1, 1, 2)]
    np.testing.assert_array_equal(draws[0], draws[1])        # reproducible per seed
    assert not np.array_equal(draws[0], draws[2])
    g = b.generator(3)
    first, second = (_np(b, b.uniform(g, (8,), 0.0, 1.0, F64)) for _ in range(2))
    assert not np.array_equal(first, second)                 # the state advances


def _uniform(b):
    for dtype, npd in ((F32, np.float32), (F64, np.float64)):
        u = _np(b, b.uniform(b.generator(0), (4000,), 2.0, 3.0, dtype))
        assert u.dtype == npd and u.shape == (4000,)
        assert u.min() >= 2.0 and (u.max() < 3.0 if dtype is F64 else u.max() <= 3.0)   # (float32 may round up)
        assert abs(u.mean() - 2.5) < 0.03 and abs(u.std() - 1 / math.sqrt(12)) < 0.02
    assert _np(b, b.uniform(b.generator(0), (2, 3), 0.0, 1.0, F32)).shape == (2, 3)


def _normal(b):
    for dtype, npd in ((F32, np.float32), (F64, np.float64)):
        z = _np(b, b.normal(b.generator(0), (4000,), 1.0, 2.0, dtype))
        assert z.dtype == npd
        assert abs(z.mean() - 1.0) < 0.15 and abs(z.std() - 2.0) < 0.15


def _bernoulli(b):
    x = _np(b, b.bernoulli(b.generator(0), 0.3, (4000,), F32))
    assert x.dtype == np.float32 and set(np.unique(x)) <= {0.0, 1.0}
    assert abs(x.mean() - 0.3) < 0.04
    p = _put(b, np.array([[0.0], [1.0]]))                    # a buffer p, broadcast to the shape
    _eq(b, b.bernoulli(b.generator(0), p, (2, 5), I64), np.array([[0] * 5, [1] * 5]))


# ---- elementwise --------------------------------------------------------------------------------
_ERF = np.vectorize(math.erf)
_UNARY_REF = {   # op -> (input, reference)
    "neg": (None, np.negative), "exp": (None, np.exp), "abs": (None, np.abs),
    "sin": (None, np.sin), "cos": (None, np.cos), "tanh": (None, np.tanh),
    "sigmoid": (None, lambda x: 1 / (1 + np.exp(-x))), "relu": (None, lambda x: np.maximum(x, 0)),
    "erf": (None, _ERF), "expm1": (None, np.expm1), "atan": (None, np.arctan),
    "asinh": (None, np.arcsinh), "floor": (None, np.floor), "ceil": (None, np.ceil),
    "round": (None, np.rint), "trunc": (None, np.trunc), "sign": (None, np.sign),
    "log": ("pos", np.log), "sqrt": ("pos", np.sqrt), "rsqrt": ("pos", lambda x: 1 / np.sqrt(x)),
    "log1p": ("pos", np.log1p), "reciprocal": ("pos", np.reciprocal),
    "asin": ("unit", np.arcsin), "acos": ("unit", np.arccos), "atanh": ("unit", np.arctanh),
    "acosh": ("above1", np.arccosh),
    "isnan": ("special", np.isnan), "isinf": ("special", np.isinf), "isfinite": ("special", np.isfinite),
    "not": ("bool", np.logical_not),
}


def _unary_input(kind):
    base = np.array([[-2.5, -1.5, -0.5, 0.0], [0.5, 1.5, 2.5, 3.25], [-3.75, 0.25, 1.0, -1.0]])
    if kind == "pos":
        return np.abs(base) + 0.125
    if kind == "unit":
        return base / 4
    if kind == "above1":
        return np.abs(base) + 1
    if kind == "special":
        return np.array([[np.nan, np.inf, -np.inf, 0.0], [1.0, -2.0, np.nan, 3.0]])
    if kind == "bool":
        return np.array([[True, False, True], [False, False, True]])
    return base


def _unary(b):
    assert set(_UNARY_REF) == set(UNARY_OPS)
    for op in UNARY_OPS:
        kind, ref = _UNARY_REF[op]
        a = _unary_input(kind)
        want = ref(a)
        rtol = 1e-10 if op == "erf" else 1e-12
        for buf in (_put(b, a), _strided(b, a)):
            if kind == "bool" or kind == "special":
                _eq(b, b.unary(op, buf), want)
            else:
                _close(b, b.unary(op, buf), want, rtol=rtol, atol=0)
    _eq(b, b.unary("not", _put(b, np.array([0, 5, -1]))), np.invert(np.array([0, 5, -1])))
    out = _put(b, np.zeros((3, 4)))                         # the out= form writes into out
    assert b.unary("exp", _put(b, _unary_input(None)), out=out) is not None
    _close(b, out, np.exp(_unary_input(None)))


_BINARY_REF = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "maximum": np.maximum, "minimum": np.minimum, "floordiv": np.floor_divide, "mod": np.remainder,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "pow": np.power,
    "and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor,
}


def _binary(b):
    assert set(_BINARY_REF) == set(BINARY_OPS)
    a = _grid(3, 4)
    c = np.array([2.0, -3.0, 1.0, -1.0])                     # (4,): broadcast over a's rows
    for op in BINARY_OPS:
        if op in ("and", "or", "xor"):
            p, q = a > 0, c > 0
            _eq(b, b.binary(op, _put(b, p), _put(b, q)), _BINARY_REF[op](p, q))
            ip, iq = a.astype(np.int64), c.astype(np.int64)       # integers: bitwise
            bit = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
            _eq(b, b.binary(op, _put(b, ip), _put(b, iq)), bit(ip, iq))
            continue
        x = np.abs(a) + 1 if op == "pow" else a
        want = _BINARY_REF[op](x, c)
        for buf in (_put(b, x), _strided(b, x)):
            got = b.binary(op, buf, _put(b, c))
            if want.dtype == np.bool_:
                _eq(b, got, want)
            else:
                _close(b, got, want)
    _close(b, b.binary("mul", _put(b, a), 2.5), a * 2.5)          # a Python scalar operand
    _close(b, b.binary("add", _put(b, c[:, None]), _put(b, c)), c[:, None] + c)    # both broadcast
    # floordiv / mod follow Python's signs (as torch), integers too
    n, d = np.array([7, -7, 7, -7]), np.array([2, 2, -2, -2])
    _eq(b, b.binary("floordiv", _put(b, n), _put(b, d)), np.array([3, -4, -4, 3]))
    _eq(b, b.binary("mod", _put(b, n), _put(b, d)), np.array([1, 1, -1, -1]))
    # integer pow with negative exponents: torch's rule (1 for base 1, +-1 for base -1, else 0)
    base, exp = np.array([2, 1, -1, -1, 3]), np.array([-1, -3, -3, -2, 2])
    _eq(b, b.binary("pow", _put(b, base), _put(b, exp)), np.array([0, 1, -1, 1, 9]))
    out = _put(b, np.zeros((3, 4)))
    b.binary("add", _put(b, a), _put(b, c), out=out)
    _close(b, out, a + c)


def _where(b):
    cond = np.array([[True], [False], [True]])               # (3, 1)
    a, c = _grid(3, 4), np.array([10.0, 20.0, 30.0, 40.0])
    _eq(b, b.where(_put(b, cond), _put(b, a), _put(b, c)), np.where(cond, a, c))
    _eq(b, b.where(_put(b, cond), _strided(b, a), _put(b, c)), np.where(cond, a, c))


def _cast(b):
    x = np.array([-1.7, 1.7, 2.5, -0.5, 0.0])
    _eq(b, b.cast(_put(b, x), I64), np.array([-1, 1, 2, 0, 0]))          # toward zero
    _eq(b, b.cast(_put(b, x), BOOL), x != 0)
    _eq(b, b.cast(_put(b, x), F32), x.astype(np.float32))
    _eq(b, b.cast(_put(b, np.array([3, -4])), F64), np.array([3.0, -4.0]))
    _eq(b, b.cast(_strided(b, _grid(2, 3)), I64), _grid(2, 3).astype(np.int64))


# ---- reduce -------------------------------------------------------------------------------------
def _reduce(b):
    a = _grid(3, 4, 2)
    ref = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}
    assert set(ref) == set(REDUCE_OPS)
    for op in REDUCE_OPS:
        for axes in ((0,), (1,), (2,), (0, 2), (0, 1, 2)):
            for keepdims in (False, True):
                want = ref[op](a, axis=axes, keepdims=keepdims)
                _eq(b, b.reduce(op, _put(b, a), axes, keepdims), want)
                _eq(b, b.reduce(op, _strided(b, a), axes, keepdims), want)
        _eq(b, b.reduce(op, _put(b, a.astype(np.int64)), (1,), False),
            ref[op](a.astype(np.int64), axis=1))
    _eq(b, b.reduce("sum", _put(b, a[:, :, 0]), (0,), False), a[:, :, 0].sum(0))   # column sums


def _arg_reduce(b):
    a = np.array([[1.0, 3.0, 3.0], [2.0, -1.0, 2.0], [-1.0, 3.0, -1.0]])          # ties: first
    for op, f in (("argmax", np.argmax), ("argmin", np.argmin)):
        for axis in (0, 1):
            _eq(b, b.arg_reduce(op, _put(b, a), axis, False), f(a, axis=axis).astype(np.int64))
            _eq(b, b.arg_reduce(op, _put(b, a), axis, True), f(a, axis=axis, keepdims=True).astype(np.int64))
            _eq(b, b.arg_reduce(op, _strided(b, a), axis, False), f(a, axis=axis).astype(np.int64))


def _argsort(b):
    x = np.array([[3.0, 1.0, np.nan, 1.0, 2.0, 3.0], [0.0, -1.0, 0.0, np.nan, 5.0, -1.0]])

    def ref(row, descending):
        if descending:
            return sorted(range(len(row)), key=lambda i: (0, 0.0) if np.isnan(row[i]) else (1, -row[i]))
        return sorted(range(len(row)), key=lambda i: (1, 0.0) if np.isnan(row[i]) else (0, row[i]))
    for descending in (False, True):
        want = np.array([ref(r, descending) for r in x], np.int64)
        _eq(b, b.argsort(_put(b, x), 1, descending), want)
        _eq(b, b.argsort(_strided(b, x.T), 0, descending), want.T)


# ---- linear algebra -----------------------------------------------------------------------------
def _matmul(b):
    a, c = _grid(2, 1, 3, 4), _grid(5, 4, 2) + 1               # batch dims broadcast
    _eq(b, b.matmul(_put(b, a), _put(b, c)), np.matmul(a, c))
    m, n = _grid(3, 4), _grid(4, 5)
    _eq(b, b.matmul(_put(b, m), _put(b, n)), m @ n)
    _eq(b, b.matmul(_strided(b, m), _strided(b, n)), m @ n)        # transposed operands
    _eq(b, b.matmul(_put(b, m.astype(np.float32)), _put(b, n.astype(np.float32))), (m @ n).astype(np.float32))
    _eq(b, b.matmul(_put(b, m.astype(np.int64)), _put(b, n.astype(np.int64))), (m @ n).astype(np.int64))
    out = _put(b, np.zeros((3, 5)))
    b.matmul(_put(b, m), _put(b, n), out=out)
    _eq(b, out, m @ n)


# ---- movement -----------------------------------------------------------------------------------
def _reshape(b):
    a = _grid(2, 3, 4)
    _eq(b, b.reshape(_put(b, a), (6, 4)), a.reshape(6, 4))
    _eq(b, b.reshape(_strided(b, a), (4, 6)), a.reshape(4, 6))       # a copy where it must
    _eq(b, b.reshape(_put(b, a[:1, :1, :1]), ()), a[0, 0, 0])


def _permute(b):
    a = _grid(2, 3, 4)
    _eq(b, b.permute(_put(b, a), (2, 0, 1)), a.transpose(2, 0, 1))
    _eq(b, b.permute(_strided(b, a), (1, 0, 2)), a.transpose(1, 0, 2))


def _expand(b):
    a = _grid(3, 1)
    _eq(b, b.expand(_put(b, a), (2, 3, 4)), np.broadcast_to(a, (2, 3, 4)))
    _eq(b, b.expand(_strided(b, _grid(1, 3)), (4, 3)), np.broadcast_to(_grid(1, 3), (4, 3)))


def _slice(b):
    a = _grid(5, 6)
    _eq(b, b.slice(_put(b, a), (1, 0), (5, 6), (2, 3)), a[1:5:2, 0:6:3])
    _eq(b, b.slice(_strided(b, a), (0, 1), (4, 5), (1, 2)), a[0:4, 1:5:2])
    _eq(b, b.slice(_put(b, a), (2, 0), (2, 6), (1, 1)), a[2:2, :])            # empty


def _pad(b):
    a = _grid(2, 3)
    want = np.pad(a, ((1, 2), (0, 1)), constant_values=5.0)
    _eq(b, b.pad(_put(b, a), ((1, 2), (0, 1)), 5.0), want)
    _eq(b, b.pad(_strided(b, a), ((1, 2), (0, 1)), 5.0), want)


def _concat(b):
    a, c = _grid(2, 3), _grid(2, 1) + 10
    _eq(b, b.concat([_put(b, a), _put(b, c), _strided(b, a)], 1), np.concatenate([a, c, a], 1))
    _eq(b, b.concat([_put(b, a), _put(b, a)], 0), np.concatenate([a, a], 0))


def _contiguous(b):
    a = _grid(3, 4)
    buf = _put(b, a)
    assert b.contiguous(buf) is buf                          # already C-ordered: itself
    _eq(b, b.contiguous(_strided(b, a)), a)
    _eq(b, b.contiguous(b.slice(buf, (0, 0), (3, 4), (2, 2))), a[::2, ::2])


def _flip(b):
    a = _grid(3, 4)
    for axes in ((0,), (1,), (0, 1)):
        _eq(b, b.flip(_put(b, a), axes), np.flip(a, axes))
        _eq(b, b.flip(_strided(b, a), axes), np.flip(a, axes))


# ---- indexing -----------------------------------------------------------------------------------
def _take(b):
    a = _grid(3, 4)
    idx = np.array([[3, 0], [-1, 1]])                        # any shape; negatives wrap
    _eq(b, b.take(_put(b, a), _put(b, idx), 1), np.take(a, idx, axis=1))
    _eq(b, b.take(_strided(b, a), _put(b, np.array([2, 0, 2])), 0), a[[2, 0, 2]])
    if b.checks_indices:
        with pytest.raises(IndexError):
            b.take(_put(b, a), _put(b, np.array([4])), 1)


def _gather(b):
    a = _grid(3, 4)
    idx = np.array([[0, 2, 1, 0], [2, 2, 0, 1]])
    _eq(b, b.gather(_put(b, a), _put(b, idx), 0), np.take_along_axis(a, idx, 0))
    idx1 = np.array([[3, 0], [1, 1], [0, 2]])
    _eq(b, b.gather(_strided(b, a), _put(b, idx1), 1), np.take_along_axis(a, idx1, 1))


def _scatter_add(b):
    idx = np.array([[0, 2, 0], [0, 1, 2]])                    # duplicates accumulate
    src = _grid(2, 3) + 5
    for dtype in (np.float64, np.int64):
        base = _put(b, np.ones((3, 3), dtype))
        assert b.scatter_add(base, _put(b, idx), _put(b, src.astype(dtype)), 0) is not None
        want = np.ones((3, 3), dtype)
        np.add.at(want, (idx, np.arange(3)[None, :].repeat(2, 0)), src.astype(dtype))
        _eq(b, base, want)
    base = _put(b, np.zeros((2, 4)))
    b.scatter_add(base, _put(b, np.array([[1, 1], [3, 0]])), _put(b, np.array([[1.0, 2.0], [3.0, 4.0]])), 1)
    _eq(b, base, np.array([[0.0, 3.0, 0.0, 0.0], [4.0, 0.0, 0.0, 3.0]]))


def _scatter(b):
    base = _put(b, np.zeros((3, 3)))
    idx = np.array([[2, 0, 1]])
    b.scatter(base, _put(b, idx), _put(b, np.array([[1.0, 2.0, 3.0]])), 0)
    _eq(b, base, np.array([[0.0, 2.0, 0.0], [0.0, 0.0, 3.0], [1.0, 0.0, 0.0]]))
    base = _put(b, np.zeros((2, 3), np.int64))
    b.scatter(base, _put(b, np.array([[2], [0]])), _put(b, np.array([[7], [8]])), 1)
    _eq(b, base, np.array([[0, 0, 7], [8, 0, 0]]))


def _nonzero(b):
    a = np.array([[0.0, 1.5, 0.0], [-2.0, 0.0, np.nan]])
    _eq(b, b.nonzero(_put(b, a)), np.stack(np.nonzero(a), -1).astype(np.int64))
    _eq(b, b.nonzero(_strided(b, a)), np.stack(np.nonzero(a), -1).astype(np.int64))
    _eq(b, b.nonzero(_put(b, np.zeros((2, 2)))), np.zeros((0, 2), np.int64))


CASES = {name[1:]: fn for name, fn in list(globals().items())
         if name.startswith("_") and callable(fn) and name[1:] in Backend.__abstractmethods__}


def test_every_required_primitive_has_a_case():
    assert set(CASES) == set(Backend.__abstractmethods__), sorted(set(Backend.__abstractmethods__) ^ set(CASES))


@pytest.mark.parametrize("primitive", sorted(CASES))
def test_primitive(device, primitive):
    CASES[primitive](backend_for(device))


# ---- optional primitives: the decompositions -----------------------------------------------------
DECOMPOSITIONS = {"inv": 1, "solve": 2, "det": 1, "slogdet": 1, "cholesky": 1, "qr": 2, "eigh": 2, "svd": 2}


class _NoDecompositions(CPUBackend):
    """A backend that implements every required primitive but no decomposition."""


for _name in DECOMPOSITIONS:
    setattr(_NoDecompositions, "fast_linalg_" + _name, getattr(Backend, "fast_linalg_" + _name))


@pytest.mark.parametrize("name", sorted(DECOMPOSITIONS))
def test_a_missing_decomposition_names_the_op_and_the_backend(name):
    b = _NoDecompositions()
    args = [np.eye(2)] + [None] * (DECOMPOSITIONS[name] - 1)
    with pytest.raises(NotImplementedError, match=f"^linalg_{name} is not supported on the cpu backend"):
        getattr(b, "fast_linalg_" + name)(*args)


def test_a_missing_decomposition_raises_through_the_op(monkeypatch):
    x = pg.eye(3)
    monkeypatch.setattr(type(x._backend), "fast_linalg_inv", Backend.fast_linalg_inv)
    with pytest.raises(NotImplementedError, match="linalg_inv is not supported on the cpu backend"):
        pg.linalg.inv(x)


def test_the_decompositions_are_declared_and_the_backends_have_them(device):
    b = backend_for(device)
    for name in DECOMPOSITIONS:
        assert getattr(b, "fast_linalg_" + name) is not None
        assert getattr(type(b), "fast_linalg_" + name) is not getattr(Backend, "fast_linalg_" + name)


def test_data_ptr_is_an_address_and_a_backend_without_it_says_so(device):
    """Tensor.data_ptr asks the backend; the interface's default names the backend."""
    t = pg.zeros(4, device=device)
    assert isinstance(t.data_ptr(), int) and t.data_ptr() != 0
    assert t[1:].data_ptr() == t.data_ptr() + 4                 # a view: the same memory, offset
    with pytest.raises(NotImplementedError, match="^data_ptr is not supported on the cpu backend"):
        Backend.data_ptr(_NoDecompositions(), np.zeros(2))
