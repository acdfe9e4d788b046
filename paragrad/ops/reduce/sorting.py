"""Sorting and selection (PyTorch's sort, argsort, msort, topk, kthvalue) on the backend's
argsort primitive, and multinomial sampling as a Gumbel top-k. The values are a gather of the
input at the sorted indices, so gradients flow back through that gather. Also what is computed
on sorted values: membership (isin) and unique_consecutive, whose values don't require grad
(PyTorch records a node whose backward raises "not implemented")."""
from __future__ import annotations

from ... import dtypes as dt
from ...autograd import no_grad, rename
from ...tensor import Tensor, _wrap
from .._common import check_tensor, dim_arg, same_device
from ..creation import full, ones, zeros
from ..indexing.subscripts import gather, nonzero
from ..movement.copies import cat
from ..movement.rearrangement import cumsum
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


def sort(input, dim=-1, descending=False, stable=None):
    """(values, indices) sorted along dim (always stably). Passing `stable` picks torch's
    other overload, whose node is SortBackward1."""
    idx = argsort(input, dim, descending, stable)
    values = input.clone() if input.ndim == 0 else gather(input, dim, idx)
    return values_indices(rename(values, "SortBackward0" if stable is None else "SortBackward1"), idx)


def msort(input):
    """input sorted ascending along dim 0 (values only), as torch.msort."""
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    """The k largest (or smallest) values along dim and their indices, in sorted order."""
    check_tensor(input, "topk")
    n = input.shape[dim_arg(dim, input.ndim, "topk")] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"topk: selected index k out of range (k={k}, dimension size {n})")
    if input.ndim == 0:
        values, idx = sort(input)
    else:
        idx = argsort(input, dim, descending=largest).narrow(dim, 0, k)
        values = gather(input, dim, idx)
    return values_indices(rename(values, "TopkBackward0"), idx)


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
    return values_indices(rename(values, "KthvalueBackward0"), indices)


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


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """True where an element of `elements` equals some element of `test_elements` (either may
    be a Python number); both are compared in their promoted dtype. Few test elements: a
    broadcast comparison; otherwise one sort of both together (O((N+M) log(N+M)))."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): one of elements or test_elements must be a Tensor")
    dtype = dt.result_type(elements, test_elements)
    ref = elements if isinstance(elements, Tensor) else test_elements
    e, t = (v.to(dtype) if isinstance(v, Tensor) else full((), v, dtype=dtype, device=ref.device)
            for v in (elements, test_elements))
    same_device("isin", e, t)
    e, t = e.detach(), t.detach()
    n, m = e.numel(), t.numel()
    if m == 0 or n == 0:
        found = zeros(tuple(e.shape), dtype=dt.bool_, device=e.device)
    elif m < 10.0 * n ** 0.145:         # PyTorch's switch between the two algorithms
        found = (e.unsqueeze(-1) == t.reshape(-1)).any(-1)
    else:
        found = _isin_sorted(e.reshape(-1), t.reshape(-1)).reshape(tuple(e.shape))
    return ~found if invert else found


def _isin_sorted(e, t):
    """Sort test elements and elements together; an element is found iff the test element
    just before it or just after it in that order equals it (equal values sit together, in
    any order among themselves, so no stable sort is needed)."""
    m = t.shape[0]
    both = cat([t, e])                                          # (M + N,)
    order = both.argsort()
    v = both[order]                                             # sorted values
    tests_upto = cumsum((order < m).to(dt.int64), 0)            # tests at or before each place
    s = t.sort().values                                         # (M,) sorted test elements
    before = s[(tests_upto - 1).clamp(min=0)]
    after = s[tests_upto.clamp(max=m - 1)]
    hit = ((tests_upto > 0) & (before == v)) | ((tests_upto < m) & (after == v))
    # back to the original order (a permutation: scatter the sorted flags to their places)
    back = zeros(m + e.shape[0], dtype=dt.uint8, device=e.device).scatter(0, order, hit.to(dt.uint8))
    return back[m:] != 0


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse each run of equal consecutive elements (dim None: of the flattened input) or
    slices along dim into one, with the inverse indices and run lengths if asked. The output
    size depends on the values, so this reads them on the host. The values don't require grad
    (PyTorch has no derivative for this op)."""
    check_tensor(input, "unique_consecutive")
    if dim is None:
        x = input.detach().reshape(-1)                              # (n,)
        d, inv_shape = 0, tuple(input.shape)
    else:
        if input.ndim == 0:
            raise IndexError(f"unique_consecutive: Dimension specified as {dim} but tensor has no dimensions")
        d = dim_arg(dim, input.ndim, "unique_consecutive")
        x = input.detach()
        inv_shape = (x.shape[d],)
        if x.numel() == 0 and x.shape[d] != 0:
            raise RuntimeError("unique_consecutive: There are 0 sized dimensions, and they aren't "
                               "selected, so unique cannot be applied")
    n = x.shape[d]
    if n == 0:
        values, inverse = x, zeros(inv_shape, dtype=dt.int64, device=x.device)
        counts = zeros(0, dtype=dt.int64, device=x.device)
    else:
        changed = x.narrow(d, 1, n - 1) != x.narrow(d, 0, n - 1)   # NaN != NaN: runs of one
        if x.ndim > 1:
            changed = changed.movedim(d, 0).reshape(n - 1, -1).any(1)
        starts = cat([ones(1, dtype=dt.bool_, device=x.device), changed])     # (n,)
        inverse = (cumsum(starts, 0) - 1).reshape(inv_shape)
        first = nonzero(starts).reshape(-1)                         # (runs,)
        values = x.index_select(d, first)
        counts = cat([first, full((1,), n, dtype=dt.int64, device=x.device)]).diff()
    out = [values]
    if return_inverse:
        out.append(inverse)
    if return_counts:
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)
