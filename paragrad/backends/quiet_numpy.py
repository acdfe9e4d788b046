"""NumPy without floating-point warnings inside paragrad's computations, as torch computes:
overflow, 0/0, log(0) or a NaN cast to an integer give their IEEE values silently.

`np.errstate(all="ignore")` costs about 0.75 us to enter and leave, more than half of a small
op's whole cost. NumPy 2 keeps that state in a context variable, so `quiet` sets the variable
directly (about 0.15 us) and restores it on the way out: the caller's own NumPy error state
(np.seterr, an enclosing np.errstate, another thread's) is never changed. The hottest
primitives inline the same set/reset (`ERRSTATE.set(IGNORE)`) to save the wrapper's call.
"""
from __future__ import annotations

import functools

import numpy as np

try:
    from numpy._core._ufunc_config import _extobj_contextvar as ERRSTATE, _make_extobj
    IGNORE = _make_extobj(all="ignore")
except ImportError:     # NumPy 1.x keeps it per thread: a private variable set around np.errstate

    class _ErrstateVar:
        """ERRSTATE's set/reset protocol over np.errstate (NumPy 1.x)."""

        def set(self, _):
            state = np.errstate(all="ignore")
            state.__enter__()
            return state

        def reset(self, state):
            state.__exit__(None, None, None)

    ERRSTATE, IGNORE = _ErrstateVar(), None


def quiet(fn):
    """Decorate fn so that the NumPy calls it makes raise no floating-point warnings."""
    @functools.wraps(fn)
    def quietly(*args, **kwargs):
        token = ERRSTATE.set(IGNORE)
        try:
            return fn(*args, **kwargs)
        finally:
            ERRSTATE.reset(token)
    return quietly
