"""Loading the NVRTC kernels of kernels/*.cu (compiled once per process, per source file)."""
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
        code = (_DIR / source).read_text()
        options = ("--std=c++17", f"--include-path={_DIR}") + _OPTIONS.get(source, ())   # (block_reduce.cuh)
        mod = _modules[source] = cupy.RawModule(code=code, options=options)
    return mod.get_function(name)


def launch(fn, n, *args, block=256):
    """One thread per element for n elements."""
    if n:
        fn(((n + block - 1) // block,), (block,), args)
