"""The value range of an index tensor, known on the host where its origin tells it, so that
bounds checks of indices on a GPU need no host read (a synchronization that stalls eager
training at every `images[idx]`, `labels[idx]`, `cross_entropy(logits, target)`).

A range is remembered for integer tensors whose values the host knew when it made them
(uploaded from host data, `randint`, `randperm`, `arange`) and passed on to what keeps a
subset of their values (slices, reshapes, gathers from them), to concatenations of tensors
with known ranges (a roll), and through writes of a Python int (`idx[:, 0] = blank`). It is
tied to the buffer's version counter: any other in-place write to the buffer or one of its
views forgets it. Without a
known range the check reads the device's min and max, as before.
"""
from __future__ import annotations

import numpy as np


def remember(t, lo, hi):
    """t's values lie in [lo, hi] (Python ints)."""
    t.__dict__["_bounds"] = (t._vc, t._vc[0], int(lo), int(hi))
    return t


def remember_host_values(t, values):
    """t was made from the host array `values`: remember their range (integer tensors on a
    device only: on the CPU the check's own min/max reads no device, and computing them here
    would tax every tensor() call)."""
    if t._device.type != "cpu" and values.size and values.dtype.kind in "iu":
        remember(t, values.min(), values.max())
    return t


def known(t):
    """(lo, hi) if remembered and t's buffer unchanged since, else None."""
    b = t.__dict__.get("_bounds")
    if b is not None and b[0] is t._vc and b[0][0] == b[1]:
        return b[2], b[3]
    return None


def inherit(out, src):
    """out holds a subset of src's values (a view of it, a gather from it)."""
    r = known(src)
    if r is not None:
        remember(out, *r)
    return out


def union(out, parts):
    """out holds the values of `parts` (a cat of them): their joint range, if each is known."""
    ranges = [known(t) for t in parts]
    if ranges and None not in ranges:
        remember(out, min(r[0] for r in ranges), max(r[1] for r in ranges))
    return out


def widen(t, before, value):
    """t's range after writing the Python number `value` into part of it, given its range
    `before` the write (None: unknown, and stays so)."""
    if before is not None and isinstance(value, (int, np.integer)):
        remember(t, min(before[0], value), max(before[1], value))
    return t


def out_of_range(t, low, high):
    """A value of the non-empty integer tensor t outside [low, high], or None if there is
    none: no host read when t's remembered range lies inside (a remembered range may be wider
    than t's values, so one that doesn't lie inside is checked exactly)."""
    r = known(t)
    if r is not None and low <= r[0] and r[1] <= high:
        return None
    b, axes = t._backend, tuple(range(t.ndim))
    lo = int(np.asarray(b.to_numpy(b.reduce("min", t._data, axes, False))))
    hi = int(np.asarray(b.to_numpy(b.reduce("max", t._data, axes, False))))
    return hi if hi > high else lo if lo < low else None
