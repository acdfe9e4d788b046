"""Statistics composed from other ops: std_mean, cov, corrcoef, and trapezoidal integration
(trapezoid, trapz, cumulative_trapezoid)."""
from __future__ import annotations

import warnings

from ... import autograd
from ...autograd import rename
from ... import dtypes as dt
from ...tensor import Tensor
from .._common import check_tensor, dim_arg
from ..creation import zeros
from ..linalg.products import mm
from .reductions import mean, std


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over dim, as var_mean; std_mean(x, False) is the legacy (input, unbiased) form."""
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    # torch computes both in one node: here each output's last node takes its name
    return (rename(std(input, dim, unbiased, keepdim, correction=correction), "StdMeanBackward0"),
            rename(mean(input, dim, keepdim), "StdMeanBackward0"))


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in input's rows (observations in columns; 1-D:
    one variable), with integer frequency weights and floating observation weights. Weight
    checks read the weights on the host, as PyTorch's do."""
    check_tensor(input, "cov")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input "
                           f"with {input.ndim} dimensions")
    if input.dtype is dt.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.ndim < 2 else input          # (variables, observations)
    n_obs = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        check_tensor(wt, "cov", name)
        if wt.ndim > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                               f"{name} with {wt.ndim} dimensions")
        if name == "fweights" and (wt.dtype.is_floating_point or wt.dtype is dt.bool_):
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights "
                               f"with {wt.dtype} dtype")
        if name == "aweights" and not wt.dtype.is_floating_point:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {wt.dtype} dtype")
        if not ((wt.ndim == 0 and n_obs == 1) or wt.numel() == n_obs):
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                               f"observations in the input but got {wt.numel()} != {n_obs}")
        if n_obs and bool((wt < 0).any()):
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = wt if w is None else w * wt
    if w is not None:
        w_sum = w.sum()
        if not bool(w_sum != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = (x * w).sum(1) / w_sum                                        # (variables,)
        if aweights is not None and correction != 0:
            norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
        else:
            norm_factor = w_sum - correction
    else:
        avg = x.sum(1) / n_obs
        norm_factor = n_obs - correction
    with autograd.no_grad():
        degenerate = bool(norm_factor <= 0)
    if degenerate:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than "
                      "the number of observations.", stacklevel=2)
        norm_factor = norm_factor * 0 if isinstance(norm_factor, Tensor) else 0
    xc = x - avg.unsqueeze(1)                                               # (variables, obs)
    c = mm(xc, (xc if w is None else xc * w).t())
    return (c / norm_factor).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of the variables in input's rows, clipped to [-1, 1]."""
    check_tensor(input, "corrcoef")
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c                  # nan for a zero/inf/nan variance, else 1
    stddev = c.diagonal().sqrt()
    c = c / stddev.unsqueeze(1)
    c = c / stddev.unsqueeze(0)
    return c.clamp(-1, 1)


def _trapezoid_args(op, y, x, dx, dim):
    check_tensor(y, op, "y")
    if x is not None and dx is not None:
        raise TypeError(f"{op}(): pass either x (sample points) or dx (their spacing), not both")
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'x' must be Tensor, not {type(x).__name__}")
    if y.ndim == 0:
        raise IndexError(f"{op}: Dimension specified as {dim} but tensor has no dimensions")
    d = dim_arg(dim, y.ndim, op)
    if y.dtype is dt.bool_ or (x is not None and x.dtype is dt.bool_):
        raise RuntimeError(f"{op}: received a bool input for `x` or `y`, but bool is not supported")
    return d


def _spacing(op, y, x, d):
    """x's differences along d, x first viewed so that it lines up with y (1-D x: along d)."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        x = x.reshape(*[x.shape[0] if i == d else 1 for i in range(y.ndim)])
    elif x.ndim < y.ndim:
        x = x.reshape(*(1,) * (y.ndim - x.ndim), *x.shape)
    left, right = _halves(x, d)
    return right - left


def _halves(y, d):
    """y without its last and without its first entry along d (both empty if y is)."""
    n = y.shape[d]
    return y.narrow(d, 0, max(n - 1, 0)), y.narrow(d, min(n, 1), max(n - 1, 0))


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along dim: sample points x (a tensor lined up with y, or 1-D along
    dim) or a constant spacing dx (default 1)."""
    d = _trapezoid_args("trapezoid", y, x, dx, dim)
    if y.shape[d] == 0:                 # no samples: 0, as NumPy
        return zeros(tuple(s for i, s in enumerate(y.shape) if i != d), dtype=y.dtype, device=y.device)
    # torch's last steps multiply or divide by a Scalar: MulBackward1, DivBackward1
    if x is None:
        ends = y.select(d, 0) + y.select(d, -1)
        return rename((y.sum(d) - ends * 0.5) * (1 if dx is None else dx), "MulBackward1")
    left, right = _halves(y, d)
    return rename((_spacing("trapezoid", y, x, d) * (right + left)).sum(d) / 2.0, "DivBackward1")


def trapz(y, x=None, *, dx=None, dim=-1):
    """The older name of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along dim (one entry fewer than y along dim)."""
    d = _trapezoid_args("cumulative_trapezoid", y, x, dx, dim)
    left, right = _halves(y, d)
    if x is None:
        return ((1 if dx is None else dx) / 2.0 * (left + right)).cumsum(d)
    # torch halves after the running sum (DivBackward1 last); here before it
    return rename((_spacing("cumulative_trapezoid", y, x, d) * (left + right) / 2.0).cumsum(d), "DivBackward1")
