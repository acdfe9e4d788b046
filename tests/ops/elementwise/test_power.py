"""pow(tensor, number) against PyTorch: the exponents torch computes without pow() (0, 1, 2, 3,
-1, -2, 0.5, -0.5, and 4 here) give torch's values bit for bit on special inputs (-0., inf, nan,
negative bases), its dtypes (int ** int stays int and wraps, int ** 0.5 is float), and its
first and second derivatives, including at 0."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op, fd_check

SPECIAL = [-0.0, 0.0, -1.0, 1.0, 0.25, 4.0, -3.0, np.inf, -np.inf, np.nan, 1e-3, 7.5]
FAST = [0, 1, 2, 3, 4, -1, -2, 0.5, -0.5, 3.0, -2.0, 0.0, 1.0]
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def _torch(a, dtype):
    t = torch.tensor(np.asarray(a, np.float64))
    return t.to(getattr(torch, dtype))


def _pg(a, dtype, device):
    return pg.tensor(np.asarray(a, np.float64), device=device).to(getattr(pg, dtype))


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().double().numpy()
    return t.detach().cpu().to(pg.float64).numpy()


def _same_bits(p, t, what):
    """Equal values, nan where torch has nan, and the sign of every zero and infinity (a nan's
    sign bit is whatever the hardware made)."""
    pa, ta = _np(p), _np(t)
    assert p.dtype.name == str(t.dtype).replace("torch.", ""), f"{what}: dtype {p.dtype} != {t.dtype}"
    np.testing.assert_array_equal(pa, ta, err_msg=what)
    num = ~np.isnan(ta)
    np.testing.assert_array_equal(np.signbit(pa[num]), np.signbit(ta[num]), err_msg=f"{what}: signs")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("e", FAST, ids=repr)
def test_special_values(device, dtype, e):
    if e == 4 and dtype in ("float32", "float64"):
        pytest.skip("torch calls pow() for 4 (compared within an ulp in test_values_random)")
    out, want = pg.pow(_pg(SPECIAL, dtype, device), e), torch.pow(_torch(SPECIAL, dtype), e)
    if e == -0.5 and device == "cuda" and dtype != "float16":     # (float16 calls pow())
        # CUDA's rsqrt (torch's CUDA kernel calls it too) is within 2 ulp, not correctly rounded
        ulp = {"float32": 2.0 ** -23, "float64": 2.0 ** -52, "bfloat16": 2.0 ** -7}[dtype]
        np.testing.assert_allclose(_np(out), _np(want), rtol=2 * ulp, atol=0, err_msg=f"{dtype} ** -0.5")
        return
    _same_bits(out, want, f"{dtype} ** {e!r}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("e", FAST + [2.5, -1.5, 7], ids=repr)
def test_values_random(device, dtype, e):
    # torch's sqrt (and its pow for 4) can sit an ulp from the correctly rounded result
    check_op(lambda x: x ** e, [(4, 33)], dtype=dtype, device=device, low=0.1, high=3,
             rtol=3e-7 if dtype == "float32" else 3e-16, atol=0, grad=False)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("e", [0, 1, 2, 3, 4, 5, 7, 63, True, False, 0.5, 2.0, -1.0, 3.0], ids=repr)
def test_integer_tensors(device, dtype, e):
    """int ** int stays int and wraps (torch's powi); a float exponent gives float32."""
    if dtype == "bool" and not isinstance(e, (bool, float)) and e > 1:
        e = 2        # (bool ** n is int64 0/1 for any n > 0)
    a = np.array([0, 1, 2, 3, -3, 100, -128, 127, 5, -7])
    t = torch.tensor(a).to(getattr(torch, dtype))
    p = pg.tensor(t.numpy(), device=device)
    out, want = pg.pow(p, e), torch.pow(t, e)
    assert out._data.dtype == out.dtype.to_numpy()       # the buffer holds the dtype it claims
    if want.dtype.is_floating_point:    # (torch's sqrt is an ulp off at times: sqrt(253.))
        assert out.dtype is pg.float32
        np.testing.assert_allclose(_np(out), _np(want), rtol=2e-7, atol=0)
    else:
        _same_bits(out, want, f"{dtype} ** {e!r}")


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32"])
def test_integer_exponent_out_of_range(device, dtype):
    p = pg.tensor(np.arange(3), device=device).to(getattr(pg, dtype))
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.pow(torch.arange(3).to(getattr(torch, dtype)), 1 << 40)
    with pytest.raises(RuntimeError, match="without overflow"):
        pg.pow(p, 1 << 40)


def test_integer_negative_exponent_still_raises(device):
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        pg.pow(pg.tensor([1, 2], device=device), -2)


@pytest.mark.parametrize("e", FAST + [2.5, -1.5], ids=repr)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients(device, e, dtype):
    low = 0.2 if e != int(e) else -2.0
    check_op(lambda x: x ** e, [(3, 5)], dtype=dtype, device=device, low=low, high=2.0)


@pytest.mark.parametrize("e", FAST + [2.5, -1.5], ids=repr)
def test_gradients_fd(device, e):
    low = 0.2 if e != int(e) else -2.0
    if e < 0 and e == int(e):
        low = 0.3        # (keep finite differences away from the pole at 0)
    fd_check(lambda x: x ** e, [(2, 3)], device=device, low=low, high=2.0)


def _grads(lib, x, e, order):
    """d^order/dx^order of sum(w * x ** e), each step against the previous gradient."""
    y = (x ** e * (x.detach() * 0 + 0.75)).sum()
    out = []
    for k in range(order):
        (y,) = lib.autograd.grad(y, x, create_graph=k + 1 < order)
        out.append(y)
        y = (y * (x.detach() * 0 + 1.25)).sum()
    return out


@pytest.mark.parametrize("e", FAST + [2.5, -1.5], ids=repr)
def test_second_order(device, e):
    a = np.array([0.5, 1.7, -1.2, 2.0, 0.3]) if e == int(e) else np.array([0.5, 1.7, 0.2, 2.0, 0.3])
    for dtype in ("float32", "float64"):
        t = _torch(a, dtype).requires_grad_(True)
        p = _pg(a, dtype, device).requires_grad_(True)
        order = 1 if e == 0 else 2      # (torch's gradient of x ** 0 is a constant: no graph)
        tg, pgs = _grads(torch, t, e, order), _grads(pg, p, e, order)
        for k, (pv, tv) in enumerate(zip(pgs, tg)):
            np.testing.assert_allclose(_np(pv), _np(tv), rtol=2e-6 if dtype == "float32" else 1e-14,
                                       err_msg=f"{dtype} order {k + 1} of x ** {e!r}")


@pytest.mark.parametrize("e", FAST + [2.5, -1.5], ids=repr)
def test_gradient_at_special_points(device, e):
    """At 0, -0., 1 and a negative base the gradient is torch's (inf for 0 ** 0.5, 0 for 0 ** 0)."""
    a = [0.0, -0.0, 1.0, -2.0, 0.5]
    t = _torch(a, "float32").requires_grad_(True)
    p = _pg(a, "float32", device).requires_grad_(True)
    (t ** e).backward(torch.tensor([1.0, -1.0, 2.0, 0.5, -3.0]))
    (p ** e).backward(pg.tensor([1.0, -1.0, 2.0, 0.5, -3.0], device=device))
    _same_bits(p.grad, t.grad, f"grad of x ** {e!r}")


def test_zero_exponent_gradient_ignores_inf_cotangent(device):
    # torch's gradient for exponent 0 is zeros, not grad * 0 (nan where grad is inf)
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    p = pg.tensor([1.0, 2.0], device=device, requires_grad=True)
    (t ** 0).backward(torch.tensor([np.inf, np.nan]))
    (p ** 0).backward(pg.tensor([np.inf, np.nan], device=device))
    _same_bits(p.grad, t.grad, "grad of x ** 0")


@pytest.mark.parametrize("e", [1, 1.0, True])
def test_exponent_one_is_a_new_tensor(device, e):
    x = pg.tensor([1.0, -2.0], device=device)
    y = x ** e
    y.add_(1)
    assert x.tolist() == [1.0, -2.0] and y.tolist() == [2.0, -1.0]


def test_special_exponents_skip_the_general_power(device, monkeypatch):
    """The special exponents cost a multiply or a sqrt, not NumPy's power (hundreds of times a
    multiply on the CPU): the backend's general pow is never asked for them, forward or backward."""
    x = pg.tensor(np.linspace(0.5, 2, 12).reshape(3, 4), device=device, requires_grad=True)
    b = x._backend
    asked = []
    real = type(b).binary

    def spy(self, op, a, c, out=None):
        asked.append(op)
        return real(self, op, a, c, out=out)
    monkeypatch.setattr(type(b), "binary", spy)
    for e in (0, 1, 2, 3, 4, -1, 0.5, 3.0, 2.0):     # (their derivatives' powers are special too)
        (x ** e).sum().backward()
    for e in (-2, -0.5):
        x ** e
    assert "pow" not in asked
    (x ** -0.5).sum().backward()      # d/dx x ** -0.5 needs x ** -1.5: the general power
    assert "pow" in asked
