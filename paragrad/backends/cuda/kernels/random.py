"""Counter-based random numbers (random.cu): a draw of uniform or normal float32/float64
values from a device-side (seed, offset) state, and the launch that advances the offset, so a
captured draw gives new numbers on every replay."""
from __future__ import annotations

import math

import cupy
import numpy as np

from ..runtime.compile import kernel, launch


def draw(name, gen, shape, a, b, wide):
    """name 'uniform' (on [a, b)) or 'normal' (mean a, std b) values of shape, float64 if wide
    else float32, from generator state gen, which then advances past them."""
    n = math.prod(shape)
    with cupy.cuda.Device(gen.device.id):
        out = cupy.empty(shape, dtype=np.float64 if wide else np.float32)
        launch(kernel("kernels/random.cu", name + ("64" if wide else "32")), n, out, np.int64(n), gen,
               (np.float64 if wide else np.float32)(a), (np.float64 if wide else np.float32)(b))
    advance(gen, n)
    return out


def advance(gen, n):
    """Move generator state gen past n numbers, on the device (a draw made elsewhere, such as
    cuDNN's attention dropout seeded from gen, must not be repeated by the next draw)."""
    with cupy.cuda.Device(gen.device.id):
        launch(kernel("kernels/random.cu", "advance"), 1, gen, np.int64(n))
