"""The CUDA backend: CuPy for memory and elementwise work, cuBLAS through nvmath-python for
GEMMs, NVRTC kernels (kernels/*.cu) for fused ops.

This package imports nothing from CuPy itself, so the switches below can be set on any
machine (`pg.backends.cuda.matmul.allow_tf32 = True`, as PyTorch's). The backend class lives
in `backend.py` and is imported when a tensor first asks for device 'cuda'.
"""


class _MatmulFlags:
    """allow_tf32: float32 GEMMs may use TF32 tensor cores (off by default, as in PyTorch)."""

    allow_tf32 = False


matmul = _MatmulFlags()
