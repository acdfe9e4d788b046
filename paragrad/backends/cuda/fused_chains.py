"""Fused elementwise chains: eager elementwise ops recorded, then run as one generated kernel.

Eager code launches one kernel per op, and on small tensors the launch (not the arithmetic) is
the cost: about 6 us of host time each, as much as PyTorch's whole op. So the CUDA backend's
elementwise calls on contiguous float32/float64 buffers of one element count (the same shape,
or one element, or a Python number beside it) don't launch: each is recorded into the pending
chain and returns its result buffer at once, allocated but not yet written (an in-place op's
result is its `out`, written by the kernel after it reads it). The chain runs as
one kernel, generated for its structure and cached (a GRU cell's `(1 - z) * h + z * hbar` and
its gradients: one launch where there were ten), at the first of:

- any other backend call (a matmul, a reduction, a copy, a host read, a DLPack export: every
  CUDABackend method that isn't elementwise or a view launches the chain first, see
  `flush_before`, NO_FLUSH and VIEWS_OF_CONTIGUOUS), so whatever reads or writes device memory
  sees the chain's results, and nothing writes an operand before it's read;
- an op the chain can't take (another element count, dtype, stream or device; an operand that
  is part of a pending result but not the whole of it);
- the end of a backward pass (Backend.launch_pending: what the graph saved is freed then);
- a capture's start or end and a graph's replay (runtime/graphs.py), pg.cuda.synchronize(),
  a memory statistic, a collective (distributed/nccl_backend.py).

Each op still runs in the op layer as before (its checks and errors, its autograd node); only
its launch waits. The kernel applies the same functors as elementwise.cu
(kernels/elementwise_ops.cuh), without fused multiply-add, so results are bit for bit those
of one launch per op.

PARAGRAD_LAZY=1 turns the recording on; it is off by default (every op launches at once): the
whole GPU suite passes with it on, but the PyTorch scripts of bench/scripts.py ran no faster
(BENCHMARKS.md, "The GPU, fourth session").
PARAGRAD_CUDA_LAUNCH=cupy keeps it off: chains launch through the driver only.
"""
from __future__ import annotations

import functools
import inspect
import os

import cupy
import numpy as np

from .runtime.compile import GRID_BLOCK, generated, grid_stride

if os.environ.get("PARAGRAD_LAZY", "0") not in ("0", "1"):
    raise RuntimeError(f"PARAGRAD_LAZY must be '0' or '1', got {os.environ['PARAGRAD_LAZY']!r}")
ENABLED = os.environ.get("PARAGRAD_LAZY", "0") == "1" and os.environ.get("PARAGRAD_CUDA_LAUNCH") != "cupy"

_ndarray = cupy.ndarray
_stream = cupy.cuda.get_current_stream
_device = cupy.cuda.runtime.getDevice
_CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_SCALAR_SLOTS = {np.dtype(np.float32): "f", np.dtype(np.float64): "d"}
BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div"}
UNARY = {"neg": "Neg", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "rsqrt": "Rsqrt", "tanh": "Tanh",
         "abs": "Abs", "reciprocal": "Reciprocal", "sigmoid": "Sigmoid", "relu": "Relu"}
ACTIVATION_GRADS = {"sigmoid": "SigmoidGrad", "tanh": "TanhGrad", "relu": "ReluGrad"}
POWERS = {3: "Cube", 4: "Fourth", -2: "InvSquare"}      # x ** 3.0 as elementwise.power's kernel
# the backend methods that don't launch the pending chain first: the elementwise calls it records
# (which launch it themselves where they don't), and those touching no memory a chain reads or
# writes (new buffers, views, lookups)
NO_FLUSH = frozenset({"binary", "unary", "fast_relu_backward", "fast_sigmoid_backward", "fast_tanh_backward",
                      "launch_pending", "empty", "full", "from_numpy", "fast", "describe", "permute", "expand", "slice",
                      "fast_basic_view", "fast_pow_scalar", "owns_memory", "data_ptr"})
# the methods that are views of a contiguous first argument (a reshape, a contiguous() of what
# is already contiguous) and read it (a copy) otherwise: they launch the chain only then. A
# transformer reshapes between every elementwise op and the next (heads split and merged), so
# a flush at each reshape would cut most of its chains
VIEWS_OF_CONTIGUOUS = frozenset({"reshape", "contiguous"})
_MAX_OPS = 64           # a chain longer than this runs, and a new one starts (kernel size)
_MAX_OPERANDS = 96      # pointers and scalars of one launch (4 KB of parameters at most)

# operand tokens of a chain's ops: ("v", j) the result of op j (in a register), ("x", k) input
# k read at each element, ("one", k) input k's single element, ("s", k) scalar k


class _Chain:
    """The pending ops: all of n elements of one dtype, on one device and stream."""
    __slots__ = ("n", "dtype", "stream", "device", "inputs", "layouts", "input_tokens", "outputs",
                 "owners", "ops", "scalars")

    def __init__(self, n, dtype, stream, device):
        self.n, self.dtype, self.stream, self.device = n, dtype, stream, device
        self.inputs = []            # buffers read, kept alive until the launch
        self.layouts = []           # per input: "x" (n elements) or "one"
        self.input_tokens = {}      # (address, layout) -> token
        self.outputs = []           # the result buffer of each op
        self.owners = {}            # id(result's memory) -> op index
        self.ops = []               # (functor, operand tokens...): with the layouts, the kernel's key
        self.scalars = []

    def operand(self, x):
        """x's token, or None where x is memory of a pending result other than that whole
        result (a slice of it: the kernel would read what another thread writes)."""
        j = self.owners.get(id(x.data.mem))
        if j is not None:
            r = self.outputs[j]
            return ("v", j) if x.data.ptr == r.data.ptr and x.size == r.size else None
        layout = "one" if x.size == 1 and self.n != 1 else "x"
        key = (x.data.ptr, layout)
        t = self.input_tokens.get(key)
        if t is None:
            t = self.input_tokens[key] = (layout, len(self.inputs))
            self.inputs.append(x)
            self.layouts.append(layout)
        return t

    def writable(self, out):
        """Whether the kernel may store into out: no input or result of the chain lies in out's
        memory but elsewhere than out (a thread would write what another reads or writes). An
        input at out itself is read before the store, at the same element, by the same thread."""
        mem, ptr, n = out.data.mem, out.data.ptr, out.size
        return all(x.data.mem is not mem or (x.data.ptr == ptr and x.size == n)
                   for x in (*self.inputs, *self.outputs))

    def scalar(self, s):
        self.scalars.append(s)
        return ("s", len(self.scalars) - 1)


_chain = None           # the pending chain, or None
_inside = 0             # > 0 while a flushing backend method runs: its own elementwise calls launch


def pending():
    """Whether recorded ops wait for a launch."""
    return _chain is not None


def binary(op, a, b, out=None):
    """a op b recorded (float32/float64, a contiguous; b a contiguous buffer of a's dtype with
    a's shape or one element, or a Python number; or a one element beside b): -> the result
    buffer, or None where the op must launch now. `out` (in place: `a += b`, a gradient's
    accumulation, an optimizer's update) is written instead of a new buffer where it is a
    contiguous buffer of the result's dtype and shape."""
    functor = BINARY.get(op)
    if functor is None or _inside or type(a) is not _ndarray or not a._c_contiguous:
        return None
    dtype = a.dtype
    if dtype not in _CTYPES:
        return None
    tb = type(b)
    if tb is _ndarray:
        if b.dtype != dtype or not b._c_contiguous:
            return None
        if a.shape == b.shape or (b.size == 1 and b.ndim <= a.ndim):
            shape, n = a.shape, a.size
        elif a.size == 1 and a.ndim <= b.ndim:
            shape, n = b.shape, b.size
        else:
            return None
    elif tb is float or tb is int:
        shape, n, b = a.shape, a.size, dtype.type(b)       # (rounded as the launch's)
    else:
        return None
    if out is not None and (type(out) is not _ndarray or out.dtype != dtype or out.shape != shape
                            or not out._c_contiguous):
        return None
    return _record(functor, shape, n, dtype, (a, b), out)


def unary(op, x, functors=UNARY):
    """op(x) recorded for a contiguous float32/float64 x, or None. (`power(x, e)` is
    `unary(e, x, POWERS)`: x ** 3.0 in a GELU's formula.)"""
    functor = functors.get(op)
    if functor is None or _inside or type(x) is not _ndarray or not x._c_contiguous or x.dtype not in _CTYPES:
        return None
    return _record(functor, x.shape, x.size, x.dtype, (x,))


def activation_grad(op, g, y):
    """sigmoid/tanh/relu's input gradient from g and the output y, recorded (contiguous, one
    float32/float64 dtype and shape), or None."""
    functor = ACTIVATION_GRADS.get(op)
    if (functor is None or _inside or type(g) is not _ndarray or type(y) is not _ndarray
            or not g._c_contiguous or not y._c_contiguous or g.dtype not in _CTYPES
            or y.dtype != g.dtype or y.shape != g.shape):
        return None
    return _record(functor, g.shape, g.size, g.dtype, (g, y))


def _record(functor, shape, n, dtype, operands, out=None):
    global _chain
    if not n:
        return None
    c, stream, device = _chain, _stream().ptr, _device()
    if c is not None and (c.n != n or c.dtype != dtype or c.stream != stream or c.device != device
                          or len(c.ops) >= _MAX_OPS
                          or len(c.inputs) + len(c.ops) + len(c.scalars) + len(operands) > _MAX_OPERANDS):
        flush()
        c = None
    if c is None:
        c = _chain = _Chain(n, dtype, stream, device)
    tokens = []
    for x in operands:
        t = c.operand(x) if type(x) is _ndarray else c.scalar(x)
        if t is None:           # (the inputs taken so far are launched unread: harmless)
            flush()
            return None
        tokens.append(t)
    if out is None:
        out = _ndarray(shape, dtype)
    elif not c.writable(out):
        flush()
        return None
    c.owners[id(out.data.mem)] = len(c.ops)     # (later reads of out: this op's value)
    c.ops.append((functor, *tokens))
    c.outputs.append(out)
    return out


_kernels = {}       # (dtype, ops, layouts, device) -> TypedLaunch


def flush():
    """Launch the pending chain, if there is one."""
    global _chain
    c = _chain
    if c is None:
        return
    _chain = None
    key = (c.dtype, tuple(c.ops), tuple(c.layouts), c.device)
    launch = _kernels.get(key)
    if launch is None:
        if len(_kernels) > 4096:
            _kernels.clear()
        launch = _kernels[key] = _compile(c)
    args = [x.data.ptr for x in c.inputs] + [r.data.ptr for r in c.outputs] + c.scalars
    if _device() == c.device:
        launch(grid_stride(c.n)[0], GRID_BLOCK, *args, c.n, stream=c.stream)
    else:           # (a kernel runs in its device's context)
        with cupy.cuda.Device(c.device):
            launch(grid_stride(c.n)[0], GRID_BLOCK, *args, c.n, stream=c.stream)


def discard():
    """Drop the pending chain unlaunched (a capture that failed recorded it: nothing will read
    its results)."""
    global _chain
    _chain = None


def source(dtype, ops, layouts, scalars):
    """The CUDA source of a chain's kernel `fused_chain`: per element i, each input loaded once,
    each op's result in a register and stored to its buffer."""
    t = _CTYPES[dtype]
    params = ([f"const T* in{k}" for k in range(len(layouts))]
              + [f"T* out{j}" for j in range(len(ops))]
              + [f"T s{k}" for k in range(scalars)] + ["long long n"])
    body = [f"        const T x{k} = in{k}[{'i' if layout == 'x' else '0'}];" for k, layout in enumerate(layouts)]
    names = {"v": "v", "x": "x", "one": "x", "s": "s"}
    for j, (functor, *tokens) in enumerate(ops):
        args = ", ".join(f"{names[kind]}{k}" for kind, k in tokens)
        body.append(f"        const T v{j} = {functor}::f({args});")
        body.append(f"        out{j}[i] = v{j};")
    return ('#include "elementwise_ops.cuh"\n'
            f"typedef {t} T;\n"
            f'extern "C" __global__ void fused_chain({", ".join(params)}) {{\n'
            "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
            "         i += (long long)gridDim.x * blockDim.x) {\n"
            + "\n".join(body) + "\n    }\n}\n")


def _compile(c):
    code = source(c.dtype, c.ops, c.layouts, len(c.scalars))
    slots = "p" * (len(c.inputs) + len(c.ops)) + _SCALAR_SLOTS[c.dtype] * len(c.scalars) + "q"
    with cupy.cuda.Device(c.device):
        return generated(code, "fused_chain", ("--fmad=false",)).typed(slots)


def flush_before(cls, keep):
    """Make every public method of the backend class `cls` not named in `keep` launch the
    pending chain first, and launch its own elementwise calls at once."""
    for name in dir(cls):
        if name.startswith("_") or name in keep:
            continue
        static = inspect.getattr_static(cls, name)
        if inspect.isfunction(static):
            setattr(cls, name, (_flushing_unless_contiguous if name in VIEWS_OF_CONTIGUOUS else _flushing)(static))


def _flushing(method):
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        global _inside
        if _chain is not None:
            flush()
        _inside += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            _inside -= 1
    return run


def _flushing_unless_contiguous(method):
    flushing = _flushing(method)

    @functools.wraps(method)
    def run(self, x, *args, **kwargs):
        if type(x) is _ndarray and x._c_contiguous:
            return method(self, x, *args, **kwargs)
        return flushing(self, x, *args, **kwargs)
    return run
