"""Anomaly detection for the backward pass, as torch.autograd.anomaly_mode.

While the mode is on, every recorded node keeps the traceback of the forward call that
created it (in `node.metadata["traceback_"]`, as torch), and the backward engine checks each
node: an error raised by its formula, or (with check_nan) a NaN in a gradient it returns, is
reported as a warning naming the node and where the forward created it, then raised. Off (the
default), recording and the engine pay one flag test each.

The engine (`autograd/engine.py`) reads the flags below; this module imports nothing of
paragrad's. Its path is torch's: paragrad.autograd.anomaly_mode.
"""
from __future__ import annotations

import functools
import os
import sys
import traceback
import warnings

__all__ = ["detect_anomaly", "set_detect_anomaly"]

_enabled = False
_check_nan = True


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on, as torch.is_anomaly_enabled."""
    return _enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks gradients for NaN, as torch.is_anomaly_check_nan_enabled."""
    return _check_nan


def set_anomaly_enabled(mode: bool, check_nan: bool = True) -> None:
    """torch.set_anomaly_enabled: switch the mode now (no restore; see set_detect_anomaly)."""
    global _enabled, _check_nan
    _enabled, _check_nan = bool(mode), bool(check_nan)


class detect_anomaly:
    """Context manager enabling anomaly detection inside its block (and restoring the mode it
    found when it was created on exit), with a warning that it slows things down, as torch.
    paragrad also accepts it as a decorator, `@detect_anomaly()` (torch's is not callable):
    each call of the function then runs with the mode on."""

    def __init__(self, check_nan=True) -> None:
        self.prev, self.prev_check_nan = _enabled, _check_nan
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)

    def __call__(self, fn):
        check_nan = self.check_nan

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = _enabled, _check_nan
            set_anomaly_enabled(True, check_nan)
            try:
                return fn(*args, **kwargs)
            finally:
                set_anomaly_enabled(*prev)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off now, as a function; as a context manager it also
    restores the previous mode on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev, self.prev_check_nan = _enabled, _check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass    # already switched in __init__; __exit__ restores

    def __exit__(self, *exc) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


# ---- what the forward records ------------------------------------------------------------------
_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep      # paragrad/
# paragrad's op machinery: the innermost frames of a forward traceback that are no part of the
# user's code (torch's ops are C++ and never show); nn modules and functional stay, as in torch
_MACHINERY = tuple(_PKG + p for p in ("ops" + os.sep, "autograd" + os.sep, "tensor.py"))


def forward_traceback() -> list:
    """The caller's stack as torch stores it (traceback.format_stack lines, outermost first),
    without paragrad's own op frames at the innermost end."""
    stack = traceback.extract_stack(sys._getframe(1))
    while stack and stack[-1].filename.startswith(_MACHINERY):
        stack.pop()
    return traceback.format_list(stack)


# ---- what the backward checks ------------------------------------------------------------------
def checked_call(call, node, grads):
    """`call(node, grads)` (one node's backward, gradients for its inputs) under the mode: a
    NaN among the results raises (when check_nan), and any error first warns with the
    traceback of the forward call that created the node."""
    try:
        in_grads = call(node, grads)
        if _check_nan:
            for i, g in enumerate(in_grads):
                if g is not None and bool(g.detach().isnan().any()):
                    raise RuntimeError(f"Function '{node.name()}' returned nan values in its "
                                       f"{i}th output.")
    except Exception:
        warnings.warn(_origin(node), UserWarning, stacklevel=2)
        raise
    return in_grads


def _origin(node) -> str:
    tb = node.__dict__.get("_metadata", {}).get("traceback_")
    if not tb:
        return (f"Error detected in {node.name()}. No forward pass information available. "
                f"Enable detect anomaly during forward pass for more information.")
    return (f"Error detected in {node.name()}. Traceback of forward call that caused the "
            f"error:\n" + "".join(tb))
