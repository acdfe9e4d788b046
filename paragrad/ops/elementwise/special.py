"""Special functions: the gamma family (lgamma, digamma, polygamma, mvlgamma, Hurwitz zeta), the
inverse error function, modified Bessel functions, erfc/erfcx and the normal distribution's
ndtr / ndtri / log_ndtr, composed from elementwise Tensor ops so they run on every backend.

Accuracy: the values are computed in float64 whatever the input dtype (a float32 or half result
is the float64 value rounded once), by the classic methods: Lanczos + reflection for lgamma,
recurrence + asymptotic series for digamma, Euler-Maclaurin for the Hurwitz zeta (polygamma is
n! zeta(n + 1, x)), Cephes' Chebyshev expansions for the Bessel functions and its rational fits
for erfc, Newton steps on erf / log erfc for the inverses. Taylor series around the positive
zeros of lgamma and digamma keep the relative error small there too. Loops below run over a
fixed number of series terms or Newton steps, never over elements.

Gradients: each function records one node with its analytic derivative (lgamma' = digamma,
digamma' = polygamma(1), erfinv' = sqrt(pi)/2 exp(erfinv^2), i0' = i1, ...), written with these
same differentiable functions, so higher derivatives work too.
"""
from __future__ import annotations

import math
from fractions import Fraction

from ... import autograd
from ... import dtypes as dt
from ...autograd import Node, grad_mode, node_class, record, rename
from ...tensor import Tensor
from .._common import alias, as_int, check_tensor, floating, snapshot
from ..movement.views import grad_for
from .binary import where
from ..creation import arange, full_like
from ..movement.copies import stack
from ..movement.rearrangement import broadcast_tensors

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "i0"]

_INF, _NAN, _PI = math.inf, math.nan, math.pi


# ---- one node per function -------------------------------------------------------------------
class SpecialBackward(Node):
    """grad(g, x, y) from the saved input and output. Under create_graph the output is
    recomputed by the differentiable function, so higher derivatives are right."""

    def backward(self, g):
        x, y = self.saved
        if autograd.is_grad_enabled():
            y = self.fn(x)
        return self.grad(g, x, y)


# op -> torch's grad_fn class for the functions recorded by _unary (here and in
# error_function.py); torch computes ndtr as a product, hence its MulBackward1
_TORCH_NAMES = {
    "lgamma": "LgammaBackward0", "digamma": "DigammaBackward0", "polygamma": "PolygammaBackward0",
    "i0": "I0Backward0", "special_i0e": "SpecialI0EBackward0", "special_i1": "SpecialI1Backward0",
    "special_i1e": "SpecialI1EBackward0", "erfc": "ErfcBackward0", "erfcx": "SpecialErfcxBackward0",
    "ndtr": "MulBackward1", "log_ndtr": "SpecialLogNdtrBackward0", "erfinv": "ErfinvBackward0",
    "ndtri": "SpecialNdtriBackward0", "entr": "SpecialEntrBackward0",
}
_NODES = {op: node_class(SpecialBackward, name) for op, name in _TORCH_NAMES.items()}


def _unary(name, x, forward, grad, fn):
    """forward(x in float64) rounded to x's floating dtype, recorded as one node."""
    check_tensor(x, name)
    dtype = floating(x.dtype)
    # (the branches that where() drops overflow by design: the backends compute silently)
    with autograd.no_grad():
        out = forward(x.detach().to(dt.float64)).to(dtype)
    if x._requires_grad and grad_mode._enabled:
        node = _NODES[name]()
        node.grad, node.fn, node.saved = grad, fn, (snapshot(x), alias(out))
        record(node, (x,), out)
    return out


# ---- building blocks (float64 tensors in and out, no autograd) --------------------------------
def _horner(x, coeffs):
    """c0 x^n + c1 x^(n-1) + ... + cn (at least two coefficients)."""
    p = x * coeffs[0] + coeffs[1]
    for c in coeffs[2:]:
        p = p * x + c
    return p


def _chbevl(x, coeffs):
    """Cephes' chbevl: the Chebyshev series sum'(c_k T_k(x/2)), by Clenshaw's recurrence."""
    b0, b1 = full_like(x, coeffs[0]), full_like(x, 0.0)
    for c in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _bernoulli(n):
    """B_0 .. B_n as exact fractions (Akiyama-Tanigawa)."""
    out, a = [], [Fraction(0)] * (n + 1)
    for m in range(n + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    return out


_B = _bernoulli(26)


def _reduce_half(x):
    """x - round(x), in [-1/2, 1/2] and exact: sin(pi x) and tan(pi x) from it keep full
    accuracy for large |x| (pi * x would round first)."""
    return x - x.round()


# ---- lgamma ----------------------------------------------------------------------------------
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_EULER = 0.57721566490153286061
# lgamma(2 + z) = (1 - euler) z + sum_k>=2 (-1)^k (zeta(k) - 1) / k z^k, for |z| < 0.2
_ZETA_M1 = (0.6449340668482264, 0.2020569031595943, 0.08232323371113819, 0.03692775514336993,
            0.01734306198444914, 0.008349277381922827, 0.00407735619794434, 0.0020083928260822143,
            0.0009945751278180853, 0.0004941886041194645, 0.0002460865533080483,
            0.00012271334757848915, 6.124813505870483e-05, 3.058823630702049e-05,
            1.528225940865187e-05, 7.637197637899763e-06, 3.81729326499984e-06)
_LGAMMA2 = [(-1) ** k * zm1 / k for k, zm1 in zip(range(2, 19), _ZETA_M1)][::-1] + [1 - _EULER]


def _lgamma_pos(x):
    """lgamma for x >= 1/2."""
    a = full_like(x, _LANCZOS[0])
    for k in range(len(_LANCZOS) - 1, 0, -1):          # small terms first
        a = a + _LANCZOS[k] / (x + (k - 1))
    t = x + (_LANCZOS_G - 0.5)
    out = (x - 0.5) * (t.log() - 1) + (0.5 * math.log(2 * _PI) - _LANCZOS_G) + a.log()
    # near the zeros at 1 and 2 the sum above cancels: use the series (relative accuracy)
    z = where(x < 1.5, x - 1, x - 2)
    s = _horner(z, _LGAMMA2) * z                        # lgamma(2 + z)
    s = where(x < 1.5, s - z.log1p(), s)               # lgamma(1 + z) = lgamma(2 + z) - log1p(z)
    return where(z.abs() < 0.2, s, out)


def _lgamma64(x):
    """Lanczos for x >= 1/2; lgamma(1 + x) - log|x| for |x| < 1/2 (no overflow of pi / sin(pi x)
    for tiny x); reflection log(pi / |sin(pi x)|) - lgamma(1 - x) for x <= -1/2."""
    y = where(x >= 0.5, x, where(x > -0.5, x + 1, 1 - x))
    pos = _lgamma_pos(y)
    small = pos - x.abs().log()
    refl = math.log(_PI) - (_PI * _reduce_half(x)).sin().abs().log() - pos
    out = where(x >= 0.5, pos, where(x > -0.5, small, refl))
    return where(x == -_INF, _INF, out)


def lgamma(input):
    """log|Gamma(x)|; inf at 0 and the negative integers."""
    return _unary("lgamma", input, _lgamma64, lambda g, x, y: g * digamma(x), lgamma)


# ---- digamma ---------------------------------------------------------------------------------
_PSI_SHIFT = 10
_PSI_ASYM = [float(_B[2 * k] / (2 * k)) for k in range(8, 0, -1)]     # B_2k / 2k, highest first
_PSI_ROOT = (1.4616321449683622, 9.549995429965697e-17)             # the positive zero, hi + lo
_PSI_TAYLOR = (0.9676722454476212, -0.4427631689835921, 0.258499760955651, -0.16394270544240652,
               0.10782405069126237, -0.07219956125645471, 0.04880428816414311,
               -0.03316112647484736, 0.022597648232218104, -0.01542476590494896,
               0.010538791616612175, -0.007204534386356869, 0.004926781395729853)


def _digamma64(x):
    """Reflection psi(1 - x) - pi / tan(pi x) for x < 0; the recurrence psi(y) = psi(y + 10) -
    sum 1/(y + k) and the asymptotic series at y + 10; a Taylor series near the zero at 1.46."""
    neg = x < 0
    y = where(neg, 1 - x, x)
    acc = 1 / y                                 # y = +-0 gives -+inf, as torch
    for k in range(1, _PSI_SHIFT):
        acc = acc + 1 / (y + k)
    z = y + _PSI_SHIFT
    iz2 = 1 / (z * z)
    psi = z.log() - 0.5 / z - _horner(iz2, _PSI_ASYM + [0.0]) - acc
    d = (y - _PSI_ROOT[0]) - _PSI_ROOT[1]
    psi = where(d.abs() < 0.05, _horner(d, _PSI_TAYLOR[::-1] + (0.0,)), psi)
    r = _reduce_half(x) * _PI
    refl = psi - _PI * r.cos() / r.sin()
    out = where(neg, refl, psi)
    return where(neg & (x == x.floor()), _NAN, out)   # negative integers (and -inf): nan


def digamma(input):
    """psi(x) = Gamma'(x) / Gamma(x); -inf at +0 (+inf at -0) and nan at the negative
    integers, as torch."""
    return _unary("digamma", input, _digamma64, lambda g, x, y: g * polygamma(1, x), digamma)


# ---- Hurwitz zeta and polygamma ----------------------------------------------------------------
_ZETA_SHIFT = 9
_ZETA_TERMS = [float(_B[2 * j] / math.factorial(2 * j)) for j in range(1, 13)]  # B_2j / (2j)!


def _zeta_pos(s, q):
    """zeta(s, q) for s > 1, q > 0 by Euler-Maclaurin: sum_{k<9} (q + k)^-s, then the integral,
    half the next term and 12 Bernoulli corrections at w = q + 9 (Cephes' zeta)."""
    total = q ** (-s)
    for k in range(1, _ZETA_SHIFT):
        total = total + (q + k) ** (-s)
    w = q + _ZETA_SHIFT
    b = w ** (-s)
    total = total + w ** (1 - s) / (s - 1) + 0.5 * b
    sc = s.clamp(max=1e10)               # the rising factorial stays finite; w^-s is 0 there
    fac, wp = sc, b / w                  # s (s+1) ... (s+2j-2) and w^(-s-2j+1)
    corr = fac * wp * _ZETA_TERMS[0]
    for j in range(2, len(_ZETA_TERMS) + 1):
        fac = fac * (sc + (2 * j - 3)) * (sc + (2 * j - 2))
        wp = wp / (w * w)
        corr = corr + _ZETA_TERMS[j - 1] * fac * wp
    return where(s.isinf(), q ** (-s), total + corr)


def _zeta64(s, q):
    """Hurwitz zeta(s, q) = sum_k (q + k)^-s. For q < 0 (integer s) the negative terms are
    (-1)^s sum_j (f + j)^-s = (-1)^s (zeta(s, f) - zeta(s, |q| + 1)) with f = |q| - ceil|q| + 1,
    and the rest is zeta(s, 1 - f): three evaluations at positive arguments, in one batch."""
    s, q = broadcast_tensors(s, q)
    a = q.abs()
    small = a < 1
    f = where(small, a, a - a.ceil() + 1)       # whichever of f, 1 - f is small is exact
    r = where(small, 1 - a, a.ceil() - a)
    z = _zeta_pos(stack([s, s, s]), stack([where(q > 0, q, r), f, a + 1]))
    out = where(q > 0, z[0], where(s / 2 == (s / 2).floor(), 1.0, -1.0) * (z[1] - z[2]) + z[0])
    # torch's domain: s == 1 -> inf, s < 1 -> nan, q a non-positive integer -> inf,
    # q < 0 with non-integer s -> nan
    out = where((q <= 0) & (s != s.floor()), _NAN, out)
    out = where((q <= 0) & (q == q.floor()), _INF, out)
    out = where(s < 1, _NAN, out)
    return where(s == 1, _INF, out)


class ZetaBackward(Node):
    """zeta's formula, in torch's classes SpecialZetaBackward0, 1 and 2 (see _form)."""

    def backward(self, g):
        x, q = self.saved
        if isinstance(x, Tensor) and x._requires_grad:
            raise NotImplementedError("the derivative for 'zeta' is not implemented.")
        gq = g * (-x) * zeta(x + 1, q)
        return None, grad_for(gq, q)


def _form(input, other):
    """torch's overload suffix of a binary special function: "0" for two tensors, "1" for a
    number input, "2" for a number other."""
    return "0" if isinstance(input, Tensor) and isinstance(other, Tensor) else \
        "1" if isinstance(other, Tensor) else "2"


def zeta(input, other):
    """The Hurwitz zeta function zeta(input, other) = sum_k (other + k)^-input (torch.special.zeta;
    either argument may be a Python number). Differentiable in `other` only, as torch."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("zeta(): expected at least one of 'input' and 'other' to be a Tensor")
    ref = input if isinstance(input, Tensor) else other
    dtype = floating(dt.result_type(input, other))
    with autograd.no_grad():
        s, q = (t.detach().to(dt.float64) if isinstance(t, Tensor) else
                full_like(ref, float(t), dtype=dt.float64) for t in (input, other))
        out = _zeta64(s, q).to(dtype)
    if autograd.needs_grad(*(t for t in (input, other) if isinstance(t, Tensor))):
        node = node_class(ZetaBackward, "SpecialZetaBackward" + _form(input, other))()
        node.saved = tuple(snapshot(t) if isinstance(t, Tensor) else t for t in (input, other))
        record(node, (input if isinstance(input, Tensor) else None,
                      other if isinstance(other, Tensor) else None), out)
    return out


def polygamma(n, input):
    """The n-th derivative of digamma: (-1)^(n+1) n! zeta(n + 1, x) for n >= 1."""
    if as_int(n) is None:
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    n = as_int(n)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return rename(digamma(input), "PolygammaBackward0")
    scale = (-1.0) ** (n + 1) * (float(math.factorial(n)) if n <= 170 else _INF)
    return _unary("polygamma", input, lambda x: scale * _zeta64(full_like(x, n + 1.0), x),
                  lambda g, x, y: g * polygamma(n + 1, x), lambda x: polygamma(n, x))


def mvlgamma(input, p):
    """The multivariate log-gamma: sum_{j<p} lgamma(x - j/2) + p(p-1)/4 log(pi)."""
    check_tensor(input, "mvlgamma")
    if as_int(p) is None:
        raise TypeError(f"mvlgamma(): argument 'p' must be int, not {type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = input if input.dtype.is_floating_point else input.to(dt.get_default_dtype())
    shifts = arange(p, dtype=x.dtype, device=x.device) * -0.5            # (p,)
    out = lgamma(x.unsqueeze(-1) + shifts).sum(-1) + p * (p - 1) / 4 * math.log(_PI)
    return rename(out, "MvlgammaBackward0")


# ---- modified Bessel functions of the first kind (Cephes i0.c, i1.c) --------------------------
_I0_A = (-4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
         1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
         -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
         9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
         -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
         1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
         -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
         1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
         -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
         1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0_B = (-7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
         3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
         1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
         -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
         7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
         -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
         3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
         2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
         8.04490411014108831608E-1)
_I1_A = (2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
         -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
         3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
         -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
         9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
         -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
         4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
         -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
         2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
         -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1_B = (7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
         -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
         -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
         4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
         -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
         3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
         -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
         -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
         7.78576235018280120474E-1)


def _bessel_e(x, coef_a, coef_b, odd):
    """exp(-|x|) I(x): a Chebyshev series in x/2 - 2 on [0, 8], in 32/x - 2 beyond."""
    a = x.abs()
    small = _chbevl(a * 0.5 - 2, coef_a)
    if odd:
        small = small * a
    big = _chbevl(32 / a.clamp(min=8.0) - 2, coef_b) / a.sqrt()
    out = where(a <= 8, small, big)
    return where(x < 0, -out, out) if odd else out


def _i0e64(x):
    return _bessel_e(x, _I0_A, _I0_B, odd=False)


def _i1e64(x):
    return _bessel_e(x, _I1_A, _I1_B, odd=True)


def _safe_recip(x):
    return 1 / where(x == 0, 1.0, x)


def i0(input):
    """The modified Bessel function of the first kind, order 0."""
    return _unary("i0", input, lambda x: x.abs().exp() * _i0e64(x),
                  lambda g, x, y: g * i1(x), i0)


def i0e(input):
    """exp(-|x|) i0(x)."""
    return _unary("special_i0e", input, _i0e64,
                  lambda g, x, y: g * (i1e(x) - x.sign() * y), i0e)


def i1(input):
    """The modified Bessel function of the first kind, order 1."""
    return _unary("special_i1", input, lambda x: x.abs().exp() * _i1e64(x),
                  lambda g, x, y: g * where(x == 0, 0.5, i0(x) - y * _safe_recip(x)), i1)


def i1e(input):
    """exp(-|x|) i1(x)."""
    return _unary("special_i1e", input, _i1e64,
                  lambda g, x, y: g * where(x == 0, 0.5,
                                            i0e(x) - y * (x.sign() + _safe_recip(x))), i1e)


# ---- small elementwise compositions -------------------------------------------------------------
def entr(input):
    """-x log(x) for x > 0, 0 at 0, -inf for x < 0."""
    check_tensor(input, "entr")

    def fwd(x):
        ent = -x * where(x > 0, x, 1.0).log()
        return where(x.isnan(), x, where(x < 0, -_INF, where(x == 0, 0.0, ent)))
    x = input if input.dtype.is_floating_point else input.to(dt.get_default_dtype())
    with autograd.no_grad():
        out = fwd(x.detach())
    if x._requires_grad and grad_mode._enabled:
        node = _NODES["entr"]()
        node.fn, node.saved = entr, (snapshot(x), alias(out))
        node.grad = lambda g, x, y: g * -(1 + x.log())
        record(node, (x,), out)
    return out


class XlogBackward(Node):
    """xlogy's and xlog1py's node, in torch's classes XlogyBackward0, 1, 2 and
    SpecialXlog1PyBackward0, 1, 2 (see _form). torch's formulas: d/dx = xlogy(g, y), 0 where
    x == 0 and y is at or below log's pole (so 0 * log(0) has gradient 0 there, log(2) at x = 0
    elsewhere); d/dy = g x / y."""

    def backward(self, g):
        x, y = self.saved
        need_x, need_y = self.need
        pole = 0.0 if self.log == "log" else -1.0
        gx = gy = None
        if need_x:
            gx = grad_for(_xlog(g, y, self.log).masked_fill((x == 0) & (y <= pole), 0.0), x)
        if need_y:
            gy = grad_for(g * x / (y - pole), y)
        return gx, gy


def _xlog(x, y, log, name=None):
    """x * log(y) (log = "log" or "log1p"), 0 where x == 0 unless y is nan; either may be a
    Python number."""
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        raise TypeError(f"{name}(): expected at least one of 'input' and 'other' to be a Tensor")
    ref = x if isinstance(x, Tensor) else y
    dtype = floating(dt.result_type(x, y))
    xt, yt = (t.to(dtype) if isinstance(t, Tensor) else full_like(ref, t, dtype=dtype)
              for t in (x, y))
    with autograd.no_grad():
        xd, yd = xt.detach(), yt.detach()
        safe = where(xd == 0, 1.0 if log == "log" else 0.0, yd)   # the log term is 0 there
        # torch's: NaN for a NaN y, else +0.0 where x == 0 (x * log(1) would be -0.0 at x = -0.0)
        out = where(yd.isnan(), yd, where(xd == 0, 0.0, xd * getattr(safe, log)()))
    need = [isinstance(t, Tensor) and t._requires_grad for t in (x, y)]
    if grad_mode._enabled and any(need):
        prefix = "XlogyBackward" if log == "log" else "SpecialXlog1PyBackward"
        node = node_class(XlogBackward, prefix + _form(x, y))()
        node.log, node.need, node.saved = log, need, (snapshot(xt), snapshot(yt))
        record(node, (xt if need[0] else None, yt if need[1] else None), out)
    return out


def xlogy(input, other):
    """input * log(other), 0 where input == 0 (unless other is nan)."""
    return _xlog(input, other, "log", "xlogy")


def xlog1py(input, other):
    """input * log1p(other), 0 where input == 0 (unless other is nan)."""
    return _xlog(input, other, "log1p", "xlog1py")
