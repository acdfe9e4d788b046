"""Loading the NVRTC kernels of kernels/*.cu (compiled once per machine: CuPy keeps the
binaries on disk; loaded once per process, per source file)."""
from __future__ import annotations

from pathlib import Path

import cupy

_modules = {}
_DIR = Path(__file__).parent / "kernels"
# optimizer updates and batch norm must round like the composed primitives they replace: no
# fused multiply-add
_OPTIONS = {"optim.cu": ("--fmad=false",), "batchnorm.cu": ("--fmad=false",)}


def kernel(source: str, name: str):
    mod = _modules.get(source)
    if mod is None:
        # the header pasted in: CuPy's on-disk kernel cache is keyed by the source text, which
        # must then change when the header does
        code = (_DIR / source).read_text().replace(
            '#include "block_reduce.cuh"', (_DIR / "block_reduce.cuh").read_text().replace("#pragma once", ""))
        options = ("--std=c++17",) + _OPTIONS.get(source, ())
        mod = _modules[source] = cupy.RawModule(code=code, options=options)
    return mod.get_function(name)


def launch(fn, n, *args, block=256):
    """One thread per element for n elements."""
    if n:
        fn(((n + block - 1) // block,), (block,), args)
