"""pg.special: torch.special's functions under torch.special's names.

    import paragrad as pg
    pg.special.gammaln(x), pg.special.ndtri(p), pg.special.zeta(s, q), pg.special.i1e(x)

The special functions proper live in ops/elementwise/special.py (float64 evaluation, analytic gradients);
the rest are the ordinary ops under their torch.special names.
"""
from __future__ import annotations

from .ops import erf, exp2, expm1, log1p, logit, sinc  # (torch.special.sinc is torch.sinc)
from .ops import log_softmax as _log_softmax
from .ops import logsumexp as _logsumexp
from .ops import round as _round
from .ops import sigmoid as expit
from .ops import softmax as _softmax
from .ops.elementwise.error_function import erfc, erfcx, erfinv, log_ndtr, ndtr, ndtri
from .ops.elementwise.special import digamma, entr, i0, i0e, i1, i1e, polygamma, xlog1py, xlogy, zeta
from .ops.elementwise.special import lgamma as gammaln
from .ops.elementwise.special import mvlgamma as _mvlgamma

__all__ = ["gammaln", "digamma", "psi", "polygamma", "multigammaln", "erf", "erfc", "erfcx",
           "erfinv", "expit", "logit", "exp2", "expm1", "log1p", "i0", "i0e", "i1", "i1e", "ndtr",
           "ndtri", "log_ndtr", "xlogy", "xlog1py", "entr", "sinc", "round", "softmax",
           "log_softmax", "logsumexp", "zeta"]

psi = digamma


def multigammaln(input, p):
    """The multivariate log-gamma function with dimension p (torch.mvlgamma)."""
    return _mvlgamma(input, p)


def round(input, *, decimals=0):  # noqa: A001  (torch's name)
    return _round(input, decimals)


def softmax(input, dim, *, dtype=None):
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _log_softmax(input, dim, dtype=dtype)


def logsumexp(input, dim, keepdim=False):
    return _logsumexp(input, dim, keepdim)
