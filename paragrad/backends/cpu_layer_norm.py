"""layer_norm forward and backward on NumPy arrays: the CPU backend's layer_norm fast path
(signatures in fast_paths.py)."""
from __future__ import annotations

import math

import numpy as np

from .cpu_reductions import ones_for, sum_along


def layer_norm(x, w, b, n_norm, eps):
    rows, stat_shape, ct = _ln_layout(x, n_norm)
    x2 = x.reshape(rows)                                   # (M, N), a view: x is C-ordered
    mean = (sum_along(x2, 1) / rows[1] if x2.dtype == ct       # (M, 1): a product with ones
            else x2.mean(axis=1, keepdims=True, dtype=ct))          # (half: a float32 sum)
    out = np.empty(x.shape, ct)            # owns its memory (a reshaped result would be a view)
    y = np.subtract(x2, mean, out=out.reshape(rows))
    rstd = np.einsum("ij,ij->i", y, y)[:, None]           # (M, 1)
    rstd /= rows[1]
    rstd += eps
    np.sqrt(rstd, out=rstd)
    np.reciprocal(rstd, out=rstd)
    y *= rstd
    if w is not None:
        np.multiply(y, w.reshape(-1), out=y)
    if b is not None:
        np.add(y, b.reshape(-1), out=y)
    return out.astype(x.dtype, copy=False), mean.reshape(stat_shape), rstd.reshape(stat_shape)


def layer_norm_backward(g, x, w, mean, rstd, n_norm, need_dw, need_db, acc=None):
    rows, _, ct = _ln_layout(x, n_norm)
    g2 = g.reshape(rows)
    if ct != g.dtype:
        g2 = g2.astype(ct)
    rstd2 = rstd.reshape(rows[0], 1)
    # results are allocated in their final shapes, so the engine can adopt them as .grad
    # without a copy (a reshaped (M, N) result would be a view)
    dx = np.empty(x.shape, ct)
    xhat = np.subtract(x.reshape(rows), mean.reshape(rows[0], 1), out=dx.reshape(rows))
    xhat *= rstd2
    norm_shape = x.shape[x.ndim - n_norm:]
    dw = db = None
    if need_dw:
        dw = np.empty(norm_shape, ct)
        np.einsum("ij,ij->j", g2, xhat, out=dw.reshape(-1))
        dw = dw.astype(x.dtype, copy=False)
    if need_db:
        db = np.empty(norm_shape, ct)
        np.matmul(ones_for(rows[0], g2.dtype), g2, out=db.reshape(-1))      # column sums
        db = db.astype(x.dtype, copy=False)
    gw = g2 if w is None else np.multiply(g2, w.reshape(-1), dtype=ct)
    c1 = sum_along(gw, 1) / rows[1]                                # mean(gw), (M, 1)
    c2 = np.einsum("ij,ij->i", gw, xhat)[:, None]                  # sum(gw * xhat)
    c2 /= rows[1]
    # dx = rstd * (gw - c1 - xhat * c2), in xhat's buffer
    xhat *= c2
    np.subtract(gw, xhat, out=xhat)
    xhat -= c1
    xhat *= rstd2
    if acc is not None:                 # (the gradient of x's other use, summed here)
        np.add(acc, dx.reshape(acc.shape), out=acc, casting="unsafe")
        return acc, dw, db
    return dx.astype(x.dtype, copy=False), dw, db


def _ln_layout(x, n_norm):
    """layer_norm's (M, N) row view, the statistics' shape (x.shape[:-n] + (1,) * n) and the
    compute dtype (float32 for half precision, as PyTorch)."""
    lead = x.shape[:x.ndim - n_norm]
    m = math.prod(lead)
    n = math.prod(x.shape[x.ndim - n_norm:])
    ct = np.float32 if x.dtype.itemsize < 4 else x.dtype
    return (m, n), lead + (1,) * n_norm, ct
