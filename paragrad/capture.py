"""What the layers below `jit.py` need to know about whole-step capture: whether a capture is
in progress, the error for reading a device value on the host inside one, and a place to keep
alive what a captured graph reads but nothing else holds.

While `pg.jit` records a step into a CUDA graph nothing runs: a host read of a device value
(`.item()`, `bool(t)`, printing a tensor, a bounds check) would read garbage and break the
capture, so it raises CaptureSyncError naming the op instead. Checks whose only purpose is a
nicer error (index bounds) are skipped while capturing.
"""
from __future__ import annotations

import weakref
from contextlib import contextmanager


class CaptureSyncError(RuntimeError):
    """A host synchronization inside a function that pg.jit is capturing."""


_state = {"name": None, "keep": None}


def active():
    """The name of the function being captured, or None."""
    return _state["name"]


def forbid_sync(op):
    """Raise CaptureSyncError if a capture is in progress: `op` needs a device value on the host."""
    if _state["name"] is not None:
        raise CaptureSyncError(
            f"{op} reads a device value on the host, which can't happen inside pg.jit (capturing "
            f"{_state['name']}): nothing runs while a CUDA graph is recorded. Return the tensor from "
            f"the jitted function and read it after the call, or run the function without jit.")


def keep(obj):
    """Keep obj alive as long as the graph being captured (no-op outside a capture)."""
    if _state["keep"] is not None:
        _state["keep"].append(obj)
    return obj


@contextmanager
def capturing(name):
    """Mark a capture of `name` in progress; yields the list of objects to keep with its graph."""
    if _state["name"] is not None:
        raise RuntimeError(f"pg.jit: can't capture {name} while capturing {_state['name']} "
                           f"(nested jitted functions are not supported)")
    kept = []
    _state["name"], _state["keep"] = name, kept
    try:
        yield kept
    finally:
        _state["name"], _state["keep"] = None, None


_device_state = weakref.WeakSet()


def track(obj):
    """Register obj (an optimizer) whose host-side settings are mirrored on the device: pg.jit
    calls obj.sync_device_state() before each capture and replay."""
    _device_state.add(obj)


def sync_device_state():
    for obj in list(_device_state):
        obj.sync_device_state()
