"""Order statistics, composed from other paragrad ops (PyTorch's reductions by rank): running
extremes (cummax/cummin), quantiles, mode, median/nanmedian and histc. Values are picked with
gather/where/scatter, so gradients come from autograd; median/nanmedian without dim, whose
PyTorch gradient splits evenly among ties, has a small backward node written with Tensor ops.
Nothing here loops over elements: scans take log2(n) rounds (Hillis-Steele)."""
from __future__ import annotations

import numpy as np

from ... import autograd, capture
from ...autograd import rename
from ... import dtypes as dt
from ...tensor import Tensor
from .._common import check_tensor, dim_arg
from ..elementwise.binary import where
from ..creation import positions_along, tensor, zeros
from ..movement.copies import cat
from .reductions import shared_among_ties, values_indices
from .sorting import sort
from ..autocast_policy import policy

__all__ = ["cummax", "cummin", "quantile", "nanquantile", "mode", "median", "nanmedian", "histc"]


# ---- running extremes ---------------------------------------------------------------------------
def _cum_extreme(input, dim, op):
    """Index of the running max (min) along dim by a log-step scan over (value, index) pairs.
    The later element wins ties and NaN beats everything, the later NaN included: the order in
    which PyTorch's sequential kernel replaces its running value, so the scan reproduces it."""
    check_tensor(input, op)
    name = op.capitalize() + "Backward0"                     # CummaxBackward0, CumminBackward0
    if input.ndim == 0:
        dim_arg(dim, 1, op)
        return values_indices(rename(input.clone(), name), zeros((), dtype=dt.int64, device=input.device))
    d = dim_arg(dim, input.ndim, op)
    n = input.shape[d]
    better = (lambda a, b: a >= b) if op == "cummax" else (lambda a, b: a <= b)
    with autograd.no_grad():
        v, i = input.detach(), positions_along(input.shape, d, input.device)
        shift = 1
        while shift < n:            # combine each element with the one `shift` places earlier
            early_v, early_i = v.narrow(d, 0, n - shift), i.narrow(d, 0, n - shift)
            late_v, late_i = v.narrow(d, shift, n - shift), i.narrow(d, shift, n - shift)
            late = late_v.isnan() | (better(late_v, early_v) & ~early_v.isnan())
            v = cat([v.narrow(d, 0, shift), where(late, late_v, early_v)], d)
            i = cat([i.narrow(d, 0, shift), where(late, late_i, early_i)], d)
            shift *= 2
    return values_indices(rename(input.gather(d, i), name), i)


def cummax(input, dim):
    """(values, indices): the running maximum along dim and the index where it was last
    reached (ties: the latest index; after a NaN the values stay NaN, index of the last NaN)."""
    return _cum_extreme(input, dim, "cummax")


def cummin(input, dim):
    """(values, indices): the running minimum along dim, ties and NaN as cummax."""
    return _cum_extreme(input, dim, "cummin")


# ---- quantiles ----------------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _q_tensor(input, q, op):
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor, got shape {tuple(q.shape)}")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor "
                               f"({q.dtype} vs {input.dtype})")
        if q.numel() and not capture.active() and not bool(((q >= 0) & (q <= 1)).all()):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
        return q.to(input.device)
    if isinstance(q, (list, tuple)) or not isinstance(q, (int, float)) or isinstance(q, bool):
        raise TypeError(f"{op}(): argument 'q' must be a float or a Tensor, not {type(q).__name__}")
    if not 0 <= q <= 1:
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
    return tensor(float(q), dtype=input.dtype, device=input.device)


def _quantile(input, q, dim, keepdim, interpolation, op, ignore_nan):
    check_tensor(input, op)
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if input.dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype, got {input.dtype}")
    qt = _q_tensor(input, q, op)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, midpoint or "
                           f"nearest, but got {interpolation}")
    if dim is None:
        x = input.reshape(-1)
    else:
        d = dim_arg(dim, max(input.ndim, 1), op)
        x = input.reshape(1) if input.ndim == 0 else input.movedim(d, -1)
    values = sort(x, -1).values                                   # (..., n), NaN last
    n = x.shape[-1]
    qv = qt.reshape(-1)                                           # (Q,)
    nan = values.isnan()
    if ignore_nan:      # ranks among the non-NaN values; all NaN: rank 0, which is NaN
        ranks = qv * ((~nan).sum(-1, keepdim=True) - 1).to(input.dtype)   # (..., Q)
        ranks = ranks.masked_fill(ranks < 0, 0)
    else:               # any NaN: the last rank, which is NaN
        ranks = where(nan.any(-1, keepdim=True), float(n - 1), qv * (n - 1))
    with autograd.no_grad():
        r = {"lower": ranks.floor, "higher": ranks.ceil, "nearest": ranks.round}.get(
            interpolation, lambda: ranks)().detach()              # round: half to even, as torch
        below, above = r.long(), r.ceil().long()
    out = values.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        # torch.lerp's two-sided form, exact at both ends; q's gradient flows through the weight
        hi = values.gather(-1, above)
        if interpolation == "midpoint":
            out = hi - (hi - out) * 0.5
        else:
            w = ranks - below
            out = where(w < 0.5, out + w * (hi - out), hi - (hi - out) * (1 - w))
    # out: (..., Q) -> (Q, ...) for a 1-D q, (...) for a scalar one; then keepdim's size-1 dims
    out = out.squeeze(-1) if qt.ndim == 0 else out.movedim(-1, 0)
    lead = 0 if qt.ndim == 0 else 1
    if keepdim and input.ndim:
        if dim is None:
            out = out.reshape(*out.shape[:lead], *([1] * input.ndim))
        else:
            out = out.unsqueeze(lead + d)
    return out


# torch's quantile ends in an in-place squeeze (SqueezeBackward4) in every form
@policy("quantile")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles (q a float or a 1-D tensor of them, in [0, 1]) along dim (None: of
    all elements); a 1-D q adds a leading dim. A NaN in a row makes its quantiles NaN."""
    return rename(_quantile(input, q, dim, keepdim, interpolation, "quantile", False), "SqueezeBackward4")


@policy("nanquantile")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile over the non-NaN values only (NaN where a row has none)."""
    return rename(_quantile(input, q, dim, keepdim, interpolation, "nanquantile", True), "SqueezeBackward4")


# ---- mode, nanmedian ----------------------------------------------------------------------------
def _reduce_dim(input, dim, keepdim, op, name):
    """The checks and trivial cases mode and nanmedian share: -> (dim, None), or (None, the
    (values, indices) result) for a 0-d input (a copy named `name`, index 0) or an empty one
    (zeros)."""
    if input.ndim == 0:
        dim_arg(dim, 1, op)
        return None, values_indices(rename(input.clone(), name), zeros((), dtype=dt.int64, device=input.device))
    d = dim_arg(dim, input.ndim, op)
    if input.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    if input.numel() == 0:
        shape = tuple(1 if i == d else s for i, s in enumerate(input.shape) if keepdim or i != d)
        return None, values_indices(input.new_zeros(shape), zeros(shape, dtype=dt.int64, device=input.device))
    return d, None


def mode(input, dim=-1, keepdim=False):
    """(values, indices): the most frequent value along dim (ties: the smallest such value)
    and the index of its last occurrence, as PyTorch on the CPU. NaNs never equal each other,
    so each counts once."""
    check_tensor(input, "mode")
    d, trivial = _reduce_dim(input, dim, keepdim, "mode", "ModeBackward0")
    if trivial is not None:
        return trivial
    with autograd.no_grad():
        sv, si = sort(input.detach(), d)        # stable: a run's last entry has its largest index
        n = input.shape[d]
        pos = positions_along(input.shape, d, input.device)
        new_run = cat([pos.narrow(d, 0, 1) >= 0,              # (all True)
                       sv.narrow(d, 1, n - 1) != sv.narrow(d, 0, n - 1)], d)
        run_start = cummax(where(new_run, pos, 0), d).values
        count = pos - run_start + 1                             # (..., n) length of run so far
        # argmax takes the first maximum: the end of the longest run of the smallest value
        idx = si.gather(d, count.argmax(d, keepdim=True))
    values = input.gather(d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return values_indices(rename(values, "ModeBackward0"), idx)


def _median(input, dim, keepdim, op, skip_nan):
    """The lower median along dim (all elements when None) as torch's CPU: median() is NaN
    where a NaN is present (with dim, the index of the first NaN), nanmedian() the median of
    the non-NaN values (NaN if there are none). The index is the value's place in a stable
    ascending order."""
    check_tensor(input, op)
    name = op.capitalize() + "Backward"     # torch's median() is MedianBackward0, median(dim) 1
    if dim is None:
        if keepdim:
            raise TypeError(f"{op}(): keepdim needs a dim ({op}(input, dim, keepdim))")
        flat = input.reshape(-1)
        with autograd.no_grad():
            if flat.numel() == 0:
                out = tensor(float("nan"), dtype=input.dtype, device=input.device)
            else:
                out = flat.gather(0, _median_index(flat, 0, skip_nan)).reshape(())
        # the gradient is shared among the elements equal to the median (the NaNs for a NaN)
        return out if flat.numel() == 0 else shared_among_ties(input, out, tuple(range(input.ndim)),
                                                                False, True, name + "0")
    d, trivial = _reduce_dim(input, dim, keepdim, op, name + "1")
    if trivial is not None:
        return trivial
    with autograd.no_grad():
        idx = _median_index(input, d, skip_nan)
    values = input.gather(d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return values_indices(rename(values, name + "1"), idx)


def _median_index(x, d, skip_nan):
    """(x's shape, 1 along d) int64: where along d the median lies."""
    sv, si = sort(x.detach(), d)                                     # stable, NaNs last
    n = x.shape[d]
    counted = (~sv.isnan()).sum(d, keepdim=True)                     # the non-NaN values
    if skip_nan:
        k = ((counted - 1) // 2).clamp(min=0)
    else:                                        # a NaN present: the first NaN's place
        k = where(counted < n, counted, (n - 1) // 2)
    return si.gather(d, k)


def median(input, dim=None, keepdim=False):
    """The lower median (the smaller middle value for even counts), NaN where a NaN is
    present; with dim, (values, indices)."""
    return _median(input, dim, keepdim, "median", skip_nan=False)


def nanmedian(input, dim=None, keepdim=False):
    """The lower median of the non-NaN values (NaN if there are none); with dim, (values,
    indices). A row of only NaNs gives index 0, where PyTorch's is arbitrary."""
    return _median(input, dim, keepdim, "nanmedian", skip_nan=True)


# ---- histc --------------------------------------------------------------------------------------
def histc(input, bins=100, min=0, max=0):  # noqa: A002
    """Counts of the elements in `bins` equal-width bins over [min, max] (both 0, or equal:
    the data's range; a zero-width range is widened by 1 each way). Elements outside the
    range and NaNs are ignored; the last bin includes max. Not differentiable. Bins as on
    PyTorch's CPU (its CUDA kernel may bin a value within rounding of an edge differently)."""
    check_tensor(input, "histc")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"histc: not implemented for '{input.dtype}' "
                                  f"(floating-point inputs only)")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    with autograd.no_grad():
        x = input.detach().reshape(-1)
        if lo == hi and x.numel():
            lo, hi = float(x.amin()), float(x.amax())
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
        if not lo < hi:
            raise RuntimeError(f"torch.histc: max must be larger than min (got min={lo:g}, max={hi:g})")
        # PyTorch's CPU kernel (histc keeps the plain LINEAR_INTERPOLATION of histogramdd):
        # bin = trunc((x - lo) * bins / (hi - lo)) with each step rounded in the input's dtype
        # and lo, hi rounded to it; x == hi goes in the last bin
        lo_t, hi_t = (x.new_tensor(v) for v in (lo, hi))
        inside = (x >= lo_t) & (x <= hi_t)                             # NaN: False
        pos = ((x - lo_t) * bins / (hi_t - lo_t)).nan_to_num(0.0).clamp(0, bins - 1)
        b = where(inside, pos.floor().long(), bins)                    # ignored: a spare slot
        counts = zeros(bins + 1, dtype=dt.int64, device=input.device).scatter_add(
            0, b, b.new_ones(b.shape))
        return counts.narrow(0, 0, bins).to(input.dtype)


# ---- scatter_reduce -----------------------------------------------------------------------------


# ---- masked_scatter, put, index_put --------------------------------------------------------------


