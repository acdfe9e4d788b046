"""Weight initialization, PyTorch's `nn.init`: every function fills a tensor in place under
no_grad and returns it."""
from __future__ import annotations

import math
import warnings

from ..autograd import no_grad


def calculate_gain(nonlinearity, param=None):
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(t):
    if t.ndim < 2:
        raise ValueError(f"Fan in and fan out can not be computed for tensor with fewer than 2 "
                         f"dimensions (got shape {tuple(t.shape)})")
    receptive = math.prod(t.shape[2:]) if t.ndim > 2 else 1
    return t.shape[1] * receptive, t.shape[0] * receptive


def _fan(t, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(t, a=0.0, b=1.0, generator=None):
    with no_grad():
        return t.uniform_(a, b, generator=generator)


def normal_(t, mean=0.0, std=1.0, generator=None):
    with no_grad():
        return t.normal_(mean, std, generator=generator)


def trunc_normal_(t, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal samples redrawn until they fall in [a, b] (rejection keeps the exact law)."""
    with no_grad():
        from ..ops.creation import randn
        from ..ops.elementwise.binary import where
        vals = randn(tuple(t.shape), generator=generator, dtype=t.dtype, device=t.device) * std + mean
        for _ in range(100):
            bad = (vals < a) | (vals > b)
            if not bool(bad.any()):
                break
            fresh = randn(tuple(t.shape), generator=generator, dtype=t.dtype, device=t.device) * std + mean
            vals = where(bad, fresh, vals)
        return t.copy_(vals.clamp(a, b))


def constant_(t, val):
    with no_grad():
        return t.fill_(val)


def zeros_(t):
    with no_grad():
        return t.zero_()


def ones_(t):
    with no_grad():
        return t.fill_(1.0)


def eye_(t):
    if t.ndim != 2:
        raise ValueError("eye_: only tensors with 2 dimensions are supported")
    from ..ops.creation import eye
    with no_grad():
        return t.copy_(eye(t.shape[0], t.shape[1], dtype=t.dtype, device=t.device))


def xavier_uniform_(t, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound, generator)


def xavier_normal_(t, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(t, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(t.shape):
        warnings.warn("Initializing zero-element tensors is a no-op")
        return t
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(t, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(t, -bound, bound, generator)


def kaiming_normal_(t, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(t.shape):
        warnings.warn("Initializing zero-element tensors is a no-op")
        return t
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(t, mode))
    return normal_(t, 0.0, std, generator)


def norm_affine_init_(weight, bias):
    """PyTorch's reset for the normalization layers' affine parameters: weight ones, bias
    zeros (either may be None)."""
    if weight is not None:
        ones_(weight)
    if bias is not None:
        zeros_(bias)


def default_affine_init_(weight, bias):
    """PyTorch's reset_parameters for Linear and ConvNd: kaiming_uniform_(a=sqrt(5)) on the
    weight, that is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias uniform in the same range."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in = _calculate_fan_in_and_fan_out(weight)[0] if weight.numel() else 0
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)


def orthogonal_(t, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix over t's first dim and the rest flattened: the Q of a QR of a
    normal sample, signs fixed by R's diagonal so the law is uniform (Saxe et al., as PyTorch)."""
    if t.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if t.numel() == 0:
        return t
    from ..linalg import qr
    from ..ops.creation import randn
    rows, cols = t.shape[0], t.numel() // t.shape[0]
    with no_grad():
        flat = randn(rows, cols, generator=generator, dtype=t.dtype, device=t.device)
        if rows < cols:
            flat = flat.mT
        q, r = qr(flat)
        q = q * r.diagonal().sign()
        if rows < cols:
            q = q.mT
        return t.copy_(q.reshape(t.shape) * gain)


def dirac_(t, groups=1):
    """The identity convolution: each output channel copies one input channel at the kernel's
    centre (per group). For 3-, 4- and 5-D weights."""
    if t.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if t.shape[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    import numpy as np
    from ..ops.creation import tensor
    out_per_group = t.shape[0] // groups
    w = np.zeros(tuple(t.shape), np.float64)
    centre = tuple(k // 2 for k in t.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, t.shape[1])):
            w[(g * out_per_group + d, d) + centre] = 1.0
    with no_grad():
        return t.copy_(tensor(w, dtype=t.dtype, device=t.device))


def sparse_(t, sparsity, std=0.01, generator=None):
    """A 2-D tensor drawn from N(0, std), with ceil(sparsity * rows) random entries of each
    column set to zero (Martens, 2010)."""
    if t.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from ..ops.creation import rand
    rows, cols = t.shape
    zeros_per_col = int(math.ceil(sparsity * rows))
    with no_grad():
        t.normal_(0, std, generator=generator)
        # each column's rank of uniform keys: the lowest zeros_per_col are a uniform random subset
        rank = rand(rows, cols, generator=generator, device=t.device).argsort(0).argsort(0)
        return t.masked_fill_(rank < zeros_per_col, 0.0)
