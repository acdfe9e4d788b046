"""Sorting and selection (PyTorch's sort, argsort, msort, topk, kthvalue) on the backend's
argsort primitive, and multinomial sampling as a Gumbel top-k. The values are a gather of the
input at the sorted indices, so gradients flow back through that gather."""
from __future__ import annotations

from ... import dtypes as dt
from ...autograd import no_grad
from ...tensor import _wrap
from .._common import check_tensor, dim_arg
from ..indexing.subscripts import gather
from .reductions import values_indices


def argsort(input, dim=-1, descending=False, stable=False):
    """Indices that sort input along dim (stable: equal values keep their order; NaN sorts as
    the largest value)."""
    check_tensor(input, "argsort")
    if input.ndim == 0:
        return _wrap(input._backend.full((), 0, dt.int64, input.device.index), dt.int64, input._device)
    d = dim_arg(dim, input.ndim, "argsort")
    b = input._backend
    return _wrap(b.argsort(b.contiguous(input._data), d, bool(descending)), dt.int64, input._device)


def sort(input, dim=-1, descending=False, stable=False):
    """(values, indices) sorted along dim."""
    idx = argsort(input, dim, descending, stable)
    if input.ndim == 0:
        return values_indices(input.clone(), idx)
    return values_indices(gather(input, dim, idx), idx)


def msort(input):
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    """The k largest (or smallest) values along dim and their indices, in sorted order."""
    check_tensor(input, "topk")
    n = input.shape[dim_arg(dim, input.ndim, "topk")] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"topk: selected index k out of range (k={k}, dimension size {n})")
    if input.ndim == 0:
        return sort(input)
    idx = argsort(input, dim, descending=largest).narrow(dim, 0, k)
    return values_indices(gather(input, dim, idx), idx)


def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest value (1-based) along dim and its index."""
    check_tensor(input, "kthvalue")
    d = dim_arg(dim, input.ndim, "kthvalue") if input.ndim else 0
    n = input.shape[d] if input.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} (k={k}, size {n})")
    values, indices = topk(input, k, d, largest=False)
    values, indices = values.narrow(d, k - 1, 1), indices.narrow(d, k - 1, 1)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return values_indices(values, indices)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices drawn from the categorical distribution(s) in the last dim of input (weights,
    not necessarily normalized): without replacement a Gumbel top-k of log weights (exactly
    sequential sampling without replacement), with replacement num_samples independent
    Gumbel-max draws."""
    from ..creation import rand
    check_tensor(input, "multinomial")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got {input.ndim}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype}")
    n = input.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("multinomial: cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n:
        raise RuntimeError("multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    with no_grad():
        if bool((input < 0).any()) or not bool(input.isfinite().all()):
            raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
        if bool((input.sum(-1) <= 0).any()):
            raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
        logw = input.to(dt.float64).log()                   # log 0 = -inf: never drawn
        if not replacement and bool(((input > 0).sum(-1) < num_samples).any()):
            raise RuntimeError("multinomial: invalid multinomial distribution (with replacement=False, "
                               "not enough non-negative category to sample)")
        if not replacement:
            u = rand(*input.shape, generator=generator, dtype=dt.float64, device=input.device)
            gumbel = -(-u.clamp(min=1e-300).log()).log()
            return topk(logw + gumbel, num_samples).indices
        draws = rand(*input.shape[:-1], num_samples, n, generator=generator, dtype=dt.float64,
                     device=input.device)                    # (..., num_samples, n)
        gumbel = -(-draws.clamp(min=1e-300).log()).log()
        return (logw.unsqueeze(-2) + gumbel).argmax(-1)
