"""batch_norm forward and backward on NumPy arrays: the CPU backend's batch_norm fast path
(signatures in fast_paths.py), for float32 and float64 (half types decline: the composition
computes them in float32).

An (N, C, *) buffer is read as an (A, C, B) view: (N, C, H*W) when row-major, (N*H*W, C, 1)
when channels-last, so a per-channel statistic is a product with a ones vector over B (BLAS)
summed over A, and a per-channel factor broadcasts as (C, 1). Each pass writes into one
buffer in place: the forward reads x twice and writes y once more per term (scale, shift,
residual, ReLU), where the composition's reductions over (0, 2, 3) made a strided pass each.
"""
from __future__ import annotations

import numpy as np

from .cpu_reductions import ones_for

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def batch_norm(x, w, b, rm, rv, training, momentum, eps, residual=None, relu=False):
    if x.dtype not in _DTYPES:
        return None
    y = np.empty_like(x)                    # (x's layout: order "K")
    xv, yv = _acb(x), _acb(y)
    a, c, bb = xv.shape
    if training:
        n = a * bb
        mean = (_channel_sums(xv) / n).astype(x.dtype)                  # (C,)
        np.subtract(xv, mean[:, None], out=yv)                          # x - mean
        var = (_channel_dots(yv, yv) / n).astype(x.dtype)               # biased
        rstd = 1 / np.sqrt(var + eps)
        if rm is not None:      # the composition's arithmetic, in x's dtype, then stored
            rm[...] = rm.astype(x.dtype) * (1.0 - momentum) + mean * momentum
            rv[...] = rv.astype(x.dtype) * (1.0 - momentum) + var * (n / (n - 1)) * momentum
    else:
        mean = rm.astype(x.dtype)
        rstd = 1 / np.sqrt(rv.astype(x.dtype) + eps)
        np.subtract(xv, mean[:, None], out=yv)
    yv *= (rstd if w is None else rstd * w)[:, None]
    if b is not None:
        yv += b[:, None]
    if residual is not None:
        y += residual
    if relu:
        np.maximum(y, 0, out=y)
    stat = (1, c) + (1,) * (x.ndim - 2)
    return y, mean.reshape(stat), rstd.reshape(stat)


def batch_norm_backward(g, x, w, mean, rstd, training, need_dx, need_dw, need_db):
    if x.dtype not in _DTYPES:
        return None
    if _acb(g).shape != _acb(x).shape:          # g in the other layout: x's, for one view
        g = _copy_like(g, x)
    gv, xv = _acb(g), _acb(x)
    a, c, bb = xv.shape
    m, r = mean.reshape(c), rstd.reshape(c)
    xhat = np.empty_like(x)
    xh = _acb(xhat)
    np.subtract(xv, m[:, None], out=xh)
    xh *= r[:, None]
    db = _channel_sums(gv).astype(x.dtype) if need_db or (need_dx and training) else None
    dw = _channel_dots(gv, xh).astype(x.dtype) if need_dw or (need_dx and training) else None
    dx = None
    if need_dx:
        scale = (r if w is None else r * w)[:, None]
        if training:            # scale * (g - db / n - xhat * dw / n), in xhat's buffer
            n = a * bb
            xh *= (-dw / n)[:, None]
            xh += gv
            xh -= (db / n)[:, None]
            xh *= scale
            dx = xhat
        else:
            dx = np.empty_like(x)
            np.multiply(gv, scale, out=_acb(dx))
    return dx, dw if need_dw else None, db if need_db else None


def _acb(x):
    """x as the (A, C, B) view the module docstring describes."""
    c = x.shape[1]
    if x.flags.c_contiguous:
        return x.reshape(x.shape[0], c, -1)
    pixels_major = np.moveaxis(x, 1, -1)       # channels-last: (N, H, W, C), dense
    if not pixels_major.flags.c_contiguous:
        raise ValueError(f"batch_norm: a buffer of shape {x.shape} and strides {x.strides} is neither "
                         f"row-major nor channels-last")
    return pixels_major.reshape(-1, c, 1)


def _copy_like(g, x):
    out = np.empty_like(x)
    out[...] = g
    return out


def _channel_sums(v):
    """(A, C, B) -> (C,) float64: sums over B in v's dtype (BLAS, a product with ones), then
    over A in float64. The float64 outer sum keeps a channel's sum as close to exact in either
    layout (B = H*W or B = 1), as conv2d's bias gradient does: what normalization subtracts
    sums to noise of the size of its rounding (a bias before a batch norm gets a gradient of
    that noise), and a float32 sum over a whole batch made that noise 1e-4 of the gradients."""
    a, _, bb = v.shape
    rows = v[:, :, 0] if bb == 1 else v @ ones_for(bb, v.dtype)        # (A, C)
    return rows.sum(axis=0, dtype=np.float64)


def _channel_dots(u, v):
    """(A, C, B) x (A, C, B) -> (C,) float64: sum of u * v per channel, as _channel_sums."""
    return np.einsum("acb,acb->ac", u, v).sum(axis=0, dtype=np.float64)
