"""More of PyTorch's pooling, composed from differentiable Tensor ops (gradients from autograd):
adaptive max pooling (with indices), power-average (LP) pooling and max unpooling.

adaptive_max_pool2d walks the kernel taps of the largest window, as max_pool2d's composite
does: per tap one gather of every window's element at that tap (windows shorter than the
largest repeat their last element), combined with PyTorch's rule (the first maximum wins, a
NaN always takes over). The loop runs over taps, never over pixels or channels.
"""
from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from .._common import as_int, check_tensor
from ..elementwise.binary import where
from ..creation import tensor, zeros
from .pool import _pair, adaptive_output_size, avg_pool2d


def _windows(n, o):
    """Start and end (exclusive) of each of o adaptive windows over n: [floor(r n / o),
    ceil((r + 1) n / o))."""
    r = np.arange(o)
    return (r * n) // o, -((-(r + 1) * n) // o)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool2d over (N, C, H, W) or (C, H, W); indices (with
    return_indices) are flat positions in each H*W plane, int64."""
    x = input
    ho, wo = adaptive_output_size("adaptive_max_pool2d", x, output_size)
    if x.dtype is dt.bool_:
        raise RuntimeError(f"adaptive_max_pool2d: not implemented for 'bool' tensors (input {list(x.shape)})")
    h, w = x.shape[-2:]
    lead = tuple(x.shape[:-2])
    flat = x.reshape(*lead, h * w)                                        # (.., H*W)
    (hs, he), (ws, we) = _windows(h, ho), _windows(w, wo)
    best = idx = None
    for a in range(int((he - hs).max()) if ho else 0):
        rows = np.minimum(hs + a, he - 1)                                 # (Ho,) clipped: repeats
        for b in range(int((we - ws).max()) if wo else 0):
            cols = np.minimum(ws + b, we - 1)
            pos = tensor((rows[:, None] * w + cols[None, :]).reshape(-1), dtype=dt.int64,
                         device=x.device)                                 # (Ho*Wo,)
            v = flat.gather(-1, pos.expand(*lead, ho * wo))               # (.., Ho*Wo)
            if best is None:
                best, idx = v, pos.expand(*lead, ho * wo)
                continue
            take = (v > best) | v.isnan() if x.dtype.is_floating_point else v > best
            best, idx = where(take, v, best), where(take, pos, idx)
    if best is None:                                                      # an empty output
        best = zeros(*lead, ho * wo, dtype=x.dtype, device=x.device)
        idx = zeros(*lead, ho * wo, dtype=dt.int64, device=x.device)
    out = best.reshape(*lead, ho, wo)
    return (out, idx.reshape(*lead, ho, wo).contiguous()) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool1d over (N, C, L) or (C, L)."""
    check_tensor(input, "adaptive_max_pool1d")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d: Expected 2D or 3D tensor, but got input of size "
                           f"{list(input.shape)}")
    o = as_int(output_size[0] if isinstance(output_size, (tuple, list)) and len(output_size) == 1
               else output_size)
    if o is None or o < 0:
        raise RuntimeError(f"adaptive_max_pool1d: output_size must be one int >= 0 (got {output_size!r})")
    r = adaptive_max_pool2d(input.unsqueeze(-2), (1, o), return_indices)
    return (r[0].squeeze(-2), r[1].squeeze(-2)) if return_indices else r.squeeze(-2)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool2d: (sum over each window of x^p)^(1/p), as PyTorch composes
    it (average pool of x^p, times the window size; the sign kept through a ReLU of |.|)."""
    kh, kw = _pair(kernel_size, "kernel_size", "lp_pool2d")
    out = avg_pool2d(input.pow(norm_type), (kh, kw), stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kh * kw).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool1d over (N, C, L) or (C, L)."""
    k = as_int(kernel_size[0] if isinstance(kernel_size, (tuple, list)) else kernel_size)
    s = k if stride is None else as_int(stride[0] if isinstance(stride, (tuple, list)) else stride)
    out = avg_pool2d(input.pow(norm_type).unsqueeze(-2), (1, k), (1, s), 0, ceil_mode).squeeze(-2)
    return (out.sign() * out.abs().relu()).mul(k).pow(1.0 / norm_type)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch.nn.functional.max_unpool2d: zeros of the pooled-from size with each input value
    written at its index (flat in each output plane), the partial inverse of max_pool2d."""
    op = "max_unpool2d"
    check_tensor(input, op)
    check_tensor(indices, op, "indices")
    if input.ndim not in (3, 4) or tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}: Expected 3D or 4D input and indices of the same shape, got input "
                           f"{list(input.shape)} and indices {list(indices.shape)}")
    if indices.dtype is not dt.int64:
        raise RuntimeError(f"{op}: expected indices to have type Long, but got {indices.dtype}")
    k = _pair(kernel_size, "kernel_size", op)
    s = _pair(stride, "stride", op, default=k)
    p = _pair(padding, "padding", op)
    size = [(n - 1) * si - 2 * pi + ki for n, ki, si, pi in zip(input.shape[-2:], k, s, p)]
    if output_size is not None:
        want = [as_int(v) for v in tuple(output_size)[-2:]]
        for d, (got, lo) in enumerate(zip(want, size)):
            if not lo - s[d] < got < lo + s[d]:
                raise ValueError(f"{op}: invalid output_size {list(output_size)} (dim {d} must be "
                                 f"between {lo - s[d]} and {lo + s[d]}, exclusive)")
        size = want
    lead = tuple(input.shape[:-2])
    out = zeros(*lead, size[0] * size[1], dtype=input.dtype, device=input.device)
    flat_i = indices.reshape(*lead, -1)
    if flat_i.numel() and (int(flat_i.min()) < 0 or int(flat_i.max()) >= size[0] * size[1]):
        raise RuntimeError(f"{op}: Found an invalid max index {int(flat_i.max())} (output volumes are "
                           f"of size {size[0]}x{size[1]})")
    return out.scatter(-1, flat_i, input.reshape(*lead, -1)).reshape(*lead, *size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch.nn.functional.max_unpool1d over (N, C, L) or (C, L)."""
    one = lambda v: (1, as_int(v[0] if isinstance(v, (tuple, list)) else v))  # noqa: E731
    k = one(kernel_size)
    osz = None if output_size is None else (1, as_int(tuple(output_size)[-1]))
    return max_unpool2d(input.unsqueeze(-2), indices.unsqueeze(-2), k,
                        None if stride is None else one(stride), (0, one(padding)[1]),
                        osz).squeeze(-2)


__all__ = ["adaptive_max_pool1d", "adaptive_max_pool2d", "lp_pool1d", "lp_pool2d", "max_unpool1d",
           "max_unpool2d"]
