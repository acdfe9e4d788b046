"""Factories and the Tensor API against torch: dtype inference, shapes, conversions, printing,
type promotion, devices, and the errors bad arguments give."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import paragrad as pg
from paragrad.backends import backend_for

from tests.helpers import check_raises


def tname(dtype):
    """'float32' for torch.float32 or paragrad.float32."""
    return str(dtype).rsplit(".", 1)[-1]


def same(p, t, exact=True, atol=1e-6, rtol=1e-6):
    """A paragrad tensor equals a torch tensor: shape, dtype, values, requires_grad."""
    assert isinstance(p, pg.Tensor), type(p)
    assert tuple(p.shape) == tuple(t.shape), (tuple(p.shape), tuple(t.shape))
    assert tname(p.dtype) == tname(t.dtype), (p.dtype, t.dtype)
    assert p.requires_grad == t.requires_grad
    pa, ta = p.detach().cpu().numpy(), t.detach().numpy()
    if exact:
        np.testing.assert_array_equal(pa, ta)
    else:
        np.testing.assert_allclose(pa.astype(np.float64), ta.astype(np.float64), atol=atol, rtol=rtol)


def on_both(expr, device="cpu", **env):
    """Evaluate `expr` with L bound to paragrad and to torch (device= only for paragrad)."""
    p = eval(expr, {"L": pg, "np": np, "dev": device, **env})
    t = eval(expr, {"L": torch, "np": np, "dev": "cpu", **env})
    return p, t


# ---- pg.tensor -----------------------------------------------------------------------------------
@pytest.mark.parametrize("expr", [
    "L.tensor([1.0, 2.0], device=dev)",                   # python floats -> float32
    "L.tensor([1, 2], device=dev)",                       # ints -> int64
    "L.tensor([True, False], device=dev)",                # bools -> bool
    "L.tensor([1, 2.5], device=dev)",                     # mixed -> float32
    "L.tensor([True, 1], device=dev)",                    # bool + int -> int64
    "L.tensor([True, 1.5], device=dev)",
    "L.tensor(np.array([1.0, 2.0]), device=dev)",         # numpy float64 stays float64
    "L.tensor(np.array([1, 2], dtype=np.int32), device=dev)",
    "L.tensor(np.array([1, 2], dtype=np.uint8), device=dev)",
    "L.tensor(np.array([1.5], dtype=np.float16), device=dev)",
    "L.tensor(np.float64(1.5), device=dev)",              # numpy scalars keep their dtype
    "L.tensor(np.float32(1.5), device=dev)",
    "L.tensor(np.int16(3), device=dev)",
    "L.tensor([[1, 2], [3, 4]], device=dev)",             # nested lists
    "L.tensor([[[1.5]], [[2.5]]], device=dev)",
    "L.tensor(3.5, device=dev)",                          # 0-d
    "L.tensor(7, device=dev)",
    "L.tensor(False, device=dev)",
    "L.tensor([], device=dev)",
    "L.tensor([[], []], device=dev)",
    "L.tensor([np.float32(1.0), np.float32(2.0)], device=dev)",
    "L.tensor([L.tensor(1.0), L.tensor(2.0)], device=dev)",
    "L.tensor(L.ones(2, dtype=L.int32), device=dev)",     # from a tensor: a copy, same dtype
    "L.tensor([1.7, -1.7, 2.5, -0.2], dtype=L.int64, device=dev)",   # float -> int truncates
    "L.tensor([1.7, -1.7, 2.5], dtype=L.int32, device=dev)",
    "L.tensor([0.5, 0.0, -2.0], dtype=L.bool, device=dev)",
    "L.tensor([1, 2], dtype=L.float64, device=dev)",
    "L.tensor([1, 2], dtype=L.float16, device=dev)",
    "L.tensor(L.ones(2), dtype=L.int32, device=dev)",
    "L.tensor(np.float64(1.5), dtype=L.float32, device=dev)",
    "L.tensor([1.0, 2.0], requires_grad=True, device=dev)",
    "L.as_tensor([1, 2], device=dev)",
    "L.as_tensor(np.array([1.0]), device=dev)",
])
@pytest.mark.filterwarnings("ignore:To copy construct from a tensor")
def test_tensor_inference(device, expr):
    same(*on_both(expr, device))


@pytest.mark.parametrize("args", [(), ([1, 2],), ([[1.5], [2.5]],), (2, 3), (5,)])
def test_legacy_constructor(args):
    p, t = pg.Tensor(*args), torch.Tensor(*args)
    assert tuple(p.shape) == tuple(t.shape) and p.dtype is pg.float32
    if args and isinstance(args[0], list):
        same(p, t)
    assert tuple(pg.Tensor(pg.Size([2, 1])).shape) == (2, 1)


def test_tensor_copies_its_input(device):
    a = np.array([1.0, 2.0])
    x = pg.tensor(a, device=device)
    a[0] = 5
    assert x.tolist() == [1.0, 2.0]
    y = pg.tensor(x)
    y.add_(1)
    assert x.tolist() == [1.0, 2.0]


def test_from_numpy_shares_memory():
    a = np.array([1, 2], dtype=np.int16)
    x = pg.from_numpy(a)
    a[0] = 7
    assert x.dtype is pg.int16 and x.tolist() == [7, 2]


@pytest.mark.parametrize("lib", [pg, torch], ids=["paragrad", "torch"])
def test_as_tensor_shares_a_numpy_array_it_can(lib):
    """as_tensor of an array of its dtype bound for the CPU shares memory, as from_numpy; another
    dtype is a copy."""
    a = np.array([1.0, 2.0], dtype=np.float32)
    shared, copied = lib.as_tensor(a), lib.as_tensor(a, dtype=lib.float64)
    a[0] = 7
    assert shared.tolist() == [7.0, 2.0] and copied.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("expr, err", [
    ("L.tensor([300, -1], dtype=L.uint8)", RuntimeError),     # python ints that overflow
    ("L.tensor([128], dtype=L.int8)", RuntimeError),
    ("L.tensor([1e20], dtype=L.int64)", RuntimeError),
    ("L.tensor([float('nan')], dtype=L.int32)", RuntimeError),
    ("L.tensor([[1, 2], [3]])", ValueError),                  # ragged
    ("L.tensor([1, 'a'])", TypeError),
])
def test_tensor_errors(expr, err):
    check_raises(lambda L: eval(expr, {"L": L}), error=err)


# ---- constant factories --------------------------------------------------------------------------
@pytest.mark.parametrize("expr", [
    "L.zeros(2, 3, device=dev)", "L.zeros((2, 3), device=dev)", "L.zeros([2, 3], device=dev)",
    "L.zeros(size=(2, 3), device=dev)", "L.zeros((), device=dev)", "L.zeros(0, 3, device=dev)",
    "L.zeros(2, dtype=L.int32, device=dev)", "L.ones(3, dtype=L.bool, device=dev)",
    "L.ones(2, 2, dtype=L.float64, device=dev)", "L.ones(L.Size([2, 1]), device=dev)",
    "L.full((2,), 1, device=dev)",          # dtype from the fill value: int64
    "L.full((2,), 1.5, device=dev)",        # float32
    "L.full((2,), True, device=dev)",       # bool
    "L.full([2, 2], 7, dtype=L.float64, device=dev)",
    "L.full((3,), 2.7, dtype=L.int64, device=dev)",
    "L.full((), 3.0, device=dev)",
    "L.full((2,), L.tensor(4.5), device=dev)",
    "L.eye(3, device=dev)", "L.eye(2, 4, device=dev)", "L.eye(4, 2, device=dev)",
    "L.eye(3, dtype=L.int64, device=dev)", "L.eye(3, dtype=L.bool, device=dev)", "L.eye(0, device=dev)",
    "L.zeros(2, 3, requires_grad=True, device=dev)",
    "L.ones(2, dtype=L.float64, requires_grad=True, device=dev)",
])
def test_constant_factories(device, expr):
    same(*on_both(expr, device))


@pytest.mark.parametrize("expr", [
    "L.zeros_like(x)", "L.ones_like(x)", "L.full_like(x, 2.7)", "L.full_like(x, True)",
    "L.zeros_like(x, dtype=L.float64)", "L.ones_like(x, dtype=L.bool)",
    "L.full_like(y, 5)", "L.zeros_like(y, requires_grad=True)", "L.ones_like(z)",
])
def test_like_factories(device, expr):
    env_p = {"x": pg.ones(2, 3, dtype=pg.int32, device=device), "y": pg.ones(2, device=device),
             "z": pg.ones((), dtype=pg.float64, device=device)}
    env_t = {"x": torch.ones(2, 3, dtype=torch.int32), "y": torch.ones(2),
             "z": torch.ones((), dtype=torch.float64)}
    p = eval(expr, {"L": pg, **env_p})
    t = eval(expr, {"L": torch, **env_t})
    same(p, t)
    assert p.device == env_p["x"].device


@pytest.mark.parametrize("expr", ["L.empty(2, 3, device=dev)", "L.empty((4,), dtype=L.int16, device=dev)",
                                  "L.empty(0, device=dev)", "L.empty_like(L.ones(2, dtype=L.int8))",
                                  "L.empty(2, requires_grad=True, device=dev)"])
def test_empty_shape_and_dtype(device, expr):
    p, t = on_both(expr, device)
    assert tuple(p.shape) == tuple(t.shape) and tname(p.dtype) == tname(t.dtype)
    assert p.requires_grad == t.requires_grad


# ---- ranges --------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    (5,), (1, 5), (0, 10, 3), (5, 0, -1), (5, 5), (-3, 3, 2),
    (0, 1, 0.1), (0, -1, -0.25), (1, 2.5, 0.5), (0.0, 5), (2.5,), (1, 4, 0.3), (-3, 3, 0.7),
    (0, 1, 1 / 3), (0, 1e-3, 1e-4), (-1.0, 1.0, 0.1), (10, 0, -0.75),
])
def test_arange(device, args):
    p, t = pg.arange(*args, device=device), torch.arange(*args)
    same(p, t, exact=False)             # lengths and dtypes exactly, values to float rounding


@pytest.mark.parametrize("kwargs", [{"dtype": "float32"}, {"dtype": "float64"}, {"dtype": "int32"}])
def test_arange_dtype(device, kwargs):
    for args in ((10,), (0, 2, 0.25), (0.5, 3)):
        p = pg.arange(*args, dtype=getattr(pg, kwargs["dtype"]), device=device)
        t = torch.arange(*args, dtype=getattr(torch, kwargs["dtype"]))
        same(p, t, exact=False)


@pytest.mark.parametrize("args", [
    (0, 1, 5), (-1, 1, 1), (0, 1, 0), (3, -3, 11), (0, 1, 7), (-1.5, 2.7, 100), (2, 2, 4),
])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_linspace(device, args, dtype):
    p = pg.linspace(*args, dtype=getattr(pg, dtype), device=device)
    t = torch.linspace(*args, dtype=getattr(torch, dtype))
    same(p, t, exact=dtype == "int64", atol=1e-6)


# ---- random --------------------------------------------------------------------------------------
@pytest.mark.parametrize("expr, dtype, lo, hi", [
    ("L.rand(2, 3, device=dev)", "float32", 0, 1),
    ("L.rand((4,), dtype=L.float64, device=dev)", "float64", 0, 1),
    ("L.rand(size=(3, 2), device=dev)", "float32", 0, 1),
    ("L.randn(2, 3, device=dev)", "float32", -10, 10),
    ("L.randn(5, dtype=L.float64, device=dev)", "float64", -10, 10),
    ("L.randint(10, (3, 4), device=dev)", "int64", 0, 9),
    ("L.randint(3, 10, (50,), device=dev)", "int64", 3, 9),
    ("L.randint(-5, 5, (50,), dtype=L.int32, device=dev)", "int32", -5, 4),
    ("L.randint(0, 4, (50,), dtype=L.float32, device=dev)", "float32", 0, 3),
    ("L.randint(3, size=(50,), device=dev)", "int64", 0, 2),
    ("L.rand_like(L.ones(3, 2, dtype=L.float64))", "float64", 0, 1),
    ("L.randn_like(L.ones(3, 2))", "float32", -10, 10),
    ("L.randint_like(L.ones(3, 2), 7)", "float32", 0, 6),
])
def test_random_factories(device, expr, dtype, lo, hi):
    p, t = on_both(expr, device)
    assert tuple(p.shape) == tuple(t.shape) and p.dtype.name == tname(t.dtype) == dtype
    a = p.cpu().numpy()
    assert a.min() >= lo and a.max() <= hi
    if "randint" in expr:
        assert np.all(a == np.round(a))
        assert len(np.unique(a)) > 1


def test_random_distribution(device):
    u = pg.rand(20000, device=device).cpu().numpy().astype(np.float64)
    n = pg.randn(20000, device=device).cpu().numpy().astype(np.float64)
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    assert abs(n.mean()) < 0.03 and abs(n.std() - 1) < 0.03
    r = pg.randint(0, 4, (20000,), device=device).cpu().numpy()
    assert set(np.unique(r)) == {0, 1, 2, 3}


@pytest.mark.parametrize("draw", [
    lambda d: pg.rand(5, device=d), lambda d: pg.randn(2, 3, device=d),
    lambda d: pg.randint(0, 1000, (6,), device=d), lambda d: pg.randperm(10, device=d),
])
def test_manual_seed_reproducible(device, draw):
    pg.manual_seed(123)
    a = draw(device).tolist()
    b = draw(device).tolist()
    pg.manual_seed(123)
    assert draw(device).tolist() == a
    assert draw(device).tolist() == b
    assert a != b                       # the stream moves on
    pg.manual_seed(124)
    assert draw(device).tolist() != a
    assert pg.initial_seed() == 124


def test_seed_reseeds_every_device(device, monkeypatch):
    """pg.seed() draws one seed and gives it to every device's default generator (the device's
    own generator on cuda, a recorded stand-in on the CPU alone), as torch.seed."""
    from paragrad import random as pg_random
    seen = []

    class StandIn:
        def manual_seed(self, s):
            seen.append(s)
    if device != "cpu":
        pg_random.default_generator(device)             # (created now, so seed() finds it)
    else:
        monkeypatch.setitem(pg_random._defaults, "elsewhere:0", StandIn())
    s = pg.seed()
    assert pg.initial_seed() == s
    if device != "cpu":
        assert pg_random.default_generator(device).initial_seed() == s
    else:
        assert seen == [s]
    pg.manual_seed(0)


def test_generator_objects(device):
    g = pg.Generator(device=device)
    assert g.manual_seed(7) is g and g.initial_seed() == 7
    a = pg.rand(4, generator=g, device=device).tolist()
    pg.rand(4, device=device)           # the default generator doesn't disturb g
    b = pg.randn(4, generator=g, device=device).tolist()
    g2 = pg.Generator(device=device).manual_seed(7)
    assert pg.rand(4, generator=g2, device=device).tolist() == a
    assert pg.randn(4, generator=g2, device=device).tolist() == b
    state = g.get_state()
    c = pg.randint(0, 100, (5,), generator=g, device=device).tolist()
    g.set_state(state)
    assert pg.randint(0, 100, (5,), generator=g, device=device).tolist() == c
    s = pg.get_rng_state()
    d = pg.rand(3).tolist()
    pg.set_rng_state(s)
    assert pg.rand(3).tolist() == d


# ---- properties ----------------------------------------------------------------------------------
def test_properties(device):
    p = pg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    t = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert isinstance(p.shape, pg.Size) and isinstance(p.shape, tuple)
    assert p.shape == (2, 3) == t.shape and p.size() == (2, 3)
    assert p.ndim == p.dim() == t.ndim == 2
    assert p.numel() == t.numel() == 6 and pg.numel(p) == 6
    assert p.size(1) == p.size(-1) == t.size(1) == 3
    assert p.dtype is pg.float32 and p.device == pg.device(device) and p.device.type == device.split(":")[0]
    assert p.requires_grad is False and p.grad is None and p.grad_fn is None and p.is_leaf
    assert p.is_floating_point() and not pg.tensor([1]).is_floating_point()
    assert p.element_size() == t.element_size() == 4
    check_raises(lambda L: {pg: p, torch: t}[L].size(2), match="Dimension out of range", error=IndexError)


def test_size_is_torch_size_like():
    s, ts = pg.ones(2, 3, 4).shape, torch.ones(2, 3, 4).shape
    for f in (lambda s: s[1:], lambda s: s + (5,), lambda s: (5,) + s, lambda s: s * 2, lambda s: s[::-1]):
        assert type(f(s)) is pg.Size and f(s) == f(ts) and type(f(ts)) is torch.Size
    assert s[0] == 2 and type(s[0]) is int
    assert s.numel() == ts.numel() == 24
    assert repr(s) == repr(ts).replace("torch", "paragrad")
    assert pg.Size([2, 3]) == (2, 3)


# ---- methods -------------------------------------------------------------------------------------
def test_numpy(device):
    if device != "cpu":
        with pytest.raises(TypeError, match="cpu"):
            pg.ones(2, device=device).numpy()
        return
    x = pg.tensor([1.0, 2.0])
    a = x.numpy()
    assert a.dtype == np.float32
    a[0] = 9                            # shares memory, as torch's
    assert x.tolist() == [9.0, 2.0]
    check_raises(lambda L: L.ones(2, requires_grad=True).numpy(),
                 match=r"(?i)can't call numpy\(\) on (a )?Tensor that requires grad")
    assert pg.ones(2, requires_grad=True).detach().numpy().tolist() == [1.0, 1.0]


@pytest.mark.parametrize("expr", [
    "L.tensor([2.5]).item()", "L.tensor([[3]]).item()", "L.tensor(True).item()",
    "type(L.tensor(3).item()).__name__", "type(L.tensor(3.0).item()).__name__",
    "type(L.tensor(False).item()).__name__",
    "L.tensor([[1, 2], [3, 4]]).tolist()", "L.tensor(2.5).tolist()", "L.tensor([True]).tolist()",
    "L.tensor([[1.5, 2.5]], dtype=L.float64).tolist()",
    "len(L.ones(3, 2))", "[r.tolist() for r in L.tensor([[1, 2], [3, 4]])]",
    "bool(L.tensor([5.0]))", "bool(L.tensor([0]))", "bool(L.tensor([[True]]))",
    "float(L.tensor([3.7]))", "int(L.tensor([3.7]))", "int(L.tensor(-3.7))",
    "[0, 1, 2, 3][L.tensor(2)]", "L.ones(2, 3).stride()", "L.ones(2, 3).t().is_contiguous()",
    "L.tensor([1.0]).type()", "L.tensor([1]).type()", "L.tensor([True]).type()",
    "L.tensor([1.0], dtype=L.float64).type()",
])
def test_python_conversions(expr):
    p, t = on_both(expr)
    if isinstance(t, str):
        t = t.replace("torch.", "paragrad.")
    assert p == t


@pytest.mark.parametrize("expr, err, match", [
    ("L.tensor([1.0, 2.0]).item()", RuntimeError, "a Tensor with 2 elements cannot be converted to Scalar"),
    ("L.tensor([]).item()", RuntimeError, "a Tensor with 0 elements cannot be converted to Scalar"),
    ("bool(L.tensor([1.0, 2.0]))", RuntimeError, "Boolean value of Tensor with more than one value is ambiguous"),
    ("bool(L.tensor([]))", RuntimeError, "Boolean value of Tensor with no values is ambiguous"),
    ("float(L.tensor([3, 4]))", ValueError, "only one element tensors"),
    ("len(L.tensor(5.0))", TypeError, "len\\(\\) of a 0-d tensor"),
    ("iter(L.tensor(5.0))", TypeError, "iteration over a 0-d tensor"),
    ("[1, 2][L.tensor(1.0)]", TypeError, "index"),
])
def test_python_conversion_errors(expr, err, match):
    check_raises(lambda L: eval(expr, {"L": L}), match=match, error=err)


@pytest.mark.parametrize("expr", [
    "x.float()", "x.double()", "x.half()", "x.long()", "x.int()", "x.bool()", "x.short()", "x.byte()",
    "x.to(L.int32)", "x.to('cpu')", "x.to(L.ones(1, dtype=L.float64))", "x.to('cpu', L.float16)",
    "x.to(dtype=L.int8)", "x.to(device='cpu', dtype=L.float64)", "x.type(L.int32)",
    "x.clone()", "x.contiguous()", "x.t().contiguous()", "x.detach()", "x.float().requires_grad_()",
    "x.long().float()", "x.new_zeros(3)", "x.new_ones((2, 1))", "x.new_full((2,), 3)",
    "x.new_tensor([1, 2])", "x.long().new_tensor([1.5, 2])", "x.new_empty(2).shape",
])
def test_conversion_methods(device, expr):
    xs = [[1.5, -2.5, 0.0], [3.25, 100.0, -0.5]]
    p = eval(expr, {"L": pg, "x": pg.tensor(xs, device=device)})
    t = eval(expr, {"L": torch, "x": torch.tensor(xs)})
    if isinstance(t, torch.Tensor):
        same(p.to("cpu") if device != "cpu" and "'cpu'" not in expr else p, t)
    else:
        assert p == t


def test_to_returns_self_when_nothing_changes(device):
    x = pg.ones(2, device=device)
    assert x.to(pg.float32) is x and x.to(device) is x and x.float() is x and x.contiguous() is x
    assert x.to(pg.float32, copy=True) is not x
    t = torch.ones(2)
    assert t.to(torch.float32) is t and t.float() is t and t.to(torch.float32, copy=True) is not t


def test_conversions_carry_gradients(device):
    p = pg.tensor([1.5, -2.5], requires_grad=True, device=device)
    t = torch.tensor([1.5, -2.5], requires_grad=True)
    for x in (p, t):
        y = x.double() * 3
        assert y.requires_grad and y.dtype == (pg.float64 if x is p else torch.float64)
        (y.sum() + (x.clone() * x.clone()).sum() + x.half().float().sum()).backward()
        assert not x.long().requires_grad       # integer results leave the graph
    same(p.grad, t.grad)


def test_clone_is_a_copy(device):
    x = pg.tensor([1.0, 2.0], device=device)
    y = x.clone()
    y.add_(1)
    assert x.tolist() == [1.0, 2.0] and y.tolist() == [2.0, 3.0]


def test_requires_grad_methods(device):
    for lib in (pg, torch):
        x = lib.ones(2, device=device) if lib is pg else lib.ones(2)
        assert x.requires_grad_() is x and x.requires_grad
        assert x.requires_grad_(False) is x and not x.requires_grad
        x.requires_grad = True
        assert x.requires_grad
        d = x.detach()
        assert not d.requires_grad and d.is_leaf


def test_data_attribute(device):
    x = pg.tensor([1.0, 2.0], requires_grad=True, device=device)
    d = x.data
    assert not d.requires_grad
    d.mul_(2)                           # shares storage: an in-place update outside autograd
    assert x.detach().tolist() == [2.0, 4.0] and x.requires_grad


# ---- repr ----------------------------------------------------------------------------------------
REPRS = [
    "L.tensor([1., 2., 3.])", "L.tensor([1, 2])", "L.tensor([True, False])", "L.tensor(3.5)",
    "L.tensor(3)", "L.tensor(True)", "L.tensor([1.5], dtype=L.float64)",
    "L.tensor(2.5, dtype=L.float64)", "L.tensor([1., 2.], requires_grad=True)",
    "L.tensor([0.1, 2.0])", "L.tensor([[1, 2], [3, 4]])", "L.tensor([-1., 2.])",
    "L.tensor([1, 2], dtype=L.int32)", "L.tensor([1, 2], dtype=L.int8)",
    "L.tensor([1.5, 2.], dtype=L.float16)", "L.zeros(3, dtype=L.uint8)", "L.ones(2, 2, dtype=L.bool)",
    "L.tensor([])", "L.zeros(0, 3)", "L.tensor([], dtype=L.int64)", "L.tensor([], dtype=L.bool)",
    "L.tensor([[]])", "L.tensor([1e10, 1.])", "L.tensor([1e-5, 1.])", "L.tensor([1e-5, 0.])",
    "L.tensor([1., float('inf'), float('nan')])", "L.tensor([0.5, float('-inf')])",
    "L.tensor([1., 2000.])", "L.tensor([0.001, 1000.])", "L.tensor([0., 0.])", "L.tensor(-0.)",
    "L.tensor([1e8, 1.])", "L.tensor([1.5e8, 1.])", "L.tensor([123456789., 1.])",
    "L.tensor([-1, 10, -100])", "L.tensor([0.3333333], dtype=L.float64)",
    "L.arange(2000)", "L.arange(2000.)", "L.arange(100).reshape(4, 25)",
    "L.arange(30.).reshape(2, 15) / 7", "L.ones(2, 3, 4)", "L.arange(12.).reshape(2, 2, 3)",
    "L.arange(1200.).reshape(2, 600)", "L.arange(4000.).reshape(10, 20, 20) / 3",
    "L.tensor([[0.1234, -5.25, 100.0], [1., 2., 3.]])",
    "L.tensor([0.1] * 30, dtype=L.float64, requires_grad=True)",
]


@pytest.mark.parametrize("expr", REPRS)
def test_repr_matches_torch(expr):
    p, t = on_both(expr)
    assert repr(p) == repr(t).replace("torch.", "paragrad.")
    assert str(p) == repr(p)


def test_repr_of_random_values_matches_torch():
    t = torch.randn(7, 9) * torch.tensor(10.0) ** torch.randint(-3, 3, (7, 9))
    assert repr(pg.tensor(t.numpy())) == repr(t)


def test_repr_grad_fn_suffix(device):
    x = pg.tensor([1.0, 2.0], requires_grad=True, device=device)
    r = repr(x * 2)
    assert r.startswith("tensor([2., 4.]") and r.endswith(">)")
    name = r.split("grad_fn=<")[1][:-2]
    assert name == (x * 2).grad_fn.name() and name.startswith("Mul") and "Backward" in name
    assert "requires_grad" not in r
    if device != "cpu":
        assert f"device='{pg.device(device)}'" in repr(x)


# ---- dtypes and promotion ------------------------------------------------------------------------
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


@pytest.mark.parametrize("a", DTYPES + ["bfloat16"])
def test_promote_types(a):
    for b in DTYPES + ["bfloat16"]:
        got = pg.promote_types(getattr(pg, a), getattr(pg, b))
        assert got.name == tname(torch.promote_types(getattr(torch, a), getattr(torch, b))), (a, b)


def _make(lib, dtype, kind, device="cpu"):
    d = getattr(lib, dtype)
    shape = (2,) if kind == "dim" else ()
    return lib.ones(shape, dtype=d, device=device) if lib is pg else lib.ones(shape, dtype=d)


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("kinds", [("dim", "dim"), ("dim", "0d"), ("0d", "dim"), ("0d", "0d")])
def test_result_type_tensors(device, a, kinds):
    for b in DTYPES:
        pa, pb = _make(pg, a, kinds[0], device), _make(pg, b, kinds[1], device)
        ta, tb = _make(torch, a, kinds[0]), _make(torch, b, kinds[1])
        want = tname(torch.result_type(ta, tb))
        assert pg.result_type(pa, pb).name == want, (a, b, kinds)
        assert (pa * pb).dtype.name == tname((ta * tb).dtype) == want, (a, b, kinds)


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("scalar", [True, 2, 2.5])
def test_result_type_scalars(device, a, scalar):
    for kind in ("dim", "0d"):
        p, t = _make(pg, a, kind, device), _make(torch, a, kind)
        want = tname(torch.result_type(t, scalar))
        assert pg.result_type(p, scalar).name == want
        assert pg.result_type(scalar, p).name == tname(torch.result_type(scalar, t))
        assert (p * scalar).dtype.name == (scalar * p).dtype.name == want


def test_dtype_objects():
    assert pg.float is pg.float32 and pg.double is pg.float64 and pg.half is pg.float16
    assert pg.long is pg.int64 and pg.int is pg.int32 and pg.short is pg.int16
    assert repr(pg.float32) == "paragrad.float32" and str(pg.int64) == "paragrad.int64"
    for name in DTYPES:
        pd, td = getattr(pg, name), getattr(torch, name)
        assert pd.is_floating_point == td.is_floating_point and pd.itemsize == td.itemsize
        assert pd.is_signed == td.is_signed
    assert pg.get_default_dtype() is pg.float32


def test_set_default_dtype():
    try:
        pg.set_default_dtype(pg.float64)
        assert pg.tensor([1.5]).dtype is pg.float64 and pg.zeros(2).dtype is pg.float64
        assert pg.arange(0, 1, 0.5).dtype is pg.float64 and pg.tensor([1]).dtype is pg.int64
        assert repr(pg.tensor([1.5])) == "tensor([1.5000])"
        assert repr(pg.tensor([1.5], dtype=pg.float32)) == "tensor([1.5000], dtype=paragrad.float32)"
    finally:
        pg.set_default_dtype(pg.float32)
    check_raises(lambda L: L.set_default_dtype(L.int64), error=TypeError)


@pytest.mark.parametrize("name", ["float16", "float32", "float64", "bfloat16"])
def test_finfo(name):
    p, t = pg.finfo(getattr(pg, name)), torch.finfo(getattr(torch, name))
    for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(p, k) == getattr(t, k), k
    assert pg.finfo().eps == torch.finfo().eps


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(name):
    p, t = pg.iinfo(getattr(pg, name)), torch.iinfo(getattr(torch, name))
    assert (p.bits, p.min, p.max, p.dtype) == (t.bits, t.min, t.max, t.dtype)


# ---- devices -------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, kind, index, text", [
    ("cpu", "cpu", None, "cpu"), ("cuda:1", "cuda", 1, "cuda:1"), ("cuda:0", "cuda", 0, "cuda:0"),
])
def test_device_parsing(spec, kind, index, text):
    p, t = pg.device(spec), torch.device(spec)
    assert (p.type, p.index, str(p)) == (t.type, t.index, str(t)) == (kind, index, text)
    assert repr(p) == repr(t)
    assert p == pg.device(spec) and hash(p) == hash(pg.device(spec)) and p != pg.device("cuda:2")
    assert pg.device(p) == p
    assert pg.device("cuda", 1) == pg.device("cuda:1")


@pytest.mark.parametrize("spec", ["gpu", "cuda:x", "cuda:-1", "cuda:1:2", "", "CPU", "cuda:"])
def test_device_invalid(spec):
    check_raises(lambda L: L.device(spec), match="device", error=RuntimeError)


def test_cuda_backend_missing_says_how_to_install():
    try:
        backend_for("cuda")
    except RuntimeError:
        pass
    else:
        pytest.skip("the CUDA backend is installed here")
    with pytest.raises(RuntimeError, match=r'pip install "paragrad\[cuda\]"'):
        pg.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match=r'pip install "paragrad\[cuda\]"'):
        pg.ones(2).to("cuda")


# ---- errors name the op --------------------------------------------------------------------------
@pytest.mark.parametrize("expr, err, op", [
    ("L.zeros(-1)", RuntimeError, "zeros"), ("L.zeros(2, -3)", RuntimeError, "zeros"),
    ("L.ones((2, -1))", RuntimeError, "ones"), ("L.empty(-2)", RuntimeError, "empty"),
    ("L.full((-1,), 1)", RuntimeError, "full"), ("L.rand(-1)", RuntimeError, "rand"),
    ("L.randn(2, -1)", RuntimeError, "randn"), ("L.randint(0, 10, (-1,))", RuntimeError, "randint"),
    ("L.eye(-1)", RuntimeError, "eye"), ("L.linspace(0, 1, -1)", RuntimeError, "linspace"),
    ("L.ones(2.5)", TypeError, "ones"), ("L.zeros('a')", TypeError, "zeros"),
    ("L.full(3, 1.0)", TypeError, "full"), ("L.full((2,), 'a')", TypeError, "full"),
    ("L.arange('a')", TypeError, "arange"), ("L.arange(0, 10, 0)", RuntimeError, "arange"),
    ("L.arange(0, 10, -1)", RuntimeError, "arange"), ("L.randint(5, 2, (3,))", RuntimeError, "randint"),
    ("L.zeros(3, dtype=L.int64, requires_grad=True)", RuntimeError, "requires_grad"),
    ("L.arange(3, requires_grad=True)", RuntimeError, "requires_grad"),
    ("L.exp([1.0, 2.0])", TypeError, "exp"), ("L.add('a', L.ones(2))", TypeError, "add"),
    ("L.ones(2) + 'a'", TypeError, "add"), ("L.matmul(L.ones(2), 3)", TypeError, "matmul"),
    ("L.cat([1, 2])", TypeError, "cat"), ("L.stack([L.ones(2), 1])", TypeError, "stack"),
    ("L.sum(3)", TypeError, "sum"), ("L.reshape([1, 2], (2,))", TypeError, "reshape"),
    ("L.mul(L.ones(2), None)", TypeError, "mul"), ("L.tanh(None)", TypeError, "tanh"),
    ("L.transpose(3, 0, 1)", TypeError, "transpose"), ("L.softmax([1.0], 0)", TypeError, "softmax"),
    ("L.zeros_like([1.0])", TypeError, "zeros_like"),
])
def test_errors_name_the_op(expr, err, op):
    check_raises(lambda L: eval(expr, {"L": L}), match=op, error=err)


@pytest.mark.parametrize("expr, op", [
    ("L.zeros(2, dtype='float33')", "zeros"), ("L.ones(2, dtype='int')", "ones"),
    ("L.tensor([1], dtype='float33')", "tensor"), ("L.full((2,), 1, dtype=3)", "full"),
    ("L.arange(3, dtype='x')", "arange"), ("L.rand(2, dtype='half_')", "rand"),
    ("L.ones_like(L.ones(1), dtype='f')", "ones_like"), ("L.ones(2).to('float33')", "to"),
])
def test_bad_dtype_names_raise(expr, op):
    check_raises(lambda L: eval(expr, {"L": L}), match=op)


# ---- copy and pickle -----------------------------------------------------------------------------
def test_deepcopy_and_pickle(device):
    import copy
    import pickle
    x = pg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True, device=device)
    (x * 2).sum().backward()            # leaves an AccumulateGrad behind: must not be copied
    for y in (copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
        assert y is not x and y.requires_grad and y.is_leaf and y.device == x.device
        same(y.detach(), torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
        y.detach().add_(1)              # its own buffer
        assert x.detach().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert copy.deepcopy(x).grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]   # deepcopy keeps .grad, as torch
    leaf = {pg: x, torch: torch.ones(2, requires_grad=True)}
    check_raises(lambda L: copy.deepcopy(leaf[L] * 2), match="deepcopy")     # non-leaves refuse, as in torch
    nc = pickle.loads(pickle.dumps(pg.arange(6, device=device).reshape(2, 3).t()))
    assert nc.tolist() == [[0, 3], [1, 4], [2, 5]] and nc.dtype is pg.int64


def test_random_fills_and_data_ptr():
    """exponential_, geometric_ and random_ draw from the right distributions (means and
    supports), in place; data_ptr is the buffer's address (shared by a view of it)."""
    pg.manual_seed(0)
    e = pg.empty(20000).exponential_(2.0)
    assert abs(e.mean().item() - 0.5) < 0.02 and e.min().item() >= 0
    g = pg.empty(20000).geometric_(0.25)
    assert abs(g.mean().item() - 4.0) < 0.15 and g.min().item() == 1.0
    r = pg.empty(20000, dtype=pg.int64).random_(3, 7)
    assert sorted(set(r.tolist())) == [3, 4, 5, 6]
    assert pg.empty(100).random_(5).max().item() < 5
    x = pg.zeros(4, 3)
    assert x.data_ptr() == x[0].data_ptr() and x.data_ptr() != pg.zeros(4, 3).data_ptr()


def test_inplace_ops_keep_dtype_and_shape_as_torch():
    """Method-style in-place ops (pow_, clamp_, ...) cast their result to the tensor's dtype,
    with or without a graph, and refuse results of another shape or an uncastable kind."""
    for lib in (pg, torch):
        x = lib.ones(3, requires_grad=True) * 1.0
        x.pow_(lib.tensor([2.0, 2.0, 2.0], dtype=lib.float64))
        assert str(x.dtype).endswith("float32")
        y = lib.ones(3)
        y.pow_(lib.tensor([2.0, 2.0, 2.0], dtype=lib.float64))
        assert str(y.dtype).endswith("float32")
    check_raises(lambda L: L.ones(3, dtype=L.int64).pow_(L.tensor([0.5, 0.5, 0.5])), match="can't be cast")
    check_raises(lambda L: L.ones(3).pow_(L.ones(2, 3)), match="doesn't match the broadcast shape")


@pytest.mark.parametrize("opts", [dict(sci_mode=False), dict(sci_mode=True), dict(precision=2), dict(profile="short"),
                                  dict(threshold=5, edgeitems=1), dict(linewidth=20), dict(profile="full"),
                                  dict(profile="short", precision=6)])
def test_set_printoptions_matches_torch(opts):
    values = [[1e-6, 1.0, 12345678.0], [1.5, 2.0, 3.25], list(range(12)), [0.1234567, -2.5, 7.0]]
    try:
        for lib in (torch, pg):
            lib.set_printoptions(**opts)
        for v in values:
            assert repr(pg.tensor(v)) == repr(torch.tensor(v)), (opts, v)
        assert repr(pg.arange(2000.0)) == repr(torch.arange(2000.0))
    finally:
        for lib in (torch, pg):
            lib.set_printoptions(profile="default")
    assert repr(pg.tensor([1e-6, 1.0])) == repr(torch.tensor([1e-6, 1.0]))       # defaults are back
    with pytest.raises(ValueError, match="profile must be one of"):
        pg.set_printoptions(profile="long")


def test_format_spec_formats_a_0d_tensor_as_torch():
    for make in (lambda m: m.tensor(1.5), lambda m: m.tensor(3), lambda m: m.tensor(-0.25, dtype=m.float64)):
        for spec in ("", "+.2f", ">8", ".3e"):
            assert format(make(pg), spec) == format(make(torch), spec)
    check_raises(lambda L: format(L.tensor([1.0, 2.0]), ".2f"), error=TypeError)     # only 0-d take a spec
    assert format(pg.tensor([1.0, 2.0])) == str(pg.tensor([1.0, 2.0]))


def test_device_kind_flags_as_torch(device):
    x = pg.zeros(2, device=device)
    t = torch.zeros(2)
    assert x.is_cuda == (pg.device(device).type == "cuda") and x.is_xpu is False is t.is_xpu
