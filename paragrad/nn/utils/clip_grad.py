"""Gradient clipping, computed without a host round-trip per parameter: get_total_norm and
clip_grads_with_norm_ (the two halves, PyTorch >= 2.6), clip_grad_norm_ (both), clip_grad_value_."""
from __future__ import annotations

import math

from ...autograd import no_grad
from ...dtypes import float32, float64
from ...tensor import Tensor, _wrap, bump_version


def _tensors(ts):
    return [ts] if isinstance(ts, Tensor) else list(ts)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of all the tensors together, as if concatenated (a 0-d tensor)."""
    ts = [t for t in _tensors(tensors) if t is not None]
    if not ts:
        from ...ops.creation import tensor
        return tensor(0.0)
    norm_type = float(norm_type)
    with no_grad():
        if math.isinf(norm_type):
            norms = [t.abs().amax() for t in ts]
            total = norms[0] if len(norms) == 1 else _stack(norms).amax()
        elif norm_type == 2.0 and (squares := _squares_together(ts)) is not None:
            total = squares.sqrt()
        else:
            norms = [_squares_sum(t) if norm_type == 2.0 else (t.abs() ** norm_type).sum() for t in ts]
            total = (norms[0] if len(norms) == 1 else _stack(norms).sum()) ** (1.0 / norm_type)
        if error_if_nonfinite and not bool(total.isfinite()):
            raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} for gradients "
                               f"is non-finite, so it cannot be clipped. Set error_if_nonfinite=False "
                               f"to clip anyway.")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by max_norm / (total_norm + 1e-6) where that is below 1."""
    with no_grad():
        coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)    # stays on the device: no sync
        grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
        if _scale_together(grads, coef):
            return
        for g in grads:
            g.mul_(coef.to(g.dtype))


def _scale_together(grads, coef):
    """Every gradient times coef in one launch, through the multi-tensor kernel GradScaler's
    unscale uses, where the backend has it and takes these gradients (float32, one device): a
    GPT step otherwise launched a multiply per parameter (152 kernels). False having done
    nothing otherwise."""
    if not grads or coef.dtype is not float32 or any(g.device != grads[0].device for g in grads):
        return False
    fast = grads[0]._backend.fast("unscale_grads")
    if fast is None:
        return False
    from ...ops.creation import zeros
    found_inf = zeros((), device=grads[0].device)       # (unread: clipping leaves infs be)
    if not fast([g._data for g in grads], found_inf._data, coef.to(grads[0].device)._data):
        return False
    for g in grads:
        bump_version(g)
    return True


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale all gradients together so their total norm is at most max_norm; returns the total
    norm (a 0-d tensor) measured before clipping."""
    params = _tensors(parameters)
    total = get_total_norm([p.grad for p in params if p.grad is not None], norm_type, error_if_nonfinite)
    clip_grads_with_norm_(params, max_norm, total)
    return total


def _squares_together(ts):
    """sum(t ** 2) over all the tensors in one launch, where the backend has the kernel and the
    tensors share a device and a dtype (a GPT's clip_grad_norm_ otherwise launched a square and
    a sum per parameter); None otherwise."""
    first = ts[0]
    if any(t.dtype is not first.dtype or t.device != first.device for t in ts):
        return None
    fast = first._backend.fast("sum_of_squares")
    out = fast([t._data for t in ts]) if fast is not None else None
    return None if out is None else _wrap(out, first.dtype, first.device)


def _squares_sum(t):
    """sum(t ** 2). A float32/float64 CPU tensor takes BLAS's dot product of its flattened self:
    one pass, no temporary, 7x faster than square-then-sum on a 2.3M-element embedding gradient
    (and its rounding ~2e-6 relative, torch's own norm there ~4e-5). Elsewhere square and sum
    (a GEMM-backed dot on a GPU would round through TF32 when that is allowed)."""
    if t.device.type == "cpu" and t.dtype in (float32, float64) and t.numel():
        flat = t.reshape(-1)
        return flat @ flat
    return (t * t).sum()


def _stack(ts):
    from ...ops.movement.copies import stack
    return stack([t.reshape(()) for t in ts])


def clip_grad_value_(parameters, clip_value, foreach=None):
    with no_grad():
        for p in _tensors(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)
