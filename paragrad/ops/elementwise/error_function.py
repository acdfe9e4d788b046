"""The error function family (torch.special's erfc, erfcx, ndtr, log_ndtr, erfinv, ndtri),
evaluated in float64 with Cephes' rational fits and Giles' erfinv with Newton steps, so the
tails are accurate where 1 - erf(x) would cancel."""
from __future__ import annotations

import math

from .binary import where

from .special import _horner, _unary
from ..autocast_policy import policy

_INF, _NAN, _PI = math.inf, math.nan, math.pi
_SQRT_PI = math.sqrt(math.pi)
_SQRT1_2 = math.sqrt(0.5)


# ---- erfc, erfcx and the normal distribution -----------------------------------------------------
# Cephes ndtr.c: erfc(x) = exp(-x^2) P(x)/Q(x) on [1, 8), exp(-x^2) R(x)/S(x) beyond (Q, S monic)
_ERFC_P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
           4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
           9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2)
_ERFC_Q = (1.0, 1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
           9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
           1.65666309194161350182E3, 5.57535340817727675546E2)
_ERFC_R = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
           6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0)
_ERFC_S = (1.0, 2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
           1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0)


# Cephes ndtr.c: erf(x) = x T(x^2)/U(x^2) for |x| <= 1 (U monic). Used instead of the erf
# primitive: the same polynomial on every backend, and no per-element Python on the CPU.
_ERF_T = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
          7.00332514112805075473E3, 5.55923013010394962768E4)
_ERF_U = (1.0, 3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3,
          2.26290000613890934246E4, 4.92673942608635921086E4)


def _erf_small(x):
    """erf(x) for |x| <= 1."""
    z = x * x
    return x * _horner(z, _ERF_T) / _horner(z, _ERF_U)


def _erfcx_big(a):
    """exp(a^2) erfc(a) for a >= 1; R/S in u = 1/a beyond 8 (no overflow for huge a)."""
    mid = _horner(a, _ERFC_P) / _horner(a, _ERFC_Q)
    u = 1 / a
    big = u * _horner(u, _ERFC_R[::-1]) / _horner(u, _ERFC_S[::-1])
    return where(a < 8, mid, big)


def _exp_sq(a, scale):
    """exp(scale * a^2) for 0 <= a <= 40 without the rounding of a^2 in the exponent (Cephes'
    expx2): a = m + f with m a multiple of 1/128, so m^2 is exact."""
    m = (a * 128).round() / 128
    f = a - m
    return (scale * m * m).exp() * (scale * (2 * m + f) * f).exp()


def _erfc64(x):
    a = x.abs()
    ac = a.clamp(1.0, 30.0)                      # erfc(30) underflows already
    y = _exp_sq(ac, -1.0) * _erfcx_big(ac)
    return where(a < 1, 1 - _erf_small(x), where(x < 0, 2 - y, y))


def _erfcx64(x):
    a = x.abs()
    big = _erfcx_big(a.clamp(min=1.0))
    small = (x * x).exp() * (1 - _erf_small(x))
    neg = 2 * _exp_sq(a.clamp(max=30.0), 1.0) - big   # exp(900) is inf already
    return where(x >= 1, big, where(x > -1, small, neg))


def _ndtr64(x):
    """0.5 erfc(-x / sqrt(2)); in the tails exp(-x^2 / 2) is split on x itself, since the
    rounding of x / sqrt(2) would cost x^2 ulps there."""
    a = x.abs()
    t = a * _SQRT1_2
    lower = 0.5 * _exp_sq(a.clamp(max=40.0), -0.5) * _erfcx_big(t.clamp(min=1.0))   # ndtr(-|x|)
    return where(t < 1, 0.5 + 0.5 * _erf_small(x * _SQRT1_2), where(x < 0, lower, 1 - lower))


def _log_ndtr64(x):
    """log(erfcx(-x/sqrt 2) / 2) - x^2/2 below -1 (ndtr itself underflows from -38.5 on);
    log1p(-ndtr(-x)) above."""
    lo = (_erfcx64(x * -_SQRT1_2) * 0.5).log() - 0.5 * x * x
    hi = (-_ndtr64(-x)).log1p()
    return where(x < -1, lo, hi)


def erfc(input):
    """1 - erf(x), accurate in the tail (Cephes' rational fits)."""
    return _unary("erfc", input, _erfc64,
                  lambda g, x, y: g * (-2 / _SQRT_PI) * (-(x * x)).exp(), erfc)


def erfcx(input):
    """The scaled complementary error function exp(x^2) erfc(x)."""
    return _unary("erfcx", input, _erfcx64,
                  lambda g, x, y: g * (2 * x * y - 2 / _SQRT_PI), erfcx)


def ndtr(input):
    """The standard normal CDF."""
    return _unary("ndtr", input, _ndtr64,
                  lambda g, x, y: g * (-0.5 * x * x).exp() * (1 / math.sqrt(2 * _PI)), ndtr)


def log_ndtr(input):
    """log of the standard normal CDF, accurate for large negative x."""
    return _unary("log_ndtr", input, _log_ndtr64,
                  lambda g, x, y: g * (-(y + 0.5 * x * x)).exp() * (1 / math.sqrt(2 * _PI)),
                  log_ndtr)


# ---- erfinv and ndtri ---------------------------------------------------------------------------
# Giles, "Approximating the erfinv function" (single-precision fits in w = -log(1 - y^2)), then
# Newton steps: on erf(x) = y in the centre, on log erfc(x) = log c in the tails (c = 1 - |y|,
# exact there), which stays well conditioned down to c = 1e-308.
_GILES_LO = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
             -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_HI = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
             -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erfinv_central(y):
    """erfinv(y) for |y| <= 1/2."""
    x = _horner(-(-(y * y)).log1p() - 2.5, _GILES_LO) * y
    for _ in range(2):
        x = x - (_erf_small(x) - y) * (_SQRT_PI / 2) * (x * x).exp()
    return x


def _erfcx_pos(x):
    """erfcx(x) for x >= 0."""
    return where(x < 1, (x * x).exp() * (1 - _erf_small(x)), _erfcx_big(x.clamp(min=1.0)))


_TAIL_STEPS = 3


def _erfcinv_tail(c):
    """x >= 0 with erfc(x) = c, for 0 <= c <= 1/2: Newton on log erfc(x) = log c, whose
    derivative is -2 / (sqrt(pi) erfcx(x)); log erfc is concave, so the steps converge
    monotonically from the first one on."""
    cc = where(c == 0, 1.0, c)                   # c = 0 is +inf, set below
    logc = cc.log()
    w = -(logc + (2 - cc).log())                 # -log(c (2 - c)) = -log(1 - y^2)
    lo = _horner(w - 2.5, _GILES_LO) * (1 - cc)
    hi = _horner(w.sqrt() - 3, _GILES_HI) * (1 - cc)
    t = -logc                   # far out erfc(x) ~ exp(-x^2) / (x sqrt(pi)) (1 - 1/(2x^2)):
    far = (t - 0.5 * (_PI * t).log()).sqrt()     # solved by two fixed-point steps
    far = (t - (far * _SQRT_PI).log() + (-0.5 / (far * far)).log1p()).sqrt()
    x = where(w < 5, lo, where(w < 16, hi, far))
    for _ in range(_TAIL_STEPS):
        e = _erfcx_pos(x)
        x = x + (e.log() - x * x - logc) * (_SQRT_PI / 2) * e
    return where(c == 0, _INF, x)


def _erfinv64(y):
    a = y.abs()
    tail = _erfcinv_tail((1 - a).clamp(0.0, 0.5))
    out = where(a <= 0.5, _erfinv_central(y.clamp(-0.5, 0.5)), where(y < 0, -tail, tail))
    return where(a > 1, _NAN, out)


def _ndtri64(p):
    y = 2 * p - 1                                # exact for 1/4 <= p <= 3/4
    c = where(p < 0.5, 2 * p, 2 * (1 - p))       # exact in the tails
    tail = _erfcinv_tail(c.clamp(0.0, 0.5))
    out = where(y.abs() <= 0.5, _erfinv_central(y.clamp(-0.5, 0.5)),
                where(p < 0.5, -tail, tail))
    return where((p < 0) | (p > 1), _NAN, out * math.sqrt(2))


@policy("erfinv")
def erfinv(input):
    """The inverse of erf on [-1, 1] (+-inf at +-1, nan outside)."""
    return _unary("erfinv", input, _erfinv64,
                  lambda g, x, y: g * (_SQRT_PI / 2) * (y * y).exp(), erfinv)


def ndtri(input):
    """The inverse of the standard normal CDF (ndtr)."""
    return _unary("ndtri", input, _ndtri64,
                  lambda g, x, y: g * math.sqrt(2 * _PI) * (0.5 * y * y).exp(), ndtri)
