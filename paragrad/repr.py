"""PyTorch-style printing: tensor([[ 0.1000, -2.0000]], requires_grad=True)."""
from __future__ import annotations

import numpy as np

from . import dtypes as dt


def _format_floats(a):
    finite = a[np.isfinite(a)]
    if finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
        return lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)
    if finite.size:
        amax, amin = np.abs(finite).max(), np.abs(finite[finite != 0]).min() if np.any(finite) else 0
        if amax >= 1e8 or (amin and amin < 1e-4) or (amin and amax / amin > 1e3):
            return lambda v: f"{v:.4e}"
    return lambda v: f"{v:.4f}" if np.isfinite(v) else str(v)


def _body(a, dtype):
    if a.dtype == np.bool_:
        fmt = str
    elif dtype.is_floating_point:
        fmt = _format_floats(a.astype(np.float64))
    else:
        fmt = str
    strs = np.vectorize(lambda v: fmt(v.item() if hasattr(v, "item") else v), otypes=[object])(a) \
        if a.size else np.array([], dtype=object).reshape(a.shape)
    width = max((len(s) for s in strs.flat), default=0)
    padded = np.vectorize(lambda s: s.rjust(width), otypes=[object])(strs) if a.size else strs
    return np.array2string(padded, separator=", ", formatter={"all": lambda s: s},
                           threshold=1000, edgeitems=3, prefix="tensor(", max_line_width=80)


def tensor_repr(t):
    a = t._backend.to_numpy(t._data)
    if a.dtype.kind == "V" or (t.dtype is dt.bfloat16):
        a = a.astype(np.float32)
    body = _body(a, t.dtype) if a.ndim else (_body(a.reshape(1), t.dtype)[1:-1])
    extras = []
    if t.numel() == 0 and t.ndim != 1:
        extras.append(f"size={tuple(t.shape)}")
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    default = dt.get_default_dtype() if t.dtype.is_floating_point else dt.int64
    if t.dtype is not default and t.dtype is not dt.bool_:
        extras.append(f"dtype=paragrad.{t.dtype.name}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
