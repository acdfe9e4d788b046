"""max_pool2d's forward on NumPy arrays: the CPU backend's max_pool2d fast path (signature in
fast_paths.py). Each kernel tap is one strided (N, C, Ho, Wo) view of the (padded) input; the
running maximum and the tap that gave it are updated tap by tap with arithmetic only (np.where
and masked copies branch on every element: 4x slower here), three light passes a tap where the
composition made seven elementwise calls. The backward stays the composition's scatter-add.

Declined, for the composition's exact rules: integer inputs, a NaN anywhere (the composition
lets the last NaN of a window win), and -inf with padding (a real -inf must beat a padded one,
which a comparison of values can't tell apart)."""
from __future__ import annotations

import numpy as np


def max_pool2d(x, k, s, p, d, ho, wo):
    if x.dtype.kind != "f" or np.isnan(x).any() or (any(p) and np.isneginf(x).any()):
        return None
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = k, s, p, d
    # (ceil mode: the last window may reach past the right padding)
    hp = max(h + 2 * ph, (ho - 1) * sh + (kh - 1) * dh + 1)
    wp = max(w + 2 * pw, (wo - 1) * sw + (kw - 1) * dw + 1)
    if (hp, wp) != (h, w):
        xp = np.full((n, c, hp, wp), -np.inf, x.dtype)
        xp[:, :, ph:ph + h, pw:pw + w] = x
        x = xp
    s_n, s_c, s_h, s_w = x.strides

    def tap(t):                     # tap t's (N, C, Ho, Wo) view
        i, j = divmod(t, kw)
        return np.lib.stride_tricks.as_strided(x[:, :, i * dh:, j * dw:], (n, c, ho, wo),
                                               (s_n, s_c, s_h * sh, s_w * sw), writeable=False)
    y = np.array(tap(0))
    best = np.zeros(y.shape, np.int16 if kh * kw < 1 << 15 else np.int32)     # the tap of y
    for t in range(1, kh * kw):
        v = tap(t)
        later = np.greater(v, y)                    # strictly: the first maximum stays
        np.maximum(y, v, out=y)
        best += later * (t - best)
    i, j = np.divmod(best.astype(np.int64), kw)
    rows = np.arange(ho)[:, None] * sh - ph + i * dh           # the taps' input positions
    cols = np.arange(wo) * sw - pw + j * dw
    return y, rows * w + cols
