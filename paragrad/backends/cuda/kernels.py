"""Loading the NVRTC kernels of kernels/*.cu (compiled once per machine: CuPy keeps the
binaries on disk; loaded once per process, per source file)."""
from __future__ import annotations

from pathlib import Path

import cupy

_modules = {}
_instances = {}       # (source, template instantiation) -> kernel
_DIR = Path(__file__).parent / "kernels"
# optimizer updates, batch norm and the elementwise kernels must round like the composed
# primitives (or ufuncs) they replace: no fused multiply-add
_OPTIONS = {"optim.cu": ("--fmad=false",), "batchnorm.cu": ("--fmad=false",),
            "elementwise.cu": ("--fmad=false",), "recurrent.cu": ("--fmad=false",)}


def _code(source):
    # the header pasted in: CuPy's on-disk kernel cache is keyed by the source text, which
    # must then change when the header does
    return (_DIR / source).read_text().replace(
        '#include "block_reduce.cuh"', (_DIR / "block_reduce.cuh").read_text().replace("#pragma once", ""))


def kernel(source: str, name: str):
    mod = _modules.get(source)
    if mod is None:
        mod = _modules[source] = cupy.RawModule(code=_code(source), options=("--std=c++17",) + _OPTIONS.get(source, ()))
    return mod.get_function(name)


def compiled(source: str, expression: str):
    """One instantiation of a template kernel of `source`, e.g. "unary<float, Exp>", compiled
    on first use (a module per instantiation: a program runs the few it uses)."""
    fn = _instances.get((source, expression))
    if fn is None:
        mod = cupy.RawModule(code=_code(source), options=("--std=c++17",) + _OPTIONS.get(source, ()),
                             name_expressions=(expression,))
        fn = _instances[source, expression] = mod.get_function(expression)
    return fn


def launch(fn, n, *args, block=256):
    """One thread per element for n elements."""
    if n:
        fn(((n + block - 1) // block,), (block,), args)


def c_contiguous(x):
    """x itself where it is C-contiguous (an attribute test), else a C-ordered copy: what a raw
    launch reads. cupy.ascontiguousarray spends microseconds of host time even when it returns
    its input."""
    return x if x._c_contiguous else cupy.ascontiguousarray(x)
