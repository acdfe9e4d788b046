"""The one NVRTC loader: the CUDA backend's .cu files (kernels/*.cu, matmul/small_gemm.cu),
compiled once per machine (CuPy keeps the binaries on disk, keyed by the source text and
options, so moving a file recompiles nothing), loaded once per process, and launched.

Sources are named by their path under backends/cuda/ ("kernels/softmax.cu"); an
`#include "block_reduce.cuh"` is replaced by kernels/block_reduce.cuh's text.

A launch calls the driver's cuLaunchKernel through CuPy's typed wrapper of it
(`cupy.cuda.driver.launchKernel`: its eleven arguments are C integers, nothing to inspect),
with the kernel's arguments written into C values packed once per kernel and argument types.
CuPy's kernel call converts every argument anew, cuda-python's wrapper inspects each of its
own (bench/cuda_launch.py measures the ways side by side). Arguments of a type the packing
doesn't know, or PARAGRAD_CUDA_LAUNCH=cupy, take CuPy's call.
"""
from __future__ import annotations

import ctypes
import os
import struct
import threading
from pathlib import Path

import cupy
import numpy as np

_LAUNCH = os.environ.get("PARAGRAD_CUDA_LAUNCH", "driver")
if _LAUNCH not in ("driver", "cupy"):
    raise RuntimeError(f"PARAGRAD_CUDA_LAUNCH must be 'driver' or 'cupy', got {_LAUNCH!r}")


_launch_kernel = cupy.cuda.driver.launchKernel if _LAUNCH == "driver" else None
_stream = cupy.cuda.get_current_stream
_ndarray = cupy.ndarray


_modules = {}
_instances = {}       # (source, kernel name or template instantiation, device) -> Kernel
_device = cupy.cuda.runtime.getDevice       # (a loaded function belongs to one device)
_DIR = Path(__file__).parent.parent             # backends/cuda/: sources are named from here
_HEADERS = ("block_reduce.cuh", "last_block.cuh", "pack.cuh", "elementwise_ops.cuh")     # in kernels/, pasted where a source includes them
# optimizer updates, batch norm and the elementwise kernels must round like the composed
# primitives (or ufuncs) they replace: no fused multiply-add
_OPTIONS = {"kernels/optimizer.cu": ("--fmad=false",), "kernels/batch_norm.cu": ("--fmad=false",),
            "kernels/elementwise.cu": ("--fmad=false",), "kernels/recurrent.cu": ("--fmad=false",)}


def _code(source):
    return _pasted((_DIR / source).read_text())


def _pasted(text):
    # the headers pasted in: CuPy's on-disk kernel cache is keyed by the source text, which
    # must then change when a header does
    for name in _HEADERS:
        text = text.replace(f'#include "{name}"', (_DIR / "kernels" / name).read_text().replace("#pragma once", ""))
    return text


_C_TYPES = {cupy.ndarray: ctypes.c_void_p, np.int64: ctypes.c_int64, np.int32: ctypes.c_int32,
            np.uint32: ctypes.c_uint32, np.uint64: ctypes.c_uint64, np.float32: ctypes.c_float,
            np.float64: ctypes.c_double}
_PAD = ((1, 1, 1), (1, 1), (1,), ())        # grid and block tuples to three dims


class Kernel:
    """A loaded kernel, called as CuPy's are: kernel(grid, block, args)."""

    def __init__(self, function):
        self.function = function        # CuPy's RawKernel: the fallback
        self.handle = function.kernel.ptr if _launch_kernel is not None else None
        self.packs = {}                 # argument types -> (C values, their address array) or None
        self.launches = {}              # argument slots ("pppqq") -> TypedLaunch
        self.lock = threading.Lock()    # (the packed values are shared by the threads)

    @staticmethod
    def _pack(kinds):
        # a ctypes.Structure argument goes by value (kernels/join.py's table of addresses):
        # its packed slot is an instance whose `value` setter copies the argument in
        types = [_C_TYPES.get(k) or (k if issubclass(k, ctypes.Structure) else None) for k in kinds]
        if None in types:
            return None
        values = [t() for t in types]
        params = (ctypes.c_void_p * len(types))(*(ctypes.addressof(v) for v in values))
        return values, params, ctypes.addressof(params)

    def typed(self, slots):
        """This kernel launched with arguments of fixed C types (see TypedLaunch), or None
        where launches go through CuPy's call (PARAGRAD_CUDA_LAUNCH=cupy)."""
        if self.handle is None:
            return None
        launch = self.launches.get(slots)
        if launch is None:
            launch = self.launches[slots] = TypedLaunch(self.handle, slots)
        return launch

    def __call__(self, grid, block, args):
        if self.handle is None:
            return self.function(grid, block, args)
        kinds = tuple(map(type, args))
        pack = self.packs.get(kinds, False)
        if pack is False:
            pack = self.packs[kinds] = self._pack(kinds)
        if pack is None:
            return self.function(grid, block, args)
        g, b = grid + _PAD[len(grid)], block + _PAD[len(block)]
        with self.lock:
            for v, a in zip(pack[0], args):
                v.value = a.data.ptr if type(a) is _ndarray else a
            try:
                _launch_kernel(self.handle, g[0], g[1], g[2], b[0], b[1], b[2], 0, _stream().ptr, pack[2], 0)
            except cupy.cuda.driver.CUDADriverError as e:
                raise RuntimeError(f"CUDA kernel launch failed: {e} (grid {grid}, block {block})") from None


# TypedLaunch's argument slots: 8 bytes each (a kernel parameter's alignment is its size)
_SLOT_FORMATS = {"p": "Q", "q": "q", "f": "f4x", "d": "d"}


class TypedLaunch:
    """One kernel's launch with arguments of fixed C types, given as plain numbers: "p" a
    device address (int), "q" int64, "f" float32, "d" float64. They are written into one C
    buffer by a single struct.pack_into, where Kernel.__call__ converts each argument by its
    type (about a microsecond less a launch: the elementwise hot path's)."""

    def __init__(self, handle, slots):
        self.handle = handle
        self.pack = struct.Struct("=" + "".join(_SLOT_FORMATS[s] for s in slots)).pack_into
        self.buf = ctypes.create_string_buffer(8 * len(slots))
        base = ctypes.addressof(self.buf)
        self.params = (ctypes.c_void_p * len(slots))(*(base + 8 * i for i in range(len(slots))))
        self.params_ptr = ctypes.addressof(self.params)
        self.lock = threading.Lock()    # (one buffer for all threads)

    def __call__(self, grid, block, *values, stream=None):
        """A 1-D launch of `grid` blocks of `block` threads, on the current stream or on the
        one of address `stream`."""
        with self.lock:
            self.pack(self.buf, 0, *values)
            try:
                _launch_kernel(self.handle, grid, 1, 1, block, 1, 1, 0, _stream().ptr if stream is None else stream,
                               self.params_ptr, 0)
            except cupy.cuda.driver.CUDADriverError as e:
                raise RuntimeError(f"CUDA kernel launch failed: {e} (grid {grid}, block {block})") from None


def kernel(source: str, name: str):
    """Kernel `name` of `source` (a module per file), loaded on the current device."""
    key = (source, name, _device())
    fn = _instances.get(key)
    if fn is None:
        mod = _modules.get(source)
        if mod is None:
            mod = _modules[source] = cupy.RawModule(code=_code(source), options=("--std=c++17",) + _OPTIONS.get(source, ()))
        fn = _instances[key] = Kernel(mod.get_function(name))
    return fn


def compiled(source: str, expression: str):
    """One instantiation of a template kernel of `source`, e.g. "unary<float, Exp>", compiled
    on first use (a module per instantiation: a program runs the few it uses)."""
    key = (source, expression, _device())
    fn = _instances.get(key)
    if fn is None:
        mod = cupy.RawModule(code=_code(source), options=("--std=c++17",) + _OPTIONS.get(source, ()),
                             name_expressions=(expression,))
        fn = _instances[key] = Kernel(mod.get_function(expression))
    return fn


def generated(code: str, name: str, options: tuple = ()):
    """Kernel `name` of source text made at run time (fused_chains.py's chains; its
    `#include "*.cuh"` lines pasted as for the files), compiled once per text and device."""
    key = (code, name, options, _device())
    fn = _instances.get(key)
    if fn is None:
        mod = cupy.RawModule(code=_pasted(code), options=("--std=c++17",) + options)
        fn = _instances[key] = Kernel(mod.get_function(name))
    return fn


_variants = {}       # (source, name, options, device) -> CuPy's RawKernel


def variant(source: str, name: str, options: tuple):
    """Kernel `name` of `source` compiled with extra options (-D defines choosing a variant:
    a module per option set), as CuPy's RawKernel, loaded on the current device."""
    key = (source, name, options, _device())
    fn = _variants.get(key)
    if fn is None:
        fn = _variants[key] = cupy.RawModule(code=_code(source), options=("--std=c++17",) + options
                                             ).get_function(name)
    return fn


# the name suffix of a kernel's variant per float dtype (batch_norm_f32, gelu_fwd_bf16, ...)
KERNEL_SUFFIX = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16"}

GRID_BLOCK, _MAX_BLOCKS = 256, 8192


def grid_stride(n):
    """The grid of a grid-stride kernel over n elements in blocks of GRID_BLOCK threads: one
    thread per element up to 8192 blocks (plenty to fill the GPU), then each thread strides."""
    return (min((n + GRID_BLOCK - 1) // GRID_BLOCK, _MAX_BLOCKS),)


def whole_packs(n, v, *arrays):
    """Whether n elements can go v an access (pack.cuh): n a multiple of v, and every array's
    address aligned to v of its elements."""
    return n % v == 0 and all(a.data.ptr % (v * a.itemsize) == 0 for a in arrays)


def launch(fn, n, *args, block=256):
    """One thread per element for n elements."""
    if n:
        fn(((n + block - 1) // block,), (block,), args)
