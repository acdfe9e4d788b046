"""glibc's malloc, tuned once for tensor buffers. By default glibc serves a request of 128 KiB
or more with a fresh mmap and gives it back on free: every such buffer then costs page faults
on first touch and an munmap. Training keeps many activations of that size alive until the
backward (makemore's MLP: 16 embeddings of (32, 16, 64) float32, exactly 128 KiB each), and
each took 53 us to make against 2.3 us for a reused block. Raising the mmap threshold to
32 MiB keeps such buffers on the heap, where freed blocks are reused; raising the trim
threshold to 128 MiB stops the heap from being handed back to the system after each step.
The cost: up to about 128 MiB more of resident memory than glibc's defaults would keep.
PARAGRAD_CPU_MALLOC=system leaves glibc as it is.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3         # glibc's mallopt parameters
MMAP_THRESHOLD, TRIM_THRESHOLD = 32 << 20, 128 << 20
_state = {"tuned": None}


def tune():
    """Set the two thresholds once per process; -> whether they are set (False off glibc,
    or where PARAGRAD_CPU_MALLOC=system)."""
    if _state["tuned"] is None:
        _state["tuned"] = False
        if os.environ.get("PARAGRAD_CPU_MALLOC", "tuned") == "system":
            return False
        mallopt = None
        for name in ("libc.so.6", ctypes.util.find_library("c")):
            try:
                mallopt = ctypes.CDLL(name).mallopt if name else None
            except (OSError, AttributeError):   # not glibc (musl, macOS): nothing to tune
                continue
            break
        if mallopt is not None:
            _state["tuned"] = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
                mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _state["tuned"]
