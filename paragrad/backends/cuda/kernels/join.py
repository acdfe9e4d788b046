"""cat/stack along the first axis of C-contiguous pieces (kernels/join.cu): each launch joins up
to 64 pieces whose addresses travel in the kernel's parameters. CuPy's concatenate of many
small arrays checks each in Python and uploads a table of their addresses (70-80 us for 32
token windows on an H200 host, against torch's 17); a table by value costs no upload and may
be captured in a CUDA graph."""
from __future__ import annotations

import ctypes
from itertools import accumulate

import cupy
import numpy as np

from ..runtime.compile import GRID_BLOCK, compiled, grid_stride

_PIECES = 64        # join.cu's JOIN_PIECES
# elements moved as unsigned integers of their width: a copy needs no arithmetic type
_WORDS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}


class Pieces(ctypes.Structure):
    """join.cu's Pieces<T>, passed by value (its layout is the same for every T)."""
    _fields_ = [("ptr", ctypes.c_void_p * _PIECES), ("end", ctypes.c_longlong * _PIECES)]

    @property
    def value(self):
        return self

    @value.setter
    def value(self, other):         # (how the launcher writes an argument into its packed slot)
        ctypes.memmove(ctypes.addressof(self), ctypes.addressof(other), ctypes.sizeof(Pieces))


def join_rows(xs):
    """The pieces joined along axis 0 (their shapes past it equal, one dtype), or None where a
    piece isn't C-contiguous or the dtype's width has no kernel."""
    first = xs[0]
    word = _WORDS.get(first.itemsize)
    dtype = first.dtype
    if word is None or not first.ndim or not all(x._c_contiguous and x.dtype == dtype for x in xs):
        return None
    kernel = compiled("kernels/join.cu", f"join_pieces<{word}>")
    if kernel.handle is None:       # (CuPy's launch, PARAGRAD_CUDA_LAUNCH=cupy, takes no struct)
        return None
    out = cupy.empty((sum(x.shape[0] for x in xs),) + first.shape[1:], first.dtype)
    row = 0                                         # rows written so far
    for at in range(0, len(xs), _PIECES):
        chunk = xs[at:at + _PIECES]
        ends = list(accumulate([x.size for x in chunk]))
        table, n, end = Pieces(), len(chunk), ends[-1]
        table.ptr[:n] = [x.data.ptr for x in chunk]
        table.end[:n] = ends
        if end:
            kernel(grid_stride(end), (GRID_BLOCK,), (table, out[row:], np.int64(end)))
        row += sum(x.shape[0] for x in chunk)
    return out
