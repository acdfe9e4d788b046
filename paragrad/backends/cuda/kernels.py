"""Loading the NVRTC kernels of kernels/*.cu (compiled once per process, per source file)."""
from __future__ import annotations

from pathlib import Path

import cupy

_modules = {}
_DIR = Path(__file__).parent / "kernels"
# optimizer updates and batch norm must round like the composed primitives they replace: no
# fused multiply-add
_OPTIONS = {"optim.cu": ("--std=c++17", "--fmad=false"), "batchnorm.cu": ("--std=c++17", "--fmad=false")}


def kernel(source: str, name: str):
    mod = _modules.get(source)
    if mod is None:
        code = (_DIR / source).read_text()
        mod = _modules[source] = cupy.RawModule(code=code, options=_OPTIONS.get(source, ("--std=c++17",)))
    return mod.get_function(name)


def launch(fn, n, *args, block=256):
    """One thread per element for n elements."""
    if n:
        fn(((n + block - 1) // block,), (block,), args)
