"""Raw launches of kernels/elementwise.cu for the elementwise calls eager code makes most:
float32/float64 contiguous operands (float16/bfloat16 too between two tensors) of the same
shape, a row broadcast (x + bias) or one element, the same on views of rows (binary_strided,
through row_views.py), the common unary functions, and the casts between float32 and the half
types. A CuPy ufunc call spends about 11 us of host time on general broadcasting and type
dispatch, a raw launch about 6 (measured on an H100 host); half-type operands also go 16 bytes
an access, where CuPy's kernels moved one element a thread. Everything else returns None and
takes the ufunc path.
"""
from __future__ import annotations

import math

import cupy
import numpy as np

from .... import capture
from ....dtypes import bfloat16
from .. import fused_chains
from ..fused_chains import flush
from ..runtime import memory
from ..runtime.compile import GRID_BLOCK, compiled, grid_stride, whole_packs
from .row_views import binary_rows

_FLOATS = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
# binary also takes the half types between two tensors, computed in float32: CuPy's bfloat16
# ufuncs ran at under half the memory bandwidth (a GPT's bias adds and dropout products)
_BINARY_TYPES = {**_FLOATS, np.dtype(np.float16): "__half",
                 **({np.dtype(bfloat16.np): "__nv_bfloat16"} if bfloat16.np is not None else {})}
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div"}
_UNARY = {"neg": "Neg", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "rsqrt": "Rsqrt", "tanh": "Tanh",
          "abs": "Abs", "reciprocal": "Reciprocal", "sigmoid": "Sigmoid", "relu": "Relu"}
_POWERS = fused_chains.POWERS     # (3.0 finds 3)
_ACTIVATION_GRADS = {"sigmoid": "SigmoidGrad", "tanh": "TanhGrad", "relu": "ReluGrad"}
_FULL, _ROW, _ONE = 0, 1, 2
_LAZY = fused_chains.ENABLED
_ndarray = cupy.ndarray
_device = cupy.cuda.runtime.getDevice


def _kernel(expr):
    return compiled("kernels/elementwise.cu", expr)


def _fits(out, shape, dtype):
    """An `out` buffer a raw launch can write: none given, or contiguous of the result's shape
    and dtype."""
    return out is None or (out.shape == shape and out.dtype == dtype and out._c_contiguous)


def _layout(x, shape, n):
    """How operand x of a result of `shape` (n elements) is read: full, a repeated row, one
    element, or None (anything else)."""
    if x.size == n and x.shape == shape:
        return _FULL
    if x.ndim > len(shape):         # (it would widen the result's shape)
        return None
    if x.size == 1:
        return _ONE
    xs = x.shape
    while xs[0] == 1:
        xs = xs[1:]
    return _ROW if shape[len(shape) - len(xs):] == xs else None


def binary(op, a, b, out):
    """a op b as one raw launch, or None where the ufunc must do it. A new result from
    contiguous float32/float64 operands runs from a plan made on the first call of its op,
    dtypes, shapes and device: the checks, the kernel's choice and the launch's numbers are
    not worked out again (half of this function's host time on small tensors). Where
    fused_chains takes it, the op is recorded instead (no launch yet)."""
    if _LAZY:       # (a, b or out may be a pending chain's result: it launches first)
        if (c := fused_chains.binary(op, a, b, out)) is not None:
            return c
        flush()
    if out is None and type(a) is _ndarray and a._c_contiguous:
        tb = type(b)
        if tb is _ndarray:
            key = (op, a.dtype, b.dtype, a.shape, b.shape, _device()) if b._c_contiguous else None
        else:
            key = (op, a.dtype, tb, a.shape, None, _device()) if tb is float or tb is int else None
        if key is not None:
            plan = _planned(key, _binary_plan, op, a, b)
            if plan is not None:
                launch, grid, shape, n, row = plan
                c = _ndarray(shape, a.dtype)
                if n:
                    if row is None:
                        launch(grid, GRID_BLOCK, a.data.ptr, a.dtype.type(b), c.data.ptr, n)
                    else:
                        launch(grid, GRID_BLOCK, a.data.ptr, b.data.ptr, c.data.ptr, n, row)
                return c
    return _binary(op, a, b, out)


# (op, dtypes, shapes, device) -> a launch and its numbers, or None where the general path
# decides (binary's: launch, grid, result shape, n, row or None for a scalar)
_plans = {}
_MAX_PLANS = 4096


def _planned(key, make, *args):
    plan = _plans.get(key, False)
    if plan is False:
        if len(_plans) > _MAX_PLANS:
            _plans.clear()
        plan = _plans[key] = make(*args)
    return plan


def _binary_plan(op, a, b):
    """The launch of a op b for contiguous float32/float64 operands (b a tensor of a's dtype
    or a Python number), or None. A plan holds no buffer: only shapes, a kernel, numbers."""
    name, ctype = _BINARY.get(op), _FLOATS.get(a.dtype)
    if name is None or ctype is None:
        return None
    if type(b) is not _ndarray:
        launch = _kernel(f"binary_scalar<{ctype}, {name}>").typed("p" + _SCALAR_SLOT[ctype] + "pq")
        return launch and (launch, grid_stride(a.size)[0], a.shape, a.size, None)
    if b.dtype != a.dtype:
        return None
    shape, n = (a.shape, a.size) if a.size >= b.size else (b.shape, b.size)
    la, lb = _layout(a, shape, n), _layout(b, shape, n)
    if la is None or lb is None or (la != _FULL and lb != _FULL):
        return None
    launch = _kernel(f"binary<{ctype}, {name}, {la}, {lb}>").typed("pppqq")
    return launch and (launch, grid_stride(n)[0], shape, n, (b if la == _FULL else a).size)


_SCALAR_SLOT = {"float": "f", "double": "d"}


def _binary(op, a, b, out):
    """binary's general path: an out buffer, half types, and the cases no plan takes."""
    name = _BINARY.get(op)
    if name is None or type(a) is not cupy.ndarray:
        return None
    ctype = _BINARY_TYPES.get(a.dtype)
    if ctype is None or not a._c_contiguous:
        return None
    if type(b) is float or type(b) is int:
        if a.dtype not in _FLOATS or not _fits(out, a.shape, a.dtype):     # (half: the ufunc's scalar rules)
            return None
        c = cupy.empty(a.shape, a.dtype) if out is None else out
        if a.size:
            _kernel(f"binary_scalar<{ctype}, {name}>")(grid_stride(a.size), (GRID_BLOCK,),
                                                      (a, a.dtype.type(b), c, np.int64(a.size)))
        return c
    if type(b) is not cupy.ndarray or b.dtype != a.dtype or not b._c_contiguous:
        return None
    shape = a.shape if a.size >= b.size else b.shape
    n = a.size if a.size >= b.size else b.size
    la, lb = _layout(a, shape, n), _layout(b, shape, n)
    if la is None or lb is None or (la != _FULL and lb != _FULL):
        return None
    if not _fits(out, shape, a.dtype):
        return None
    row = (b if la == _FULL else a).size        # (the repeated row's length, where there is one)
    c = cupy.empty(shape, a.dtype) if out is None else out
    if n:
        v = _HALF_PACK if a.itemsize == 2 and _packs(n, row, (a, la), (b, lb), (c, _FULL)) else 1
        kernel = f"binary_vec<{ctype}, {name}, {la}, {lb}, {v}>" if v > 1 else f"binary<{ctype}, {name}, {la}, {lb}>"
        _kernel(kernel)(grid_stride(n // v), (GRID_BLOCK,), (a, b, c, np.int64(n), np.int64(row)))
    return c


_HALF_PACK = 8      # half-type elements per 16-byte access of binary_vec


def _packs(n, row, *operands):
    """binary_vec may take these: n and a repeated row whole packs, full and row operands
    aligned (one element is read alone)."""
    return row % _HALF_PACK == 0 and whole_packs(n, _HALF_PACK, *(x for x, layout in operands if layout != _ONE))


def binary_strided(op, a, b, out):
    """a op b (in place where out is a) as one launch where a, b and out are views of rows of
    one shape and dtype, not all contiguous (row_views.py); None otherwise."""
    name = _BINARY.get(op)
    if (name is None or type(a) is not cupy.ndarray or type(b) is not cupy.ndarray or b.dtype != a.dtype
            or b.shape != a.shape or (out is not None and (out.shape != a.shape or out.dtype != a.dtype))):
        return None
    ctype = _BINARY_TYPES.get(a.dtype)
    if ctype is None or not a.size:
        return None
    c = cupy.empty(a.shape, a.dtype) if out is None else out
    return c if binary_rows(ctype, name, a, b, c) else None


_CASTS = {(np.dtype(np.float32), np.dtype(np.float16)): ("float", "__half")}
if bfloat16.np is not None:
    _CASTS[np.dtype(np.float32), np.dtype(bfloat16.np)] = ("float", "__nv_bfloat16")
_CASTS.update({(t, s): (ct, cs) for (s, t), (cs, ct) in list(_CASTS.items())})
_CAST_PACK = 4      # elements a thread: 16 bytes of float32, 8 of the half type


def cast(x, dtype):
    """x as `dtype` by one launch between float32 and float16/bfloat16 (x contiguous, whole
    packs, aligned): round to nearest even as CuPy's astype, which moved one element a thread
    (the autocast casts of a bf16 step); None for the rest."""
    types = _CASTS.get((x.dtype, dtype))
    if types is None or not x._c_contiguous or not whole_packs(x.size, _CAST_PACK, x):
        return None
    y = cupy.empty(x.shape, dtype)
    if x.size:
        _kernel(f"cast_vec<{types[0]}, {types[1]}, {_CAST_PACK}>")(
            grid_stride(x.size // _CAST_PACK), (GRID_BLOCK,), (x, y, np.int64(x.size)))
    return y


_MANY_CHUNK = 4 * _CAST_PACK * GRID_BLOCK    # elements a block of cast_many (MANY_PACKS packs a thread)
_many_tables = {}


def cast_many(xs, dtype):
    """The buffers xs (contiguous, of one dtype) each cast to dtype, rounded as cast() does, by
    one launch: -> [y], or None (not between float32 and a half type, or a buffer not
    contiguous)."""
    types = _CASTS.get((xs[0].dtype, dtype))
    if types is None or any(x.dtype != xs[0].dtype or not x._c_contiguous for x in xs):
        return None
    ys = [cupy.empty(x.shape, dtype) for x in xs]
    rows, blocks = [], 0
    for x, y in zip(xs, ys):
        rows.append((x.data.ptr, y.data.ptr, x.size, blocks))
        blocks += -(-x.size // _MANY_CHUNK)
    if blocks:
        _kernel(f"cast_many<{types[0]}, {types[1]}, {_CAST_PACK}>")(
            (blocks,), (GRID_BLOCK,), (_many_table(tuple(rows)), np.int32(len(rows))))
    return ys


def _many_table(rows):
    """rows as a device array, uploaded once per distinct rows (a training step's casts reuse
    their addresses from step to step) and kept alive by a graph that captures its use."""
    t = _many_tables.get(rows)
    if t is None:
        if len(_many_tables) > 256:
            _many_tables.clear()
        t = _many_tables[rows] = memory.upload(np.array(rows, dtype=np.int64).reshape(-1))
    return capture.keep(t)


def activation_grad(op, g, y):
    """The gradient of sigmoid, tanh or relu from the output y and the incoming g (same shape
    and dtype, contiguous; relu also float16/bfloat16, 16 bytes an access) as one launch, or
    None. Recorded into the pending chain where fused_chains takes it."""
    if _LAZY:
        if (dx := fused_chains.activation_grad(op, g, y)) is not None:
            return dx
        flush()
    name = _ACTIVATION_GRADS.get(op)
    if (name is None or type(g) is not cupy.ndarray or type(y) is not cupy.ndarray or not g._c_contiguous
            or not y._c_contiguous):
        return None
    key = ("activation_grad", name, g.dtype, y.dtype, g.shape, y.shape, _device())
    plan = _planned(key, _activation_grad_plan, op, name, g, y)
    if plan is not None:
        launch, grid, n = plan
        dx = _ndarray(g.shape, g.dtype)
        if n:
            launch(grid, GRID_BLOCK, g.data.ptr, y.data.ptr, dx.data.ptr, n, n)
        return dx
    ctype = (_BINARY_TYPES if op == "relu" else _FLOATS).get(g.dtype)
    if ctype is None or y.dtype != g.dtype or y.shape != g.shape:
        return None
    dx = cupy.empty(g.shape, g.dtype)
    n = g.size
    if n:
        v = _HALF_PACK if g.itemsize == 2 and whole_packs(n, _HALF_PACK, g, y, dx) else 1
        kernel = f"binary_vec<{ctype}, {name}, {_FULL}, {_FULL}, {v}>" if v > 1 else \
            f"binary<{ctype}, {name}, {_FULL}, {_FULL}>"
        _kernel(kernel)(grid_stride(n // v), (GRID_BLOCK,), (g, y, dx, np.int64(n), np.int64(n)))
    return dx


def _activation_grad_plan(op, name, g, y):
    """activation_grad's launch for float32/float64 g and y of one shape (half types: the
    general path, whose packing depends on the addresses), or None."""
    ctype = _FLOATS.get(g.dtype)
    if ctype is None or y.dtype != g.dtype or y.shape != g.shape:
        return None
    launch = _kernel(f"binary<{ctype}, {name}, {_FULL}, {_FULL}>").typed("pppqq")
    return launch and (launch, grid_stride(g.size)[0], g.size)


def unary(op, x, out):
    """op(x) as one raw launch (or recorded into the pending chain), or None where the ufunc
    must do it."""
    if _LAZY:
        if out is None and (y := fused_chains.unary(op, x)) is not None:
            return y
        flush()
    return _unary(_UNARY.get(op), x, out)


def power(x, exponent):
    """x ** exponent as one launch for the exponents the op layer composes from several
    multiplies (3, 4, -2), or None."""
    if _LAZY:
        if (y := fused_chains.unary(exponent, x, fused_chains.POWERS)) is not None:
            return y
        flush()
    return _unary(_POWERS.get(exponent), x, None)


def _unary(name, x, out):
    if name is None or type(x) is not cupy.ndarray:
        return None
    if out is None and x._c_contiguous:         # (a plan per name, dtype, shape: see binary)
        key = ("unary", name, x.dtype, x.shape, _device())
        plan = _planned(key, _unary_plan, name, x)
        if plan is not None:
            launch, grid, n = plan
            y = _ndarray(x.shape, x.dtype)
            if n:
                launch(grid, GRID_BLOCK, x.data.ptr, y.data.ptr, n)
            return y
    ctype = _FLOATS.get(x.dtype)
    if ctype is None or not x._c_contiguous:
        return None
    if not _fits(out, x.shape, x.dtype):
        return None
    y = cupy.empty(x.shape, x.dtype) if out is None else out
    if x.size:
        _kernel(f"unary<{ctype}, {name}>")(grid_stride(x.size), (GRID_BLOCK,), (x, y, np.int64(x.size)))
    return y


def _unary_plan(name, x):
    ctype = _FLOATS.get(x.dtype)
    if ctype is None:
        return None
    launch = _kernel(f"unary<{ctype}, {name}>").typed("ppq")
    return launch and (launch, grid_stride(x.size)[0], x.size)


def full(shape, value, dtype):
    """A new buffer of `shape` filled with value: zero bits by a memset, float32/float64 by a
    raw launch; None for the rest."""
    if type(value) is bool or not isinstance(value, (int, float)):
        return None
    if value == 0 and (type(value) is int or math.copysign(1.0, value) > 0):     # (not -0.0)
        y = cupy.empty(shape, dtype)
        if y.nbytes:
            y.data.memset_async(0, y.nbytes)
        return y
    ctype = _FLOATS.get(dtype)
    if ctype is None:
        return None
    y = cupy.empty(shape, dtype)
    if y.size:
        _kernel(f"fill<{ctype}>")(grid_stride(y.size), (GRID_BLOCK,), (y, dtype.type(value), np.int64(y.size)))
    return y
