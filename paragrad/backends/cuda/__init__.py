"""The CUDA backend: CuPy for memory and elementwise work, cuBLAS through nvmath-python for
GEMMs, NVRTC kernels (kernels/*.cu) for fused ops.

backend.py holds the primitives; runtime/ the device plumbing (memory pool, CUDA graphs, GPU
timing, the machine cache, the NVRTC loader); matmul/ the GEMMs; cudnn_frontend.py cuDNN's
convolutions and attention; kernels/ one .py + .cu pair per fused kernel.

This package imports nothing from CuPy itself, so the switches below can be set on any
machine (`pg.backends.cuda.matmul.allow_tf32 = True`, as PyTorch's). The backend class lives
in `backend.py` and is imported when a tensor first asks for device 'cuda'.
"""
import os

from ...cache_folder import cache_root


# CuPy reads its kernel cache folder when it starts: point it at ours before anything imports
# CuPy, so NVRTC kernels compile once per machine there (an explicit CUPY_CACHE_DIR wins)
os.environ.setdefault("CUPY_CACHE_DIR", str(cache_root() / "kernels"))


# the GEMM switches (matmul/__init__.py: no CuPy import), e.g. pg.backends.cuda.matmul.allow_tf32
from . import matmul  # noqa: E402,F401
