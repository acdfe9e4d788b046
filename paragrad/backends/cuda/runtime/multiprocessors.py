"""The current device's streaming-multiprocessor count, for the kernels that size their grid to
fill the GPU (split reductions, grid-stride loops)."""
from __future__ import annotations

import cupy

_counts: dict = {}


def sm_count():
    dev = cupy.cuda.runtime.getDevice()
    if dev not in _counts:     # (a device query costs far more than a small launch: once per device)
        _counts[dev] = cupy.cuda.Device(dev).attributes["MultiProcessorCount"]
    return _counts[dev]
