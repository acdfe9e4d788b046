"""PyTorch-style printing: tensor([[ 0.1000, -2.0000]], requires_grad=True).

A port of torch/_tensor_str.py (default print options) so that reprs match PyTorch's
character for character: one formatter per tensor decides integer / fixed / scientific mode
and a common width, rows wrap at 80 columns, and tensors over 1000 elements are summarized
with 3 edge items per dimension (set_printoptions changes those, as torch's).
"""
from __future__ import annotations

import math

import numpy as np

from . import dtypes as dt

PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 4, 1000, 3, 80
SCI_MODE = None         # None: the formatter decides; True/False: forced (set_printoptions)
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """torch.set_printoptions: digits after the point, the element count above which a tensor
    is summarized, the edge items a summary keeps per dim, the line width, a profile
    ('default', 'short', 'full') setting those four first, and sci_mode (None: automatic)."""
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH, SCI_MODE
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = _PROFILES[profile]
    PRECISION = PRECISION if precision is None else precision
    THRESHOLD = THRESHOLD if threshold is None else threshold
    EDGEITEMS = EDGEITEMS if edgeitems is None else edgeitems
    LINEWIDTH = LINEWIDTH if linewidth is None else linewidth
    SCI_MODE = sci_mode


class _Formatter:
    """Chooses how every element prints, from the (summarized) values of the whole tensor."""

    def __init__(self, a, floating):
        self.floating = floating
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        flat = a.reshape(-1)
        if not floating:
            self.max_width = max([1] + [len(str(v)) for v in flat.tolist()])
            return
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:
            return
        absv = np.abs(vals).astype(np.float64)
        vmin, vmax = absv.min(), absv.max()
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        py = vals.tolist()
        # scientific notation when the range calls for it, unless set_printoptions(sci_mode=) says
        self.sci_mode = (vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4) if SCI_MODE is None \
            else SCI_MODE
        if self.sci_mode:
            self.max_width = max(len(f"{v:.{PRECISION}e}") for v in py)
        elif self.int_mode:             # integral floats print as "3."
            self.max_width = max(len(f"{v:.0f}") + 1 for v in py)
        else:
            self.max_width = max(len(f"{v:.{PRECISION}f}") for v in py)

    def format(self, v):
        if not self.floating:
            s = str(v)
        elif self.sci_mode:
            s = f"{v:{self.max_width}.{PRECISION}e}"
        elif self.int_mode:
            s = f"{v:.0f}"
            if not (math.isinf(v) or math.isnan(v)):
                s += "."
        else:
            s = f"{v:.{PRECISION}f}"
        return " " * (self.max_width - len(s)) + s


def _summarized(a):
    """The values the formatter looks at: only the printed edges of a large tensor."""
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * EDGEITEMS:
        parts = [a[:EDGEITEMS], a[-EDGEITEMS:]]
    else:
        parts = [a]
    if a.ndim == 1:
        return np.concatenate(parts)
    return np.stack([_summarized(x) for p in parts for x in p])


def _vector(a, indent, summarize, fmt):
    per_line = max(1, (LINEWIDTH - indent) // (fmt.max_width + 2))
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        data = ([fmt.format(v) for v in a[:EDGEITEMS].tolist()] + [" ..."]
                + [fmt.format(v) for v in a[-EDGEITEMS:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a, indent, summarize, fmt):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt)
    n = a.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        rows = ([_nested(a[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)] + ["..."]
                + [_nested(a[i], indent + 1, summarize, fmt) for i in range(n - EDGEITEMS, n)])
    else:
        rows = [_nested(a[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _with_suffixes(body, suffixes, indent):
    out = [body]
    last = len(body) - body.rfind("\n") + 1
    for s in suffixes:
        if last + len(s) + 2 > LINEWIDTH:
            out.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            out.append(", " + s)
            last += len(s) + 2
    return "".join(out) + ")"


def tensor_repr(t):
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    default = dt.get_default_dtype()
    if t.numel() == 0:
        if t.ndim != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not default:      # nothing printed shows an empty tensor's dtype
            suffixes.append(f"dtype=paragrad.{t.dtype.name}")
        body = "[]"
    else:
        if t.dtype not in (default, dt.int64, dt.bool_):
            suffixes.append(f"dtype=paragrad.{t.dtype.name}")
        a = t._host("printing a Tensor")
        if t.dtype in (dt.float16, dt.bfloat16):
            a = a.astype(np.float32)    # as PyTorch, which formats half precision as float
        summarize = a.size > THRESHOLD
        fmt = _Formatter(_summarized(a) if summarize else a, t.dtype.is_floating_point)
        body = _nested(a, indent, summarize, fmt)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, indent)
