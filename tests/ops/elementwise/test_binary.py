"""Binary elementwise ops against PyTorch: arithmetic with broadcasting and Python scalars,
type promotion, comparisons, bitwise/logical ops, where/masked_fill, in-place forms, and
gradients against finite differences. `ns(x)` is the module of x's library (pg or torch)."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op, fd_check


def ns(x):
    return pg if isinstance(x, pg.Tensor) else torch


BROADCAST = [[(3, 4), (3, 4)], [(3, 4), (4,)], [(4,), (3, 4)], [(3, 1), (1, 4)], [(2, 3, 4), (3, 1)],
             [(), (3, 4)], [(3, 4), ()], [(), ()], [(1,), (3, 1)], [(0, 4), (4,)], [(2, 1, 4), (1, 3, 1)]]
ARITH = [  # (name, fn, low, high): ranges keep divisors and pow bases away from 0
    ("add", lambda x, y: x + y, -2, 2), ("sub", lambda x, y: x - y, -2, 2),
    ("mul", lambda x, y: x * y, -2, 2), ("div", lambda x, y: x / y, 0.5, 2),
    ("pow", lambda x, y: x ** y, 0.5, 2), ("maximum", lambda x, y: ns(x).maximum(x, y), -2, 2),
    ("minimum", lambda x, y: ns(x).minimum(x, y), -2, 2),
    ("remainder", lambda x, y: x % y, 0.5, 3),
]


@pytest.mark.parametrize("shapes", BROADCAST, ids=str)
@pytest.mark.parametrize("name,fn,low,high", ARITH, ids=[r[0] for r in ARITH])
def test_arith_broadcast(device, name, fn, low, high, shapes):
    check_op(fn, shapes, device=device, low=low, high=high)


@pytest.mark.parametrize("dtype", ["float64", "float16"])
@pytest.mark.parametrize("name,fn,low,high", ARITH, ids=[r[0] for r in ARITH])
def test_arith_dtypes(device, name, fn, low, high, dtype):
    check_op(fn, [(3, 4), (4,)], dtype=dtype, device=device, low=low, high=high)


FORMS = [  # (name, fn, low, high): functional and method spellings, scalar and reflected forms
    ("add_fn", lambda x, y: ns(x).add(x, y), -2, 2), ("add_alpha", lambda x, y: ns(x).add(x, y, alpha=2), -2, 2),
    ("add_alpha_float", lambda x, y: x.add(y, alpha=0.5), -2, 2),
    ("sub_alpha", lambda x, y: ns(x).sub(x, y, alpha=3), -2, 2), ("sub_method", lambda x, y: x.sub(y), -2, 2),
    ("subtract", lambda x, y: ns(x).subtract(x, y), -2, 2), ("mul_fn", lambda x, y: ns(x).mul(x, y), -2, 2),
    ("multiply", lambda x, y: x.multiply(y), -2, 2), ("div_fn", lambda x, y: ns(x).div(x, y), 0.5, 2),
    ("divide", lambda x, y: x.divide(y), 0.5, 2), ("true_divide", lambda x, y: ns(x).true_divide(x, y), 0.5, 2),
    ("div_floor", lambda x, y: ns(x).div(x * 3, y, rounding_mode="floor"), 0.5, 2),
    ("div_trunc", lambda x, y: ns(x).div(x * 3 - 4, y, rounding_mode="trunc"), 0.5, 2),
    ("pow_fn", lambda x, y: ns(x).pow(x, y), 0.5, 2), ("pow_method", lambda x, y: x.pow(y), 0.5, 2),
    ("remainder_fn", lambda x, y: ns(x).remainder(x * 4 - 4, y), 0.5, 2),
    ("maximum_method", lambda x, y: x.maximum(y), -2, 2), ("minimum_method", lambda x, y: x.minimum(y), -2, 2),
    ("max_binary", lambda x, y: ns(x).max(x, y), -2, 2), ("min_binary", lambda x, y: ns(x).min(x, y), -2, 2),
]


@pytest.mark.parametrize("name,fn,low,high", FORMS, ids=[r[0] for r in FORMS])
def test_forms(device, name, fn, low, high):
    check_op(fn, [(3, 4), (3, 4)], device=device, low=low, high=high)


SCALAR = [  # (name, fn, low, high)
    ("add", lambda x: x + 1.5, -2, 2), ("radd", lambda x: 1.5 + x, -2, 2), ("add_int", lambda x: x + 2, -2, 2),
    ("sub", lambda x: x - 1, -2, 2), ("rsub", lambda x: 2 - x, -2, 2), ("mul", lambda x: x * 3, -2, 2),
    ("rmul", lambda x: 0.5 * x, -2, 2), ("div", lambda x: x / 4, -2, 2), ("rdiv", lambda x: 2 / x, 0.5, 2),
    ("pow2", lambda x: x ** 2, -2, 2), ("pow3", lambda x: x ** 3, -2, 2), ("pow_half", lambda x: x ** 0.5, 0.1, 2),
    ("pow_neg", lambda x: x ** -1.5, 0.5, 2), ("pow0", lambda x: x ** 0, -2, 2), ("pow1", lambda x: x ** 1, -2, 2),
    ("rpow", lambda x: 2 ** x, -2, 2), ("rpow_float", lambda x: 0.5 ** x, -2, 2),
    ("rpow_e", lambda x: np.e ** x, -2, 2),
    ("mod", lambda x: x % 0.7, -2, 2), ("rmod", lambda x: 3.0 % x, 0.5, 2), ("floordiv", lambda x: x // 0.7, -2, 2),
    ("neg_pos", lambda x: -(+x), -2, 2), ("add_bool", lambda x: x + True, -2, 2),
    ("rsub_0d_tensor", lambda x: x.new_tensor(2.0) - x, -2, 2),
]
NO_GRAD = ("rmod", "floordiv")   # torch has no derivative for these (its backward raises)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,low,high", SCALAR, ids=[r[0] for r in SCALAR])
def test_scalar_operands(device, name, fn, low, high, dtype):
    check_op(fn, [(3, 4)], dtype=dtype, device=device, low=low, high=high, grad=name not in NO_GRAD)


@pytest.mark.parametrize("shape", [(), (0,)])
@pytest.mark.parametrize("name,fn,low,high", SCALAR, ids=[r[0] for r in SCALAR])
def test_scalar_operands_odd_shapes(device, name, fn, low, high, shape):
    check_op(fn, [shape], device=device, low=low, high=high, grad=name not in NO_GRAD)


# ---- maximum / minimum ties: the gradient is split 50/50, as torch -------------------------------
TIES = [np.array([[1.0, 2.0, -3.0], [0.5, 0.5, 4.0]]), np.array([[1.0, 1.0, -3.0], [0.5, 0.7, 5.0]])]


@pytest.mark.parametrize("fn", [lambda x, y: ns(x).maximum(x, y), lambda x, y: ns(x).minimum(x, y),
                                lambda x, y: ns(x).maximum(x, y[:1])], ids=["maximum", "minimum", "bcast"])
def test_maxmin_ties(device, fn):
    check_op(fn, None, device=device, inputs=[a.astype(np.float32) for a in TIES])


def test_maximum_nan(device):
    a = np.array([1.0, np.nan, 2.0], dtype=np.float32)
    b = np.array([np.nan, 0.0, 3.0], dtype=np.float32)
    check_op(lambda x, y: ns(x).maximum(x, y), None, device=device, inputs=[a, b], grad=False)
    check_op(lambda x, y: ns(x).minimum(x, y), None, device=device, inputs=[a, b], grad=False)


# ---- pow with a tensor exponent, zero bases ------------------------------------------------------
ZERO_BASE = np.array([[0.0, 0.0, 0.0, 2.0], [0.0, 1.5, 0.0, 0.5]])
EXPONENT = np.array([[0.0, 1.0, 2.0, 0.0], [3.0, -1.0, 0.5, 2.5]])


@pytest.mark.parametrize("fn", [
    lambda x, y: x ** y, lambda x, y: ns(x).pow(x, y[:1]), lambda x, y: x ** 2, lambda x, y: x ** 0,
    lambda x, y: x ** 1.5, lambda x, y: 0.0 ** y.abs(), lambda x, y: 2.0 ** y,
], ids=["tensor", "bcast", "sq", "zero", "frac", "scalar_zero_base", "scalar_base"])
def test_pow_zero_base(device, fn):
    check_op(fn, None, device=device, inputs=[ZERO_BASE.astype(np.float32), EXPONENT.astype(np.float32)])


def test_pow_zero_base_negative_exponent(device):
    # 0 ** -1 is inf; the base's gradient there is -inf as in torch (no nan from 0 * inf)
    check_op(lambda x, y: x ** y, None, device=device,
             inputs=[np.array([0.0, 2.0], np.float32), np.array([-1.0, -1.0], np.float32)])


# ---- remainder / floor_divide --------------------------------------------------------------------
SIGNED = [np.array([[5.5, -5.5, 5.5, -5.5, 0.0, 3.0]]), np.array([[2.0, 2.0, -2.0, -2.0, 1.5, 1.5]])]


@pytest.mark.parametrize("fn,grad", [
    (lambda x, y: x % y, True), (lambda x, y: ns(x).remainder(x, y), True),
    (lambda x, y: x // y, False), (lambda x, y: ns(x).floor_divide(x, y), False),
    (lambda x, y: ns(x).div(x, y, rounding_mode="floor"), True),
    (lambda x, y: ns(x).div(x, y, rounding_mode="trunc"), True),
], ids=["mod", "remainder", "floordiv", "floor_divide", "div_floor", "div_trunc"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_remainder_floordiv(device, fn, grad, dtype):
    # torch has no derivative for floor_divide (backward raises); paragrad records none
    check_op(fn, None, device=device, inputs=[a.astype(dtype) for a in SIGNED], grad=grad)


def test_integer_division_by_zero_raises(device):
    x = pg.tensor([3, 4], device=device)
    for fn, name in [(lambda: x // 0, "floor_divide"), (lambda: x % pg.tensor([1, 0], device=device), "remainder")]:
        with pytest.raises(RuntimeError, match=name):
            fn()
    assert x.tolist() == [3, 4]


# ---- type promotion ------------------------------------------------------------------------------
PROMOTION = [  # (name, fn, input dtypes): the output dtype must equal torch's
    ("int32+float", lambda x: x + 2.5, ["int32"]), ("f16+float", lambda x: x + 2.5, ["float16"]),
    ("int32+int64_0d", lambda x, y: x + y, ["int32", "int64:0d"]), ("bool+int", lambda x: x + 1, ["bool"]),
    ("int/int", lambda x, y: x / y, ["int32", "int32"]), ("f32+f64", lambda x, y: x + y, ["float32", "float64"]),
    ("int32*int", lambda x: x * 2, ["int32"]), ("uint8+int8", lambda x, y: x + y, ["uint8", "int8"]),
    ("f16+f32", lambda x, y: x * y, ["float16", "float32"]),
    ("f32+f64_0d", lambda x, y: x - y, ["float32", "float64:0d"]),
    ("int+f64_0d", lambda x, y: x + y, ["int32", "float64:0d"]), ("bool*float", lambda x: x * 2.5, ["bool"]),
    ("bool+bool", lambda x, y: x + y, ["bool", "bool"]), ("int64+True", lambda x: x + True, ["int64"]),
    ("int/scalar", lambda x: x / 2, ["int64"]), ("int//scalar", lambda x: x // 2, ["int64"]),
    ("int**2", lambda x: x ** 2, ["int32"]), ("int**0.5", lambda x: x ** 0.5, ["int32"]),
    ("2**int", lambda x: 2 ** x, ["int32"]), ("2.5**int", lambda x: 2.5 ** x, ["int32"]),
    ("uint8+1000", lambda x: x + 1000, ["uint8"]), ("uint8-1", lambda x: x - 1, ["uint8"]),
    ("int8*300", lambda x: x * 300, ["int8"]), ("uint8==261", lambda x: x == 261, ["uint8"]),
    ("int_div_floor", lambda x: ns(x).div(-x, 3, rounding_mode="floor"), ["int64"]),
    ("int8*int16", lambda x, y: x * y, ["int8", "int16"]), ("u8_0d+int8", lambda x, y: x + y, ["uint8:0d", "int8"]),
    ("f64_0d+f16_0d", lambda x, y: x + y, ["float64:0d", "float16:0d"]),
    ("int32-uint8", lambda x, y: x - y, ["int32", "uint8"]),
    ("maximum_int_float", lambda x, y: ns(x).maximum(x, y), ["int32", "float32"]),
    ("int_div_trunc", lambda x, y: ns(x).div(x, y, rounding_mode="trunc"), ["int32", "int32"]),
    ("add_alpha_int", lambda x, y: ns(x).add(x, y, alpha=3), ["int64", "int64"]),
    # reflected add and mul run as self op scalar: the same dtypes and wrapping as torch's
    ("1000+uint8", lambda x: 1000 + x, ["uint8"]), ("300*int8", lambda x: 300 * x, ["int8"]),
    ("2.5*bool", lambda x: 2.5 * x, ["bool"]), ("True+int64", lambda x: True + x, ["int64"]),
    ("2*f16", lambda x: 2 * x, ["float16"]), ("0.1*f16", lambda x: 0.1 * x, ["float16"]),
]


def _promo_inputs(dtypes):
    rng = np.random.default_rng(1)
    out = []
    for d in dtypes:
        name, _, zd = d.partition(":")
        shape = () if zd else (2, 3)
        a = rng.integers(1, 5, size=shape) if name != "bool" else rng.random(shape) < 0.5
        out.append(np.asarray(a).astype(name))
    return out


@pytest.mark.parametrize("name,fn,dtypes", PROMOTION, ids=[r[0] for r in PROMOTION])
def test_promotion(device, name, fn, dtypes):
    check_op(fn, None, device=device, inputs=_promo_inputs(dtypes), atol=1e-3, rtol=1e-3)


# ---- comparisons ---------------------------------------------------------------------------------
CMP = [  # (name, fn)
    ("eq", lambda x, y: x == y), ("ne", lambda x, y: x != y), ("lt", lambda x, y: x < y),
    ("le", lambda x, y: x <= y), ("gt", lambda x, y: x > y), ("ge", lambda x, y: x >= y),
    ("eq_fn", lambda x, y: ns(x).eq(x, y)), ("ne_fn", lambda x, y: ns(x).ne(x, y)),
    ("lt_fn", lambda x, y: ns(x).lt(x, y)), ("le_m", lambda x, y: x.le(y)), ("gt_m", lambda x, y: x.gt(y)),
    ("ge_m", lambda x, y: x.ge(y)), ("greater", lambda x, y: x.greater(y)), ("less", lambda x, y: x.less(y)),
    ("scalar", lambda x, y: x < 1), ("rscalar", lambda x, y: 1 < x), ("eq_scalar", lambda x, y: x == 1.0),
    ("bcast", lambda x, y: x >= y[:1]), ("0d", lambda x, y: x[0, 0] < y),
]
# rounded values make ties (eq/le/ge) likely
CMP_INPUTS = [np.round(np.random.default_rng(3).uniform(-2, 2, (3, 4))) for _ in range(2)]


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
@pytest.mark.parametrize("name,fn", CMP, ids=[r[0] for r in CMP])
def test_compare(device, name, fn, dtype):
    out = check_op(fn, None, device=device, inputs=[a.astype(dtype) for a in CMP_INPUTS])
    assert out.dtype is pg.bool and not out.requires_grad


def test_compare_mixed_dtypes(device):
    check_op(lambda x, y: x < y, None, device=device, inputs=[CMP_INPUTS[0].astype("int32"), CMP_INPUTS[1]])
    check_op(lambda x, y: x == y, None, device=device, inputs=[np.array([np.nan, 1.0]), np.array([np.nan, 1.0])])


def test_compare_with_none(device):
    x = pg.tensor([1.0], device=device)
    assert (x == None) is False and (x != None) is True  # noqa: E711  (as torch)


@pytest.mark.parametrize("lib", [pg, torch], ids=["paragrad", "torch"])
def test_compare_with_what_isnt_a_number(lib, device):
    """The operators give NotImplemented (== falls back to identity, < raises Python's
    TypeError); the functions and methods raise TypeError, as torch's."""
    x = lib.tensor([1.0], device=device if lib is pg else "cpu")
    assert (x == "a") is False and (x != "a") is True
    with pytest.raises(TypeError, match="'<' not supported"):
        x < "a"                                         # noqa: B015
    for call in (lambda: lib.eq(x, "a"), lambda: x.ge("a"), lambda: lib.lt(x, [1.0])):
        with pytest.raises(TypeError, match="other"):
            call()


# ---- bitwise and logical -------------------------------------------------------------------------
BITWISE = [  # (name, fn)
    ("and", lambda x, y: x & y), ("or", lambda x, y: x | y), ("xor", lambda x, y: x ^ y),
    ("and_fn", lambda x, y: ns(x).bitwise_and(x, y)), ("or_m", lambda x, y: x.bitwise_or(y)),
    ("xor_fn", lambda x, y: ns(x).bitwise_xor(x, y)), ("not", lambda x, y: ~x),
    ("and_scalar", lambda x, y: x & 1), ("rand_scalar", lambda x, y: 3 | x), ("rxor_true", lambda x, y: True ^ x),
    ("bcast", lambda x, y: x & y[:1]), ("logical_and", lambda x, y: ns(x).logical_and(x, y)),
    ("logical_or", lambda x, y: x.logical_or(y)), ("logical_xor", lambda x, y: ns(x).logical_xor(x, y)),
]


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "uint8"])
@pytest.mark.parametrize("name,fn", BITWISE, ids=[r[0] for r in BITWISE])
def test_bitwise(device, name, fn, dtype):
    check_op(fn, [(3, 4), (3, 4)], dtype=dtype, device=device, low=0, high=16)


@pytest.mark.parametrize("fn", [lambda x, y: ns(x).logical_and(x, y), lambda x, y: ns(x).logical_or(x, y),
                                lambda x, y: ns(x).logical_xor(x, y), lambda x, y: ns(x).logical_not(x)],
                         ids=["and", "or", "xor", "not"])
def test_logical_mixed(device, fn):
    check_op(fn, None, device=device, inputs=[np.array([0.0, 1.5, 0.0, -2.0]), np.array([0, 0, 3, 1], np.int32)])


# ---- where and masked_fill -----------------------------------------------------------------------
def _mask(shape, seed=5):
    return np.random.default_rng(seed).random(shape) < 0.5


WHERE = [  # (name, fn, shapes of the non-mask inputs); the mask has shape (3, 4)
    ("tensors", lambda c, x, y: ns(x).where(c, x, y), [(3, 4), (3, 4)]),
    ("bcast", lambda c, x, y: ns(x).where(c, x, y), [(4,), (3, 1)]),
    ("0d", lambda c, x, y: ns(x).where(c, x, y), [(), (3, 4)]),
    ("scalar_other", lambda c, x, y: ns(x).where(c, x, 0.0), [(3, 4), (1,)]),
    ("scalar_input", lambda c, x, y: ns(x).where(c, 1.5, y), [(1,), (4,)]),
    ("int_scalar", lambda c, x, y: ns(x).where(c, x, 2), [(3, 4), (1,)]),
    ("method", lambda c, x, y: x.where(c, y), [(3, 4), (3, 4)]),
    ("method_scalar", lambda c, x, y: x.where(c, -1.0), [(3, 4), (1,)]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,shapes", WHERE, ids=[r[0] for r in WHERE])
def test_where(device, name, fn, shapes, dtype):
    rng = np.random.default_rng(0)
    inputs = [_mask((3, 4))] + [rng.uniform(-2, 2, s).astype(dtype) for s in shapes]
    check_op(fn, None, dtype=dtype, device=device, inputs=inputs)


@pytest.mark.parametrize("fn,dtypes", [
    (lambda c, x, y: ns(x).where(c, x, y), ["int32", "float64"]),
    (lambda c, x, y: ns(x).where(c, x, 2.5), ["int32", "int32"]),
    (lambda c, x, y: ns(c).where(c, 1.0, 0.0), ["int32", "int32"]),
    (lambda c, x, y: ns(c).where(c, 1, 0), ["int32", "int32"]),
    (lambda c, x, y: ns(x).where(c, x, y), ["float16", "float32"]),
], ids=["int_f64", "int_scalar_float", "scalars", "int_scalars", "f16_f32"])
def test_where_promotion(device, fn, dtypes):
    inputs = [_mask((2, 3))] + [np.arange(6).reshape(2, 3).astype(d) for d in dtypes]
    check_op(fn, None, device=device, inputs=inputs)


MASKED_FILL = [  # (name, fn, shapes of x and value)
    ("scalar", lambda m, x, v: x.masked_fill(m, 2.5), [(3, 4), ()]),
    ("int_scalar", lambda m, x, v: x.masked_fill(m, -1), [(3, 4), ()]),
    ("0d_tensor", lambda m, x, v: x.masked_fill(m, v), [(3, 4), ()]),
    ("bcast_mask", lambda m, x, v: x.masked_fill(m[:1], v), [(3, 4), ()]),
    ("functional", lambda m, x, v: ns(x).masked_fill(x, m, v), [(3, 4), ()]),
    ("inf", lambda m, x, v: x.masked_fill(m, float("-inf")).exp(), [(3, 4), ()]),
    ("inplace", lambda m, x, v: x.clone().masked_fill_(m, v), [(3, 4), ()]),
]


@pytest.mark.parametrize("name,fn,shapes", MASKED_FILL, ids=[r[0] for r in MASKED_FILL])
def test_masked_fill(device, name, fn, shapes):
    rng = np.random.default_rng(0)
    inputs = [_mask((3, 4))] + [rng.uniform(-2, 2, s).astype(np.float32) for s in shapes]
    check_op(fn, None, device=device, inputs=inputs)


def test_masked_fill_dtypes(device):
    m, x = _mask((2, 3)), np.arange(6).reshape(2, 3).astype(np.int32)
    check_op(lambda m, x: x.masked_fill(m, 2.5), None, device=device, inputs=[m, x])   # stays int32
    check_op(lambda m, x, v: x.masked_fill(m, v), None, device=device,
             inputs=[m, x.astype(np.float32), np.array(7.0)])                          # f64 value: f32


# ---- in-place ops --------------------------------------------------------------------------------
INPLACE = [  # (name, fn(x, y) mutating x and returning it, dtypes of x and y)
    ("add_", lambda x, y: x.add_(y), ["float32", "float32"]),
    ("add_alpha", lambda x, y: x.add_(y, alpha=2), ["float32", "float32"]),
    ("sub_", lambda x, y: x.sub_(y), ["float32", "float32"]),
    ("sub_alpha", lambda x, y: x.sub_(y, alpha=0.5), ["float32", "float32"]),
    ("mul_", lambda x, y: x.mul_(y), ["float32", "float32"]),
    ("div_", lambda x, y: x.div_(y), ["float32", "float32"]),
    ("add_scalar", lambda x, y: x.add_(2), ["float32", "float32"]),
    ("mul_bcast", lambda x, y: x.mul_(y[:1]), ["float32", "float32"]),
    ("add_0d", lambda x, y: x.add_(y[0, 0]), ["float32", "float32"]),
    ("iadd", lambda x, y: _iop(x, y, "+"), ["float32", "float32"]),
    ("isub", lambda x, y: _iop(x, y, "-"), ["float32", "float32"]),
    ("imul", lambda x, y: _iop(x, y, "*"), ["float32", "float32"]),
    ("idiv", lambda x, y: _iop(x, y, "/"), ["float32", "float32"]),
    ("int_add_int", lambda x, y: x.add_(y), ["int32", "int64"]),
    ("int_iadd_scalar", lambda x, y: _iop(x, 3, "+"), ["int64", "int64"]),
    ("float_add_int", lambda x, y: x.add_(y), ["float32", "int64"]),
    ("f16_mul_f64", lambda x, y: x.mul_(y), ["float16", "float64"]),
    ("int_mul_bool", lambda x, y: x.mul_(y > 2), ["int32", "int32"]),
]


def _iop(x, y, op):
    ref = x
    if op == "+":
        x += y
    elif op == "-":
        x -= y
    elif op == "*":
        x *= y
    else:
        x /= y
    assert x is ref          # augmented assignment keeps the same tensor object
    return x


@pytest.mark.parametrize("name,fn,dtypes", INPLACE, ids=[r[0] for r in INPLACE])
def test_inplace_no_grad(device, name, fn, dtypes):
    """Under no_grad the op writes into the tensor itself (same object, same buffer dtype)."""
    rng = np.random.default_rng(0)
    xs = [(rng.uniform(1, 4, (3, 4))).astype(d) for d in dtypes]
    t = [torch.tensor(a) for a in xs]
    p = [pg.tensor(a, device=device) for a in xs]
    with torch.no_grad():
        tr = fn(*t)
    with pg.no_grad():
        pr = fn(*p)
    assert pr is p[0]
    assert pr.dtype.name == str(tr.dtype).replace("torch.", "")
    np.testing.assert_allclose(pr.cpu().numpy().astype(np.float64), tr.numpy().astype(np.float64), rtol=1e-3)


@pytest.mark.parametrize("name,fn,dtypes", INPLACE[:13], ids=[r[0] for r in INPLACE[:13]])
def test_inplace_grad_nonleaf(device, name, fn, dtypes):
    # in grad mode on a non-leaf: the graph goes through the in-place op (gradients to both)
    check_op(lambda x, y: fn(x * 1, y), [(3, 4), (3, 4)], device=device, low=0.5, high=2)


def test_inplace_leaf_requires_grad_raises(device):
    x = pg.ones(3, device=device, requires_grad=True)
    for fn, name in [(lambda: x.add_(1), "add_"), (lambda: x.mul_(2), "mul_"), (lambda: x.sub_(x), "sub_"),
                     (lambda: x.div_(2), "div_"), (lambda: x.__iadd__(1), "add_")]:
        with pytest.raises(RuntimeError, match=name):
            fn()
        assert x.tolist() == [1.0, 1.0, 1.0] and x.grad_fn is None
    with pg.no_grad():
        x += 1
    assert x.tolist() == [2.0, 2.0, 2.0] and x.requires_grad and x.grad_fn is None


def test_inplace_keeps_saved_inputs(device):
    """An in-place op in grad mode replaces the tensor's buffer; nodes recorded earlier keep the
    old value, so their gradients stay right (torch refuses this case with a version error)."""
    a = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    x = a * 1
    y = (x * x).sum() + x.exp().sum() + x.prod()
    x.mul_(3)                        # x now holds 3a; y's nodes still see a
    (y + x.sum()).backward()
    av = np.array([1.0, 2.0])
    want = 2 * av + np.exp(av) + av[::-1] + 3
    np.testing.assert_allclose(a.grad.cpu().numpy(), want, rtol=1e-6)


def test_inplace_no_grad_after_save_raises(device):
    w = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    x = pg.tensor([3.0, 4.0], device=device)
    y = (x * w).sum()
    with pg.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match="inplace"):
        y.backward()


@pytest.mark.parametrize("fn,match", [
    (lambda i, f: i.add_(1.5), "add_"), (lambda i, f: i.mul_(f), "mul_"), (lambda i, f: i.div_(2), "div_"),
    (lambda i, f: i.__iadd__(f), "add_"), (lambda i, f: i.sub_(f[:1]), "sub_"),
    (lambda i, f: f.add_(f.new_ones(2, 3)), "add_"), (lambda i, f: f[:1].clone().mul_(f), "mul_"),
], ids=["int_add_float", "int_mul_float_tensor", "int_div", "int_iadd", "int_sub", "bcast_grows", "bcast_grows2"])
def test_inplace_errors(device, fn, match):
    """Results that can't be stored in the tensor raise (as torch) and leave it unchanged."""
    mk = lambda lib, **kw: (lib.tensor([1, 2, 3], **kw), lib.tensor([0.5, 1.5, 2.5], **kw))  # noqa: E731
    with pytest.raises(RuntimeError):
        fn(*mk(torch))
    i, f = mk(pg, device=device)
    with pytest.raises(RuntimeError, match=match):
        fn(i, f)
    assert i.tolist() == [1, 2, 3] and i.dtype is pg.int64 and f.tolist() == [0.5, 1.5, 2.5]


# ---- finite differences (float64) ----------------------------------------------------------------
FD = [  # (name, fn, shapes, low, high)
    ("add", lambda x, y: x + y, [(3, 4), (4,)], -2, 2), ("sub", lambda x, y: x - y, [(3, 1), (1, 4)], -2, 2),
    ("mul", lambda x, y: x * y, [(3, 4), ()], -2, 2), ("div", lambda x, y: x / y, [(3, 4), (3, 1)], 0.5, 2),
    ("pow", lambda x, y: x ** y, [(3, 4), (4,)], 0.5, 2), ("rpow", lambda x: 2 ** x, [(3, 4)], -2, 2),
    ("rsub", lambda x: 2 - x, [(3, 4)], -2, 2), ("rdiv", lambda x: 2 / x, [(3, 4)], 0.5, 2),
    ("sqrt_pow", lambda x: x ** 0.5, [(3, 4)], 0.5, 2), ("sq", lambda x: x ** 2, [(3, 4)], -2, 2),
    ("add_alpha", lambda x, y: x.add(y, alpha=-1.5), [(3, 4), (3, 4)], -2, 2),
    ("maximum", lambda x, y: pg.maximum(x, y), [(3, 4), (3, 4)], -2, 2),
    ("minimum", lambda x, y: pg.minimum(x, y), [(3, 4), (4,)], -2, 2),
    ("remainder", lambda x, y: (x * 3) % y, [(3, 4), (3, 4)], 0.5, 2),
    ("where", lambda x, y: pg.where(x > 0, x * y, y), [(3, 4), (3, 4)], -2, 2),
    ("masked_fill", lambda x, v: x.masked_fill(x < 0, v.sum()), [(3, 4), (2,)], -2, 2),
    ("inplace", lambda x, y: (x * 1).mul_(y).add_(x), [(3, 4), (3, 4)], -2, 2),
]


@pytest.mark.parametrize("name,fn,shapes,low,high", FD, ids=[r[0] for r in FD])
def test_fd(device, name, fn, shapes, low, high):
    fd_check(fn, shapes, device=device, low=low, high=high)


# ---- errors --------------------------------------------------------------------------------------
SHAPE_ERRORS = [  # (fn, name the message must contain)
    (lambda x, y: x + y, "add"), (lambda x, y: x - y, "sub"), (lambda x, y: x * y, "mul"),
    (lambda x, y: x / y, "div"), (lambda x, y: x ** y, "pow"), (lambda x, y: x % y, "remainder"),
    (lambda x, y: x // y, "floor_divide"), (lambda x, y: ns(x).maximum(x, y), "maximum"),
    (lambda x, y: ns(x).minimum(x, y), "minimum"), (lambda x, y: x == y, "eq"), (lambda x, y: x < y, "lt"),
    (lambda x, y: (x > 0) & (y > 0), "bitwise_and"), (lambda x, y: ns(x).logical_or(x, y), "logical_or"),
    (lambda x, y: ns(x).where(x > 0, x, y), "where"), (lambda x, y: x.masked_fill(y > 0, 1.0), "masked_fill"),
    (lambda x, y: ns(x).add(x, y, alpha=2), "add"),
]


@pytest.mark.parametrize("fn,name", SHAPE_ERRORS, ids=[r[1] for r in SHAPE_ERRORS])
def test_shape_mismatch(device, fn, name):
    with pytest.raises(RuntimeError):
        fn(torch.ones(2, 3), torch.ones(4))
    x = pg.ones(2, 3, device=device, requires_grad=True)
    y = pg.full((4,), 2.0, device=device)
    with pytest.raises(RuntimeError, match=name):
        fn(x, y)
    assert x.grad_fn is None and x.tolist() == [[1.0] * 3] * 2 and y.tolist() == [2.0] * 4


OTHER_ERRORS = [  # (fn, exception, name in the message); each raises in torch too
    (lambda f, i, b: f & i, RuntimeError, "bitwise_and"), (lambda f, i, b: i | 1.5, RuntimeError, "bitwise_or"),
    (lambda f, i, b: b - b, RuntimeError, "sub"), (lambda f, i, b: ns(f).maximum(f, 1.0), TypeError, "maximum"),
    (lambda f, i, b: i ** -1, RuntimeError, "pow"), (lambda f, i, b: ns(f).add(i, i, alpha=2.5), RuntimeError, "add"),
    (lambda f, i, b: ns(f).where(i, f, f), RuntimeError, "where"),
    (lambda f, i, b: f.masked_fill(i, 1.0), RuntimeError, "masked_fill"),
    (lambda f, i, b: f.masked_fill(b, f), RuntimeError, "masked_fill"),
    (lambda f, i, b: ns(f).div(f, f, rounding_mode="round"), (ValueError, RuntimeError), "div"),
    (lambda f, i, b: f + "a", TypeError, "add|unsupported"),
]


@pytest.mark.parametrize("fn,exc,name", OTHER_ERRORS, ids=[r[2] for r in OTHER_ERRORS])
def test_other_errors(device, fn, exc, name):
    mk = lambda lib, **kw: (lib.tensor([0.5, 1.5], **kw), lib.tensor([1, 0], **kw),  # noqa: E731
                            lib.tensor([True, False], **kw))
    with pytest.raises(exc):
        fn(*mk(torch))
    args = mk(pg, device=device)
    with pytest.raises(exc, match=name):
        fn(*args)
    assert [a.tolist() for a in args] == [[0.5, 1.5], [1, 0], [True, False]]
