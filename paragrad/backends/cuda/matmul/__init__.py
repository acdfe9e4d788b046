"""The CUDA backend's GEMMs, and the switch every float32 GEMM reads.

cublas.py (cuBLAS through nvmath's bindings: the matmul primitive), cublaslt.py (cuBLASLt
GEMMs with fused bias/activation epilogues: linear_act), small_gemm.py + small_gemm.cu (NVRTC
GEMMs for batches of at most 64 rows), mlp.py (a chain of linear layers, choosing between the
two by timing), conv_gemm.py (small-map convolutions as one dense GEMM).

This module itself imports no CuPy: `pg.backends.cuda.matmul.allow_tf32 = True` works on any
machine, as PyTorch's.
"""

# float32 GEMMs (and cuDNN convolutions) may use TF32 tensor cores (off by default, as in PyTorch)
allow_tf32 = False
