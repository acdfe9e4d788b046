"""Special functions (paragrad.ops.special and the pg.special namespace) against PyTorch on wide
argument ranges, against high-precision reference values (mpmath, 60 digits) where PyTorch
itself is less accurate, at poles / infinities / nan, in every dtype, with gradients (analytic
nodes, checked against torch and float64 finite differences, double backward too) and the
in-place Tensor methods."""
import math

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op, fd_check, lib

INF, NAN = math.inf, math.nan


def _signed_log(rng, n, lo, hi):
    """n values with magnitudes log-uniform in [10^lo, 10^hi] and random signs."""
    return rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(lo, hi, n)


def _args(kind, n=48, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "real":          # everything from 1e-8 to 1e8, both signs, and the region of poles
        return np.concatenate([_signed_log(rng, n, -8, 8), rng.uniform(-10, 10, n)])
    if kind == "poly":          # torch's zeta sums |x| terms for negative x: keep those small
        return np.concatenate([10.0 ** rng.uniform(-8, 8, n), -10.0 ** rng.uniform(-8, 3, n),
                               rng.uniform(-10, 10, n)])
    if kind == "pos":
        return np.concatenate([10.0 ** rng.uniform(-8, 8, n), rng.uniform(0, 10, n)])
    if kind == "unit":          # erfinv: (-1, 1) with both tails and tiny values
        tails = 1 - 10.0 ** rng.uniform(-15, -1, n)
        return np.concatenate([rng.uniform(-1, 1, n), tails, -tails, _signed_log(rng, n, -300, -1)])
    if kind == "prob":          # ndtri: (0, 1) with both tails
        return np.concatenate([rng.uniform(0, 1, n), 10.0 ** rng.uniform(-300, -1, n),
                               1 - 10.0 ** rng.uniform(-15, -1, n)])
    if kind == "bessel":        # i0/i1 stay finite below ~710
        return np.concatenate([_signed_log(rng, n, -8, 2.8), rng.uniform(-10, 10, n)])
    if kind == "moderate":
        return rng.uniform(-30, 30, 2 * n)
    raise ValueError(kind)


# name: (function for both libraries, argument kind, rtol, atol) against torch in float64
FLOAT64 = {
    "lgamma": (lambda x: x.lgamma(), "real", 1e-12, 1e-13),
    "digamma": (lambda x: lib(x).digamma(x), "real", 1e-12, 1e-12),
    # torch's trigamma sums a truncated series and rounds pi * x: ~1e-8 relative (ours is
    # checked against reference values below)
    "polygamma1": (lambda x: x.polygamma(1), "real", 1e-7, 0),
    "polygamma2": (lambda x: lib(x).polygamma(2, x), "poly", 1e-12, 1e-12),
    "polygamma3": (lambda x: lib(x).polygamma(3, x), "poly", 1e-12, 1e-12),
    "polygamma4": (lambda x: lib(x).special.polygamma(4, x), "poly", 1e-12, 1e-12),
    "mvlgamma": (lambda x: lib(x).mvlgamma(x.abs() + 1.6, 4), "pos", 1e-12, 1e-12),
    "multigammaln": (lambda x: lib(x).special.multigammaln(x.abs() + 1, 2), "pos", 1e-12, 1e-12),
    "gammaln": (lambda x: lib(x).special.gammaln(x), "real", 1e-12, 1e-13),
    "psi": (lambda x: lib(x).special.psi(x), "real", 1e-12, 1e-12),
    "erfinv": (lambda x: x.erfinv(), "unit", 1e-13, 0),
    "i0": (lambda x: lib(x).i0(x), "bessel", 1e-13, 0),
    "i0e": (lambda x: lib(x).special.i0e(x), "real", 1e-13, 0),
    "i1": (lambda x: lib(x).special.i1(x), "bessel", 1e-13, 0),
    "i1e": (lambda x: lib(x).special.i1e(x), "real", 1e-13, 0),
    "erfc": (lambda x: lib(x).special.erfc(x), "moderate", 1e-13, 0),
    "erfcx": (lambda x: lib(x).special.erfcx(x), "real", 1e-13, 0),
    # torch's ndtr loses relative accuracy below about -5: compared absolutely here, its tail
    # against reference values below
    "ndtr": (lambda x: lib(x).special.ndtr(x), "real", 1e-13, 1e-15),
    "ndtri": (lambda x: lib(x).special.ndtri(x), "prob", 1e-13, 0),
    "log_ndtr": (lambda x: lib(x).special.log_ndtr(x), "real", 1e-12, 0),
    "entr": (lambda x: lib(x).special.entr(x), "real", 1e-14, 0),
    "sinc": (lambda x: lib(x).special.sinc(x), "moderate", 1e-12, 1e-15),
    "xlog1py": (lambda x: lib(x).special.xlog1py(x, x.abs()), "real", 1e-14, 0),
    "zeta": (lambda x: lib(x).special.zeta(x.abs() + 1.5, x.abs() + 0.25), "pos", 1e-12, 0),
    "zeta-negq": (lambda x: lib(x).special.zeta(3.0, -(x.abs() % 1000) - 0.01), "pos", 1e-11, 1e-12),
}


@pytest.mark.parametrize("name", FLOAT64)
def test_float64_matches_torch(name, device):
    fn, kind, rtol, atol = FLOAT64[name]
    check_op(fn, None, inputs=[_args(kind)], dtype="float64", device=device, rtol=rtol, atol=atol,
             grad=False)


# (function name, x, value) to 60 digits, rounded to float64
REFERENCE = [
    ("lgamma", 1.000000001, -5.772157118381039e-10), ("lgamma", 1.99999997, -1.2683529779526876e-08),
    ("lgamma", 1.4616321449683622, -0.12148629053584961), ("lgamma", 1e-300, 690.7755278982137),
    ("lgamma", -2.5, -0.056243716497674054), ("lgamma", -100.3, -363.7662061826763),
    ("lgamma", 1e300, 6.897755278982137e+302),
    ("digamma", 1.4616321459683623, 9.676722326577634e-10), ("digamma", 1e-05, -100000.57719921567),
    ("digamma", -3.7, -0.8450768588704194), ("digamma", 1e15, 34.538776394910684),
    ("polygamma1", 0.5, 4.934802200544679), ("polygamma1", -2.5, 9.539246644989124),
    ("polygamma1", 1e-05, 10000000001.644909), ("polygamma1", 1e8, 1.000000005e-08),
    ("polygamma2", 3.7, -0.09539530872855403), ("polygamma4", -0.3, 9731.83495623352),
    ("erfinv", 0.5, 0.4769362762044699), ("erfinv", -0.999, -2.3267537655135246),
    ("erfinv", 0.9999999999999999, 5.8635847487551676), ("erfinv", 1e-300, 8.86226925452758e-301),
    ("ndtri", 0.3, -0.5244005127080408), ("ndtri", 1e-300, -37.0470962993612),
    ("ndtri", 0.9999999999999999, 8.209536151601387),
    ("ndtr", -8.0, 6.220960574271784e-16), ("ndtr", -30.0, 4.906713927148187e-198),
    ("log_ndtr", -1e10, -5e+19), ("log_ndtr", -40.0, -804.6084420137538),
    ("log_ndtr", 10.0, -7.619853024160525e-24),
    ("erfc", 26.0, 5.663192408856143e-296), ("erfc", -3.0, 1.9999779095030015),
    ("erfc", 0.3, 0.6713732405408726),
    ("erfcx", -26.0, 7.657724931490568e+293), ("erfcx", 1e10, 5.641895835477563e-11),
    ("erfcx", 5.0, 0.11070463773306863),
    ("i0", 700.0, 1.5295933476718737e+302), ("i0", -3.3, 6.242630465183028),
    ("i0e", 1e5, 0.0012615678379767768), ("i1", -30.0, -768532038938.957),
    ("i1e", 0.1, 0.045298446808809324), ("i1e", -12.0, -0.11146429929018098),
]
ZETA_REFERENCE = [(1.5, 0.01, 1002.5924620202128), (3.0, -2.5, 0.0541020258208637),
                  (20.0, 591.0, 1.1696301153572809e-54), (1.00000001, 2.0, 100000000.18496276),
                  (4.0, -0.3, 127.7699817365281), (2.5, 1e6, 6.66667166666875e-10)]


def _special(name, lib=pg):
    if name.startswith("polygamma"):
        return lambda x: lib.polygamma(int(name[-1]), x)
    return getattr(lib.special, {"lgamma": "gammaln"}.get(name, name))


def test_reference_values(device):
    for name in dict.fromkeys(n for n, _, _ in REFERENCE):
        xs, want = zip(*[(x, v) for n, x, v in REFERENCE if n == name])
        got = _special(name)(pg.tensor(xs, dtype=pg.float64, device=device)).cpu().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=0, err_msg=name)
    s, q, want = (pg.tensor(v, dtype=pg.float64, device=device) for v in zip(*ZETA_REFERENCE))
    np.testing.assert_allclose(pg.special.zeta(s, q).cpu().numpy(), want.cpu().numpy(), rtol=1e-13)


EDGES = np.array([0.0, -0.0, -1.0, -2.0, -INF, INF, NAN, 1e-300, -1e-300, 5e-324, -2.5, 0.5, 1.0,
                  2.0, 3e305, -1e20, 1e17, 30.0, -30.0, 700.0])


@pytest.mark.parametrize("name", ["lgamma", "digamma", "polygamma2", "polygamma3", "erfinv", "i0",
                                  "i0e", "i1", "i1e", "erfc", "erfcx", "log_ndtr", "ndtri", "entr"])
def test_poles_infinities_and_nan_match_torch(name, device):
    x = {"erfinv": np.array([-1.0, 1.0, 0.0, -0.0, 1.5, -1.5, NAN, INF, 1 - 2 ** -53]),
         "ndtri": np.array([0.0, 1.0, 0.5, -1.0, 2.0, NAN, 5e-324, 2 ** -53])}.get(name, EDGES)
    if name.startswith("polygamma"):       # torch's zeta gives nan at +inf, the limit is 0
        x = x[x != INF]
    want = _special(name, torch)(torch.tensor(x)).numpy()
    got = _special(name)(pg.tensor(x, device=device)).cpu().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)
    assert (np.signbit(got) == np.signbit(want))[got == 0].all(), "signed zeros"


def test_where_paragrad_differs_from_torch(device):
    """Poles and limits that torch computes through a truncated or overflowing formula."""
    x = pg.tensor([-1.0, -2.0, -1e20, INF], dtype=pg.float64, device=device)
    # trigamma has a double pole at every non-positive integer (torch: large finite values)
    assert pg.polygamma(1, x[:3]).cpu().numpy().tolist() == [INF] * 3
    # polygamma(n, +inf) = 0 and zeta(s, +inf) = 0 (torch: nan for n >= 2)
    assert pg.polygamma(3, x[3:]).item() == 0.0
    assert pg.special.zeta(2.0, x[3:]).item() == 0.0


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_low_precision_dtypes_match_torch(dtype, device):
    rng = np.random.default_rng(1)
    x = rng.uniform(0.1, 5, (3, 8))
    tol = {"float32": (1e-6, 1e-6), "float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}[dtype]
    for fn in (lambda t: t.lgamma(), lambda t: t.digamma(), lambda t: lib(t).polygamma(2, t),
               lambda t: (t / 5.5).erfinv(), lambda t: t.i0(), lambda t: lib(t).special.i1e(t),
               lambda t: lib(t).special.ndtri(t / 5.5), lambda t: lib(t).special.log_ndtr(-t)):
        try:
            fn(torch.tensor(x[:1, :1]).to(getattr(torch, dtype)))
        except NotImplementedError:     # torch has no half-precision ndtri on the CPU
            continue
        check_op(fn, None, inputs=[x.astype(np.float32)] if dtype != "float16" else
                 [x.astype(np.float16)], dtype=dtype, device=device, atol=tol[0], rtol=tol[1],
                 grad=False)


def test_integer_inputs_promote(device):
    ints = np.array([1, 2, 5, 10], np.int64)
    for fn in (lambda t: t.lgamma(), lambda t: t.digamma(), lambda t: lib(t).polygamma(1, t),
               lambda t: t.i0(), lambda t: lib(t).mvlgamma(t, 1), lambda t: lib(t).special.entr(t),
               lambda t: lib(t).special.zeta(t + 1, 2), lambda t: lib(t).special.xlogy(t, t)):
        check_op(fn, None, inputs=[ints], device=device, grad=False)


GRADS = {
    "lgamma": (lambda x: x.lgamma(), -4, 6), "digamma": (lambda x: x.digamma(), -4, 6),
    "polygamma2": (lambda x: lib(x).polygamma(2, x), -4, 6),
    "mvlgamma": (lambda x: x.mvlgamma(3), 1.2, 6),
    "erfinv": (lambda x: x.erfinv(), -0.99, 0.99), "i0": (lambda x: x.i0(), -6, 6),
    "i0e": (lambda x: lib(x).special.i0e(x), -12, 12), "i1": (lambda x: lib(x).special.i1(x), -6, 6),
    "i1e": (lambda x: lib(x).special.i1e(x), -12, 12),
    "erfc": (lambda x: lib(x).special.erfc(x), -3, 3),
    "erfcx": (lambda x: lib(x).special.erfcx(x), -2, 3),
    "ndtr": (lambda x: lib(x).special.ndtr(x), -3, 3),
    "ndtri": (lambda x: lib(x).special.ndtri(x), 0.01, 0.99),
    "log_ndtr": (lambda x: lib(x).special.log_ndtr(x), -9, 4),
    "entr": (lambda x: lib(x).special.entr(x), 0.05, 3),
    "sinc": (lambda x: lib(x).special.sinc(x), -3, 3),
    "xlogy": (lambda x: lib(x).special.xlogy(x, x * x + 0.1), -2, 2),
    "xlog1py": (lambda x: lib(x).special.xlog1py(x * x, x), -0.9, 2),
    "zeta": (lambda x: lib(x).special.zeta(3.5, x), 0.2, 5),
    "logit": (lambda x: lib(x).special.logit(x, eps=1e-6), 0.01, 0.99),
}


@pytest.mark.parametrize("name", GRADS)
def test_gradients(name, device):
    fn, lo, hi = GRADS[name]
    check_op(fn, [(2, 5)], dtype="float64", device=device, low=lo, high=hi,
             rtol=1e-8 if name in ("digamma", "lgamma") else None)   # torch's trigamma: 5e-10
    check_op(fn, [(2, 5)], dtype="float32", device=device, low=lo, high=hi)
    fd_check(fn, [(1, 3)], device=device, low=lo, high=hi, rtol=1e-6)


def test_gradients_at_zero_and_double_backward(device):
    for fn in (lambda t: lib(t).special.i1(t), lambda t: lib(t).special.i1e(t),
               lambda t: lib(t).special.sinc(t), lambda t: lib(t).special.xlogy(t, 2.0),
               lambda t: lib(t).special.xlog1py(t, 2.0)):
        check_op(fn, None, inputs=[np.array([0.0, 0.5])], dtype="float64", device=device)
    a = np.array([0.3, 1.7, -2.4, 5.0])
    for name in ("lgamma", "digamma", "erfinv", "i0"):
        arr = a / 6 if name == "erfinv" else a
        x = pg.tensor(arr, dtype=pg.float64, device=device, requires_grad=True)
        tx = torch.tensor(arr, requires_grad=True)
        (g,) = pg.autograd.grad(getattr(x, name)().sum(), x, create_graph=True)
        (g2,) = pg.autograd.grad(g.sum(), x)
        (tg,) = torch.autograd.grad(getattr(tx, name)().sum(), tx, create_graph=True)
        (tg2,) = torch.autograd.grad(tg.sum(), tx)
        np.testing.assert_allclose(g2.cpu().numpy(), tg2.numpy(), rtol=1e-8, err_msg=name)


def test_zeta_arguments_and_gradient(device):
    s = pg.tensor([2.0, 3.5], dtype=pg.float64, device=device, requires_grad=True)
    q = pg.tensor([1.5, 0.7], dtype=pg.float64, device=device, requires_grad=True)
    out = pg.special.zeta(s, q)
    assert out.grad_fn is not None
    with pytest.raises(NotImplementedError, match="zeta"):      # torch: not implemented for input
        out.sum().backward()
    check_op(lambda x, y: lib(x).special.zeta(x.detach() + 1.5, y), [(2, 3), (2, 3)],
             dtype="float64", device=device, low=0.1, high=4)
    check_op(lambda y: lib(y).special.zeta(y.abs() + 1.1, 1.0), [(4,)], dtype="float64", device=device,
             grad=False)
    with pytest.raises(TypeError):
        pg.special.zeta(2.0, 3.0)


def test_inplace_methods(device):
    x = np.array([0.7, 1.5, 3.2])
    for name, args in [("lgamma_", ()), ("digamma_", ()), ("polygamma_", (2,)), ("mvlgamma_", (2,)),
                       ("erfinv_", ()), ("i0_", ())]:
        arr = x / 4 if name == "erfinv_" else x
        p = pg.tensor(arr, dtype=pg.float64, device=device)
        t = torch.tensor(arr)
        assert getattr(p, name)(*args) is p
        getattr(t, name)(*args)
        np.testing.assert_allclose(p.cpu().numpy(), t.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="can't be cast"):
        pg.tensor([1, 2], device=device).lgamma_()
    w = pg.tensor([1.5, 2.5], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place"):
        w.digamma_()
    y = w * 2
    y.lgamma_()
    y.sum().backward()
    tw = torch.tensor([1.5, 2.5], requires_grad=True)
    (tw * 2).lgamma_().sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-6)


def test_errors(device):
    x = pg.tensor([1.0, 2.0], device=device)
    with pytest.raises(RuntimeError, match="negative n"):
        pg.polygamma(-1, x)
    with pytest.raises(TypeError):
        pg.polygamma(1.5, x)
    with pytest.raises(RuntimeError, match="greater than or equal to 1"):
        pg.mvlgamma(x, 0)
    with pytest.raises(TypeError):
        pg.lgamma([1.0, 2.0])
    assert pg.polygamma(0, x).tolist() == pg.digamma(x).tolist()


def test_namespace_matches_torch_special(device):
    names = ["gammaln", "digamma", "psi", "polygamma", "multigammaln", "erf", "erfc", "erfcx",
             "erfinv", "expit", "logit", "exp2", "expm1", "log1p", "i0", "i0e", "i1", "i1e", "ndtr",
             "ndtri", "log_ndtr", "xlogy", "xlog1py", "entr", "sinc", "round", "softmax",
             "log_softmax", "logsumexp", "zeta"]
    assert all(hasattr(pg.special, n) and hasattr(torch.special, n) for n in names)
    assert pg.special.psi is pg.special.digamma
    S = lambda x: lib(x).special  # noqa: E731
    for fn in (lambda x: S(x).expit(x), lambda x: S(x).logit(x.sigmoid()), lambda x: S(x).exp2(x),
               lambda x: S(x).expm1(x), lambda x: S(x).log1p(x.abs()), lambda x: S(x).erf(x),
               lambda x: S(x).round(x * 10, decimals=1), lambda x: S(x).softmax(x, 1),
               lambda x: S(x).log_softmax(x, dim=0), lambda x: S(x).logsumexp(x, 1, keepdim=True),
               lambda x: S(x).softmax(x, 1, dtype=lib(x).float64),
               lambda x: S(x).xlogy(2.0, x.abs()), lambda x: S(x).xlogy(x, 3.0),
               lambda x: S(x).xlog1py(x, 0.5)):
        check_op(fn, [(3, 4)], device=device)
    z = np.array([0.0, 0.0, 1.0, 0.0])
    y = np.array([0.0, NAN, 2.0, -1.0])
    for fn in (lambda a, b: S(a).xlogy(a, b), lambda a, b: S(a).xlog1py(a, b)):
        check_op(fn, None, inputs=[z, y], dtype="float64", device=device, grad=False)


def test_float32_erf_is_accurate_from_tiny_to_saturated(device):
    """float32 erf (on the CPU a rational fit): relative accuracy near 0, where 1 - erfc would
    cancel (erf(1e-8) once came out 0), never above 1 in magnitude, and exactly +-1 far out."""
    x = np.concatenate([np.geomspace(1e-30, 1.0, 300), np.linspace(0.0, 6.0, 2001)]).astype(np.float32)
    x = np.concatenate([x, -x])
    got = pg.tensor(x, device=device).erf().cpu().numpy()
    want = torch.erf(torch.tensor(x, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=4e-7)
    tiny = np.abs(x) < 1e-3
    np.testing.assert_allclose(got[tiny], want[tiny], rtol=1e-6, atol=0)
    assert np.abs(got).max() == 1.0
    far = pg.tensor([4.0, 9.0, float("inf"), -4.0, -float("inf")], device=device).erf().cpu().numpy()
    assert far.tolist() == [1.0, 1.0, 1.0, -1.0, -1.0]
