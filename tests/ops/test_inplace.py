"""torch's in-place `name_` Tensor methods (ops/methods.py's INPLACE and the in-place view
ops) against torch: values written into the same tensor object, dtype rules (an integer
tensor refuses a float result), gradients through an in-place op on a non-leaf, and the leaf
refusal, on every device."""
import numpy as np
import pytest
import torch

import paragrad as pg
from paragrad.ops.methods import INPLACE as _INPLACE
from tests.helpers import assert_close

UNARY = """absolute acos arccos arcsin arcsinh arctan arctanh asin asinh atan atanh ceil cos cosh
    deg2rad erf erfc exp2 expm1 fix floor frac log log10 log1p log2 logit negative rad2deg
    reciprocal round rsqrt sgn sign sin sinh square tan trunc logical_not""".split()
BINARY = """arctan2 atan2 divide eq floor_divide fmod ge greater greater_equal gt heaviside hypot le
    less less_equal logical_and logical_or logical_xor lt multiply ne not_equal remainder
    subtract true_divide xlogy""".split()


def _args(name, L, like):
    """Extra arguments of name_ (besides self), built with library L on like's device."""
    r = np.random.default_rng(len(name))
    t = lambda a: L.tensor(np.asarray(a, np.float32), **({"device": like.device} if L is pg else {}))  # noqa: E731
    i = lambda a: L.tensor(np.asarray(a, np.int64), **({"device": like.device} if L is pg else {}))  # noqa: E731
    u = lambda *s: t(r.uniform(0.1, 0.9, s))  # noqa: E731
    return {
        "addcdiv": ((u(2, 3), u(2, 3)), {"value": 0.5}), "addcmul": ((u(2, 3), u(2, 3)), {"value": 2.0}),
        "addmm": ((u(2, 4), u(4, 3)), {"beta": 0.5}), "baddbmm": ((u(1, 2, 4), u(1, 4, 3)), {}),
        "clamp_max": ((0.5,), {}), "clamp_min": ((0.5,), {}), "cumprod": ((1,), {}), "cumsum": ((0,), {}),
        "lerp": ((u(2, 3), 0.25), {}),
        # (scatter without reduction: distinct positions per row, a repeated one has no defined winner)
        "scatter": ((1, i([[2, 0], [1, 0]]), u(2, 2)), {}), "scatter_add": ((1, i([[2, 0], [1, 1]]), u(2, 2)), {}),
    }.get(name, ((u(2, 3),), {}) if name in BINARY else ((), {}))


INTEGER_ONLY = {"bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"}


@pytest.mark.parametrize("name", sorted(set(_INPLACE) - INTEGER_ONLY))
def test_inplace_matches_torch(name, device):
    data = np.random.default_rng(0).uniform(0.1, 0.9, (2, 3)).astype(np.float32)
    if name in ("acosh", "arccosh"):
        data += 1.5
    if name == "baddbmm":
        data = data[None]
    t = torch.tensor(data)
    p = pg.tensor(data, device=device)
    targs, tkw = _args(name, torch, t)
    pargs, pkw = _args(name, pg, p)
    t_out = getattr(t, name + "_")(*targs, **tkw)
    p_out = getattr(p, name + "_")(*pargs, **pkw)
    assert p_out is p and p.dtype is pg.float32
    assert_close(p, t_out, 1e-5, 1e-5)


@pytest.mark.parametrize("name", sorted(INTEGER_ONLY))
def test_bitwise_inplace(name, device):
    a, b = np.array([5, 3, 12]), np.array([6, 1, 10])
    t, p = torch.tensor(a), pg.tensor(a, device=device)
    args = () if name == "bitwise_not" else (b,)
    getattr(t, name + "_")(*(torch.tensor(x) for x in args))
    getattr(p, name + "_")(*(pg.tensor(x, device=device) for x in args))
    assert p.cpu().tolist() == t.tolist()


def test_float_power_needs_a_float64_base(device):
    x = pg.tensor([1.5, 2.0], dtype=pg.float64, device=device)
    assert x.float_power_(2) is x and x.cpu().tolist() == [2.25, 4.0]
    with pytest.raises(RuntimeError, match="float_power_ has dtype Float but the operation's result requires dtype Double"):
        pg.ones(2, device=device).float_power_(2)


def test_dtype_rules(device):
    ints = pg.tensor([1, 4, 9], device=device)
    with pytest.raises(RuntimeError, match="sqrt_|rsqrt_|can't be cast"):
        ints.rsqrt_()
    f = pg.ones(3, device=device)
    f.eq_(pg.tensor([1.0, 0.0, 1.0], device=device))            # bool result cast into float32
    assert f.dtype is pg.float32 and f.cpu().tolist() == [1.0, 0.0, 1.0]


def test_gradient_through_inplace_on_a_non_leaf(device):
    data = np.random.default_rng(1).uniform(0.1, 0.9, (2, 3)).astype(np.float32)
    tx, px = torch.tensor(data, requires_grad=True), pg.tensor(data, device=device, requires_grad=True)
    for x, L in ((tx, torch), (px, pg)):
        y = x * 2
        y.sin_().mul_(x).unsqueeze_(0)
        y.transpose_(1, 2).sum().backward()
        assert tuple(y.shape) == (1, 3, 2)
    assert_close(px.grad, tx.grad, 1e-5, 1e-5)
    leaf = pg.ones(2, 3, device=device, requires_grad=True)
    for op in (lambda: leaf.cos_(), lambda: leaf.t_()):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            op()


def test_view_inplace_ops_match_torch(device):
    data = np.arange(6, dtype=np.float32).reshape(2, 1, 3)
    for name, args in (("squeeze", (1,)), ("unsqueeze", (0,)), ("transpose", (0, 2)), ("swapaxes", (0, 1)),
                       ("swapdims", (2, 0)), ("t", ())):
        d = data.reshape(2, 3) if name == "t" else data
        t, p = torch.tensor(d), pg.tensor(d, device=device)
        assert getattr(p, name + "_")(*args) is p
        getattr(t, name + "_")(*args)
        assert tuple(p.shape) == tuple(t.shape) and p.cpu().tolist() == t.tolist()
    with pg.no_grad():                       # a leaf that requires grad, outside grad mode
        w = pg.ones(2, 3, device=device, requires_grad=True)
        w.unsqueeze_(1)
    assert tuple(w.shape) == (2, 1, 3) and w.requires_grad and w.grad_fn is None


def test_comparison_aliases(device):
    a, b = pg.tensor([1, 2, 3], device=device), pg.tensor([2, 2, 2], device=device)
    for name in ("greater", "greater_equal", "less", "less_equal", "not_equal"):
        assert getattr(pg, name)(a, b).cpu().tolist() == getattr(torch, name)(torch.tensor([1, 2, 3]),
                                                                           torch.tensor([2, 2, 2])).tolist()
        assert getattr(a, name)(b).cpu().tolist() == getattr(pg, name)(a, b).cpu().tolist()


@pytest.mark.parametrize("fill", [lambda L, y: y.copy_(L.zeros(2)), lambda L, y: y.uniform_(),
                                  lambda L, y: y.normal_(), lambda L, y: y.bernoulli_(0.5)])
def test_a_fill_of_a_tensor_that_requires_grad_keeps_the_graph(fill):
    """torch's copy_ from a source without grad and its random fills keep requires_grad, and
    give the old values a zero gradient (an inf among them included)."""
    grads = []
    for L in (torch, pg):
        x = L.tensor([float("inf"), 1.0], requires_grad=True)
        y = x * 1
        fill(L, y)
        assert y.requires_grad
        (y * 2).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == [0.0, 0.0]
