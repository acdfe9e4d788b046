"""Views of rows: arrays whose elements are `rows` runs of `cols` contiguous elements a constant
stride apart (a C-contiguous array, or a slice of the last dim of one: split's and chunk's
pieces, the q, k and v of a fused projection). Raw launches of kernels/elementwise.cu copy such
views (c_contiguous, the backend's copy_) and add into them (a piece's gradient into the joint
gradient buffer) 16 bytes an access; CuPy's strided kernels index element by element and ran
a GPT's bf16 slice copies at about a sixth of the memory bandwidth.
"""
from __future__ import annotations

import cupy
import numpy as np

from ..runtime.compile import GRID_BLOCK, compiled, grid_stride

_BITS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
_ACCESS_BYTES = 16


def row_view(x):
    """(rows, cols, ld): element (r, j) of x lies ld * r + j elements after its first, rows
    not overlapping (ld >= cols); None where x is no view of rows."""
    if x.ndim == 0 or x.size == 0:
        return None
    item = x.itemsize
    cols = x.shape[-1]
    if cols != 1 and x.strides[-1] != item:
        return None
    rows, ld, expected = 1, cols, None
    for size, stride in zip(reversed(x.shape[:-1]), reversed(x.strides[:-1])):
        if size == 1:
            continue
        if expected is None:
            if stride <= 0 or stride % item:
                return None
            ld = stride // item
        elif stride != expected:
            return None
        expected = stride * size
        rows *= size
    return (rows, cols, ld) if ld >= cols else None


def _span(x, view):
    rows, cols, ld = view
    start = x.data.ptr
    return start, start + ((rows - 1) * ld + cols) * x.itemsize


def _apart(x, vx, y, vy):
    """x and y share no byte (a raw launch over both reads and writes in any order)."""
    (x0, x1), (y0, y1) = _span(x, vx), _span(y, vy)
    return x1 <= y0 or y1 <= x0


def _width(item, cols, lds, arrays):
    """Elements per access: up to 16 bytes, where cols, every ld and every address allow."""
    v = max(1, _ACCESS_BYTES // item)
    while v > 1 and (cols % v or any(ld % v for ld in lds) or any(a.data.ptr % (v * item) for a in arrays)):
        v //= 2
    return v


def copy_rows(dst, src):
    """dst[...] = src as one launch where both are views of rows of one shape and dtype and
    share no memory; False (nothing done) otherwise."""
    if src.dtype != dst.dtype or src.shape != dst.shape or src.itemsize not in _BITS:
        return False
    vd, vs = row_view(dst), row_view(src)
    if vd is None or vs is None or not _apart(dst, vd, src, vs):
        return False
    rows, cols, ldd = vd
    lds = vs[2]
    v = _width(dst.itemsize, cols, (ldd, lds), (dst, src))
    compiled("kernels/elementwise.cu", f"copy_rows<{_BITS[dst.itemsize]}, {v}>")(
        grid_stride(rows * cols // v), (GRID_BLOCK,),
        (src, np.int64(lds), dst, np.int64(ldd), np.int64(rows), np.int64(cols)))
    return True


def c_contiguous(x):
    """x itself where it is C-contiguous (an attribute test, where cupy.ascontiguousarray spends
    microseconds of host time even when it returns its input), else a C-ordered copy: what a
    raw launch reads."""
    if x._c_contiguous:
        return x
    if row_view(x) is not None:
        y = cupy.empty(x.shape, x.dtype)
        if copy_rows(y, x):
            return y
    return cupy.ascontiguousarray(x)


def binary_rows(ctype, op_name, a, b, c):
    """c = a op b as one launch of binary_rows<ctype, op_name> where a, b and c are views of
    rows of one shape and dtype, and b shares no memory with c unless it is c (a may be c: the
    in-place add of a gradient into its slice); False (nothing done) otherwise."""
    va, vb, vc = row_view(a), row_view(b), row_view(c)
    if va is None or vb is None or vc is None:
        return False
    for x, vx in ((a, va), (b, vb)):
        if not (x.data.ptr == c.data.ptr and x.strides == c.strides) and not _apart(x, vx, c, vc):
            return False
    rows, cols, ldc = vc
    v = _width(c.itemsize, cols, (va[2], vb[2], ldc), (a, b, c))
    compiled("kernels/elementwise.cu", f"binary_rows<{ctype}, {op_name}, {v}>")(
        grid_stride(rows * cols // v), (GRID_BLOCK,),
        (a, np.int64(va[2]), b, np.int64(vb[2]), c, np.int64(ldc), np.int64(rows), np.int64(cols)))
    return True
