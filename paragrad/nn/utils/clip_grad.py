"""Gradient clipping, computed without a host round-trip per parameter."""
from __future__ import annotations

import math

from ...autograd import no_grad
from ...tensor import Tensor


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale all gradients together so their total norm is at most max_norm; returns the total
    norm (a 0-d tensor) measured before clipping."""
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        from ...ops.creation import tensor
        return tensor(0.0)
    norm_type = float(norm_type)
    with no_grad():
        if math.isinf(norm_type):
            norms = [g.abs().amax() for g in grads]
            total = norms[0] if len(norms) == 1 else _stack(norms).amax()
        else:
            norms = [(g.abs() ** norm_type).sum() for g in grads]
            total = (norms[0] if len(norms) == 1 else _stack(norms).sum()) ** (1.0 / norm_type)
        if error_if_nonfinite and not bool(total.isfinite()):
            raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} for gradients "
                               f"is non-finite, so it cannot be clipped. Set error_if_nonfinite=False "
                               f"to clip anyway.")
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)    # stays on the device: no sync
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def _stack(ts):
    from ...ops.movement import stack
    return stack([t.reshape(()) for t in ts])


def clip_grad_value_(parameters, clip_value, foreach=None):
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    with no_grad():
        for p in params:
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)
