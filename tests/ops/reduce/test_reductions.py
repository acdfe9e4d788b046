"""Reductions against PyTorch (values, dtypes, gradients, including ties and zeros), their
gradients against finite differences, and their errors. `ns(x)` is x's library (pg or torch)."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op, fd_check


def ns(x):
    return pg if isinstance(x, pg.Tensor) else torch


# dim/keepdim variants every float reduction runs: (id, kwargs)
DIMS = [("all", {}), ("d0", {"dim": 0}), ("d1", {"dim": 1}), ("neg", {"dim": -1}),
        ("tuple", {"dim": (0, 2)}), ("tuple_neg", {"dim": (-1, 0)}), ("keep", {"dim": 1, "keepdim": True}),
        ("tuple_keep", {"dim": (0, 1), "keepdim": True}), ("empty_tuple", {"dim": ()}),
        ("list", {"dim": [1, 2]}), ("all_keep", {"dim": (0, 1, 2), "keepdim": True})]
REDUCTIONS = [  # (name, fn(x, kwargs))
    ("sum", lambda x, kw: x.sum(**kw)), ("mean", lambda x, kw: x.mean(**kw)),
    ("var", lambda x, kw: x.var(**kw)), ("std", lambda x, kw: x.std(**kw)),
    ("amax", lambda x, kw: x.amax(**kw)), ("amin", lambda x, kw: x.amin(**kw)),
    ("prod", lambda x, kw: x.prod(**kw) if "dim" not in kw or isinstance(kw["dim"], int) else None),
    ("logsumexp", lambda x, kw: x.logsumexp(**kw) if "dim" in kw and kw["dim"] != () else None),
    ("sum_fn", lambda x, kw: ns(x).sum(x, **kw)), ("mean_fn", lambda x, kw: ns(x).mean(x, **kw)),
    ("amax_fn", lambda x, kw: ns(x).amax(x, **kw)), ("var_fn", lambda x, kw: ns(x).var(x, **kw)),
]


# rows torch can check (its prod takes one int dim, its logsumexp needs a dim); paragrad's prod
# over several dims is checked against NumPy below instead
ROWS = [(name, fn, did, kw) for name, fn in REDUCTIONS for did, kw in DIMS
        if fn(torch.zeros(2, 3, 4), kw) is not None]


@pytest.mark.parametrize("name,fn,did,kw", ROWS, ids=[f"{r[0]}-{r[2]}" for r in ROWS])
def test_reduce_dims(device, name, fn, did, kw):
    # torch's var/std backward treats dim=() as "no dims" (inf gradient) while its forward
    # reduces every dim: compare values only there
    grad = not (did == "empty_tuple" and name.startswith(("var", "std")))
    check_op(lambda x: fn(x, kw), [(2, 3, 4)], device=device, low=0.5, high=2, grad=grad)


@pytest.mark.parametrize("dtype", ["float64", "float16"])
@pytest.mark.parametrize("name,fn", REDUCTIONS[:8], ids=[r[0] for r in REDUCTIONS[:8]])
def test_reduce_dtypes(device, name, fn, dtype):
    kw = {"dim": 1} if name == "logsumexp" else {}
    check_op(lambda x: fn(x, kw), [(3, 5)], dtype=dtype, device=device, low=0.5, high=2)


ODD = [  # (name, fn, shape): 0-d inputs (dim 0 and -1 allowed), empty inputs
    ("sum_0d", lambda x: x.sum(), ()), ("sum_0d_dim", lambda x: x.sum(0), ()),
    ("sum_0d_neg_keep", lambda x: x.sum(-1, keepdim=True), ()), ("mean_0d", lambda x: x.mean(0), ()),
    ("amax_0d", lambda x: x.amax(0, keepdim=True), ()), ("prod_0d", lambda x: x.prod(), ()),
    ("logsumexp_0d", lambda x: x.logsumexp(0), ()), ("max_0d", lambda x: x.max(), ()),
    ("max_0d_dim", lambda x: x.max(0), ()), ("min_0d_dim", lambda x: x.min(-1, keepdim=True), ()),
    ("std_0d", lambda x: x.std(correction=0), ()), ("sum_tuple_0d", lambda x: x.sum((0,)), ()),
    ("sum_empty", lambda x: x.sum(), (0, 3)), ("sum_empty_d0", lambda x: x.sum(0), (0, 3)),
    ("mean_empty_d1", lambda x: x.mean(1), (0, 3)), ("prod_empty_d0", lambda x: x.prod(0), (0, 3)),
    ("amax_empty_d1", lambda x: x.amax(1), (0, 3)), ("logsumexp_empty", lambda x: x.logsumexp(0), (0, 3)),
    ("max_empty_d1", lambda x: x.max(1), (0, 3)), ("mean_empty", lambda x: x.mean(0), (0, 3)),
]


@pytest.mark.parametrize("name,fn,shape", ODD, ids=[r[0] for r in ODD])
def test_reduce_odd_shapes(device, name, fn, shape):
    check_op(fn, [shape], device=device, low=0.5, high=2)


# ---- var / std corrections ---------------------------------------------------------------------
VAR = [  # (name, fn)
    ("c0", lambda x: x.var(correction=0)), ("c1", lambda x: x.var(1, correction=1)),
    ("c2", lambda x: x.var((0, 1), correction=2)), ("unbiased_false", lambda x: x.var(unbiased=False)),
    ("unbiased_pos", lambda x: x.var(0, False)), ("unbiased_true_keep", lambda x: x.var(0, True, True)),
    ("std_c0", lambda x: x.std(1, correction=0)), ("std_c2", lambda x: x.std(correction=2)),
    ("std_unbiased_false", lambda x: ns(x).std(x, 0, unbiased=False, keepdim=True)),
    ("var_mean", lambda x: ns(x).var_mean(x, 1)), ("var_mean_c0", lambda x: ns(x).var_mean(x, 0, correction=0)),
    ("dof_zero", lambda x: x[:1].var(0)), ("dof_negative", lambda x: x.var(1, correction=5)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn", VAR, ids=[r[0] for r in VAR])
def test_var_std(device, name, fn, dtype):
    if name.startswith("dof"):   # N - correction <= 0: nan/inf and a warning, as torch
        with pytest.warns(UserWarning, match="degrees of freedom"):
            check_op(fn, [(3, 4)], dtype=dtype, device=device, grad=False)
    else:
        check_op(fn, [(3, 4)], dtype=dtype, device=device)


# ---- ties: amax/amin/max()/min() split the gradient evenly; max(dim)/min(dim) pick one index ------
TIES = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 2.0, 2.0], [-5.0, 0.0, -5.0, 0.0]], dtype=np.float32)
TIE_OPS = [  # (name, fn)
    ("amax", lambda x: x.amax()), ("amax_d1", lambda x: x.amax(1)), ("amin_d0", lambda x: x.amin(0)),
    ("amin_tuple", lambda x: x.amin((0, 1), keepdim=True)), ("max", lambda x: x.max()),
    ("min", lambda x: ns(x).min(x)), ("max_dim", lambda x: x.max(1)), ("min_dim", lambda x: x.min(0)),
    ("max_dim_keep", lambda x: ns(x).max(x, 1, keepdim=True)), ("min_dim_neg", lambda x: ns(x).min(x, dim=-1)),
    ("argmax", lambda x: x.argmax()), ("argmax_d1", lambda x: x.argmax(1)), ("argmin_d0", lambda x: x.argmin(0)),
    ("argmax_keep", lambda x: ns(x).argmax(x, dim=-1, keepdim=True)),
    ("argmin_keep_none", lambda x: x.argmin(keepdim=True)),
]


@pytest.mark.parametrize("name,fn", TIE_OPS, ids=[r[0] for r in TIE_OPS])
def test_ties(device, name, fn):
    check_op(fn, None, device=device, inputs=[TIES])


def test_max_dim_namedtuple(device):
    x = pg.tensor(TIES, device=device)
    for r, t in [(x.max(1), torch.tensor(TIES).max(1)), (pg.min(x, 0, True), torch.min(torch.tensor(TIES), 0, True))]:
        values, indices = r          # unpacks like a tuple, and has the fields by name
        assert values is r.values and indices is r.indices and r[0] is r.values
        assert indices.dtype is pg.int64
        np.testing.assert_array_equal(r.values.cpu().numpy(), t.values.numpy())
        np.testing.assert_array_equal(r.indices.cpu().numpy(), t.indices.numpy())


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "float16", "float64"])
@pytest.mark.parametrize("fn", [lambda x: x.max(), lambda x: x.amin(1), lambda x: x.max(0),
                                lambda x: x.argmax(), lambda x: x.argmin(1, keepdim=True)],
                         ids=["max", "amin", "max_dim", "argmax", "argmin"])
def test_extremes_dtypes(device, fn, dtype):
    check_op(fn, [(3, 5)], dtype=dtype, device=device, low=0, high=4)   # small int range: ties


@pytest.mark.parametrize("fn", [lambda x: x.amax(), lambda x: x.max(1), lambda x: x.argmax(1), lambda x: x.amin(0)],
                         ids=["amax", "max_dim", "argmax", "amin"])
def test_extremes_nan(device, fn):
    # nan propagates (and is the argmax) as in torch
    a = np.array([[1.0, np.nan, 2.0], [0.0, 3.0, -1.0]], dtype=np.float32)
    check_op(fn, None, device=device, inputs=[a], grad=False)


# ---- logsumexp ---------------------------------------------------------------------------------
LSE = np.array([[-np.inf, -np.inf, -np.inf], [1.0, 2.0, -np.inf], [100.0, 100.0, -100.0]], dtype=np.float32)


@pytest.mark.parametrize("fn", [lambda x: x.logsumexp(1), lambda x: ns(x).logsumexp(x, 0),
                                lambda x: x.logsumexp((0, 1)), lambda x: x.logsumexp(-1, keepdim=True)],
                         ids=["d1", "d0", "all", "keep"])
def test_logsumexp_inf(device, fn):
    # rows of -inf give -inf (and a nan gradient, as torch); large values don't overflow
    check_op(fn, None, device=device, inputs=[LSE])


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_logsumexp_int(device, dtype):
    check_op(lambda x: x.logsumexp(1), [(3, 4)], dtype=dtype, device=device, atol=1e-5, rtol=1e-5)


# ---- prod with zeros ---------------------------------------------------------------------------
# rows with no zero, one zero, two zeros; a zero-only row; columns mix them too
ZEROS = np.array([[1.5, -2.0, 0.5, 3.0], [2.0, 0.0, -1.5, 0.5], [0.0, 1.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0]],
                 dtype=np.float64)


@pytest.mark.parametrize("fn", [lambda x: x.prod(1), lambda x: x.prod(0), lambda x: x.prod(),
                                lambda x: ns(x).prod(x, -1, keepdim=True), lambda x: x[1].prod(),
                                lambda x: x[2].prod(), lambda x: x[:2].prod()],
                         ids=["d1", "d0", "all", "keep", "one_zero", "two_zeros", "all_one_zero"])
def test_prod_zeros(device, fn):
    check_op(fn, None, device=device, inputs=[ZEROS], dtype="float64")
    check_op(fn, None, device=device, inputs=[ZEROS.astype(np.float32)])


# ---- integer and bool inputs -------------------------------------------------------------------
INT_REDUCE = [  # (name, fn): ints sum/prod to int64, as torch
    ("sum", lambda x: x.sum()), ("sum_d1", lambda x: x.sum(1)), ("sum_keep", lambda x: x.sum(0, keepdim=True)),
    ("prod", lambda x: x.prod()), ("prod_d0", lambda x: x.prod(0)), ("amax", lambda x: x.amax(1)),
    ("sum_dtype_f32", lambda x: x.sum(dtype=ns(x).float32)), ("mean_dtype", lambda x: x.mean(1, dtype=ns(x).float64)),
    ("prod_dtype", lambda x: x.prod(1, dtype=ns(x).int32)), ("sum_dtype_i32", lambda x: x.sum(dtype=ns(x).int32)),
]


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "int8", "bool"])
@pytest.mark.parametrize("name,fn", INT_REDUCE, ids=[r[0] for r in INT_REDUCE])
def test_int_reduce(device, name, fn, dtype):
    check_op(fn, [(3, 4)], dtype=dtype, device=device, low=-3, high=4)


def test_float_sum_dtype(device):
    check_op(lambda x: x.sum(dtype=ns(x).float64), [(3, 4)], device=device)
    check_op(lambda x: x.mean(dtype=ns(x).float64), [(3, 4)], device=device)


# ---- all / any ---------------------------------------------------------------------------------
LOGIC = [("all", {}), ("all", {"dim": 1}), ("all", {"dim": -1, "keepdim": True}), ("all", {"dim": (0, 1)}),
         ("any", {}), ("any", {"dim": 0}), ("any", {"dim": -2, "keepdim": True}),
         ("any", {"dim": (1, 0), "keepdim": True})]


@pytest.mark.parametrize("dtype", ["bool", "float32", "int64", "uint8"])      # (uint8: uint8 out, as torch)
@pytest.mark.parametrize("name,kw", LOGIC, ids=[f"{n}-{kw}" for n, kw in LOGIC])
def test_all_any(device, name, kw, dtype):
    a = np.array([[1, 0, 2], [3, 4, 5], [0, 0, 0], [1, 1, 1]]).astype(dtype)
    check_op(lambda x: getattr(x, name)(**kw), None, device=device, inputs=[a])
    check_op(lambda x: getattr(ns(x), name)(x, **kw), None, device=device, inputs=[a])


@pytest.mark.parametrize("fn", [lambda x: x.all(), lambda x: x.any(0), lambda x: x.all(-1, keepdim=True),
                                lambda x: x.all(1), lambda x: x.any()], ids=["all", "any0", "all_keep", "all1", "any"])
@pytest.mark.parametrize("shape", [(), (0, 3)])
def test_all_any_odd(device, fn, shape):
    try:
        fn(torch.ones(shape))
    except IndexError:          # dim out of range for this shape: paragrad must refuse it too
        with pytest.raises(IndexError):
            fn(pg.ones(shape, device=device))
        return
    check_op(fn, [shape], dtype="bool", device=device)


@pytest.mark.parametrize("dim,keepdim", [((0, 2), False), ((-1, 0), False), ((0, 1), True), ((), False),
                                         ([1, 2], False)])
def test_prod_over_several_dims_matches_numpy(device, dim, keepdim):
    a = np.random.default_rng(1).uniform(0.5, 2, (2, 3, 4))
    got = pg.tensor(a, device=device).prod(dim=dim, keepdim=keepdim).cpu().numpy()
    axis = tuple(dim) if dim != () else None
    np.testing.assert_allclose(got, np.prod(a, axis=axis, keepdims=keepdim), rtol=1e-12)
    fd_check(lambda x: x.prod(dim=dim, keepdim=keepdim), [(2, 3, 2)], device=device, low=0.5, high=2)


# ---- finite differences (float64) --------------------------------------------------------------
FD = [  # (name, fn, low, high): distinct values (no ties) so max/min are differentiable
    ("sum", lambda x: x.sum(1), -2, 2), ("sum_all", lambda x: x.sum(), -2, 2),
    ("mean", lambda x: x.mean(0, keepdim=True), -2, 2), ("var", lambda x: x.var(1), -2, 2),
    ("var_c0", lambda x: x.var(correction=0), -2, 2), ("var_c2", lambda x: x.var(0, correction=2), -2, 2),
    ("std", lambda x: x.std(1), -2, 2), ("std_all", lambda x: x.std(unbiased=False), -2, 2),
    ("amax", lambda x: x.amax(1), -2, 2), ("amin", lambda x: x.amin((0, 1)), -2, 2),
    ("max", lambda x: x.max(), -2, 2), ("max_dim", lambda x: x.max(0).values, -2, 2),
    ("min_dim", lambda x: x.min(1, keepdim=True)[0], -2, 2),
    ("logsumexp", lambda x: x.logsumexp(1), -2, 2), ("logsumexp_all", lambda x: x.logsumexp((0, 1)), -2, 2),
    ("prod", lambda x: x.prod(1), 0.5, 2), ("prod_all", lambda x: x.prod(), -2, 2),
    ("var_mean", lambda x: pg.var_mean(x, 1), -2, 2),
]


@pytest.mark.parametrize("name,fn,low,high", FD, ids=[r[0] for r in FD])
def test_fd(device, name, fn, low, high):
    fd_check(fn, [(3, 4)], device=device, low=low, high=high)


@pytest.mark.parametrize("fn", [lambda x: x.prod(1), lambda x: x.prod(0), lambda x: x.prod()], ids=["d1", "d0", "all"])
def test_fd_prod_zeros(device, fn):
    # prod is a polynomial, so finite differences are exact even at the zeros
    fd_check(fn, None, device=device, inputs=[ZEROS[:3]])


# ---- errors ------------------------------------------------------------------------------------
ERRORS = [  # (fn, exception, name in the message); each raises in torch too
    (lambda x: x.sum(2), IndexError, "sum"), (lambda x: x.sum(-3), IndexError, "sum"),
    (lambda x: x.mean((0, 5)), IndexError, "mean"), (lambda x: x.var(3), IndexError, "var"),
    (lambda x: x.amax(2), IndexError, "amax"), (lambda x: x.max(2), IndexError, "max"),
    (lambda x: x.min(-3), IndexError, "min"), (lambda x: x.argmax(2), IndexError, "argmax"),
    (lambda x: x.prod(4), IndexError, "prod"), (lambda x: x.logsumexp(2), IndexError, "logsumexp"),
    (lambda x: x.all(2), IndexError, "all"), (lambda x: x.any(-5), IndexError, "any"),
    (lambda x: x.std(2), IndexError, "std"),
    (lambda x: x.sum((0, 0)), RuntimeError, "sum"), (lambda x: x.amax((1, -1)), RuntimeError, "amax"),
    (lambda x: x.long().mean(), RuntimeError, "mean"), (lambda x: x.long().var(), RuntimeError, "var"),
    (lambda x: x.long().std(), RuntimeError, "std"), (lambda x: (x > 0).argmax(), RuntimeError, "argmax"),
    (lambda x: x[:0].amax(0), IndexError, "amax"), (lambda x: x[:0].max(0), IndexError, "max"),
    (lambda x: x[:0].argmax(), IndexError, "argmax"), (lambda x: x[:0].max(), RuntimeError, "max"),
    (lambda x: x[:0].amin(), RuntimeError, "amin"),
]


@pytest.mark.parametrize("fn,exc,name", ERRORS, ids=[f"{e[2]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors(device, fn, exc, name):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises(exc):
        fn(torch.tensor(a))
    x = pg.tensor(a, device=device, requires_grad=True)
    with pytest.raises(exc, match=name):
        fn(x)
    assert x.grad_fn is None and x.grad is None
    np.testing.assert_array_equal(x.detach().cpu().numpy(), a)
