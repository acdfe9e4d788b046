"""Page-locked ("pinned") host memory: CPU tensors whose buffers the GPU reads by DMA, so a
host-to-device copy from them can overlap host work (torch.Tensor.pin_memory, is_pinned).
A pinned buffer is a NumPy array over CuPy's pinned allocation: the CPU backend computes on
it as on any other array."""
from __future__ import annotations

import numpy as np

_HOST = 1       # cudaMemoryTypeHost: what cudaPointerGetAttributes says of pinned memory


def pinned_copy(array):
    """A C-ordered copy of the NumPy array `array` in pinned memory."""
    import cupy
    mem = cupy.cuda.alloc_pinned_memory(max(array.nbytes, 1))
    out = np.ndarray(array.shape, array.dtype, buffer=mem)
    np.copyto(out, array)
    return out


def is_pinned(array):
    """Whether a NumPy array's memory is page-locked (a view of a pinned buffer is too)."""
    import cupy
    if not array.nbytes:
        return False
    try:
        return cupy.cuda.runtime.pointerGetAttributes(array.ctypes.data).type == _HOST
    except cupy.cuda.runtime.CUDARuntimeError:       # (memory CUDA never saw)
        return False
