"""Host time of one small CUDA call, by the ways paragrad could make it: a CuPy ufunc, an
ElementwiseKernel, a RawKernel launch, the driver's launchKernel, an allocation; and the same
op through torch and through paragrad. Where paragrad's per-op time on the GPU goes, in us.

    python bench/cuda_launch.py

32x64 float32 operands: the arithmetic is nothing, every figure is host cost (each batch of
calls ends with a device synchronization, so a figure is the larger of host and device time).
"""
from __future__ import annotations

import ctypes
import sys

import cupy
import numpy as np
import torch

import paragrad as pg
from op_overhead import _time


def main():
    sync_cp, sync_t = cupy.cuda.Device().synchronize, torch.cuda.synchronize
    a, b = cupy.random.rand(32, 64, dtype=cupy.float32), cupy.random.rand(32, 64, dtype=cupy.float32)
    c, bias = cupy.empty_like(a), cupy.random.rand(64, dtype=cupy.float32)
    add_kernel = cupy.ElementwiseKernel("T x, T y", "T z", "z = x + y", "bench_add")
    raw = cupy.RawKernel(r'''extern "C" __global__ void bench_radd(const float* a, const float* b, float* c,
        long long n) { long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }''',
                         "bench_radd")
    n = np.int64(a.size)
    pa, pb, pc, pn = (ctypes.c_void_p(a.data.ptr), ctypes.c_void_p(b.data.ptr), ctypes.c_void_p(c.data.ptr),
                      ctypes.c_longlong(a.size))

    def driver_launch():        # the arguments packed by hand, no CuPy in between
        args = (ctypes.c_void_p * 4)(*(ctypes.addressof(p) for p in (pa, pb, pc, pn)))
        cupy.cuda.driver.launchKernel(raw.kernel.ptr, 8, 1, 1, 256, 1, 1, 0, 0, ctypes.addressof(args), 0)

    cu_launch = ctypes.CDLL("libcuda.so.1").cuLaunchKernel     # ctypes, argument types declared once
    cu_launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    cu_launch.restype = ctypes.c_int
    packed_args = (ctypes.c_void_p * 4)(*(ctypes.addressof(p) for p in (pa, pb, pc, pn)))
    packed_address, function_ptr = ctypes.addressof(packed_args), raw.kernel.ptr

    def ctypes_launch():
        cu_launch(function_ptr, 8, 1, 1, 256, 1, 1, 0, None, packed_address, None)

    def cupy_driver_launch():   # CuPy's typed wrapper of cuLaunchKernel, the arguments packed once
        cupy.cuda.driver.launchKernel(function_ptr, 8, 1, 1, 256, 1, 1, 0, 0, packed_address, 0)

    def current_stream():
        return cupy.cuda.get_current_stream().ptr

    from paragrad.backends.cuda.runtime.compile import Kernel
    packed_kernel = Kernel(raw)             # paragrad's launcher around the same kernel
    launches = []
    try:        # the driver's launch through cuda-python, the arguments packed once
        from cuda.bindings import driver as cu
        function = cu.CUfunction(raw.kernel.ptr)
        packed = (ctypes.c_void_p * 4)(*(ctypes.addressof(p) for p in (pa, pb, pc, pn)))
        address = ctypes.addressof(packed)

        def bindings_launch():
            cu.cuLaunchKernel(function, 8, 1, 1, 256, 1, 1, 0, 0, address, 0)

        def bindings_launch_repacked():     # new buffers each call: the pointers rewritten
            pa.value, pb.value, pc.value = a.data.ptr, b.data.ptr, c.data.ptr
            cu.cuLaunchKernel(function, 8, 1, 1, 256, 1, 1, 0, 0, address, 0)
        c.fill(0)
        bindings_launch()
        sync_cp()
        assert cupy.allclose(c, a + b), "cuLaunchKernel through cuda.bindings computed something else"
        launches = [("cuda.bindings cuLaunchKernel", bindings_launch, sync_cp),
                    ("cuda.bindings, pointers rewritten", bindings_launch_repacked, sync_cp)]
    except Exception as e:      # (cuda-python missing or another API version: say so)
        print(f"cuda.bindings launch not measured: {type(e).__name__}: {e}")

    ta, tb, tbias = torch.rand(32, 64, device="cuda"), torch.rand(32, 64, device="cuda"), torch.rand(64, device="cuda")
    ga, gb, gbias = (pg.tensor(x.get(), device="cuda") for x in (a, b, bias))
    rows = [
        ("cupy.add(a, b)", lambda: cupy.add(a, b), sync_cp),
        ("cupy.add(a, b, out=c)", lambda: cupy.add(a, b, out=c), sync_cp),
        ("cupy.add(a, bias)", lambda: cupy.add(a, bias), sync_cp),
        ("ElementwiseKernel(a, b, c)", lambda: add_kernel(a, b, c), sync_cp),
        ("RawKernel launch", lambda: raw((8,), (256,), (a, b, c, n)), sync_cp),
        ("driver launchKernel (ctypes)", driver_launch, sync_cp),
        ("ctypes cuLaunchKernel, types declared", ctypes_launch, sync_cp),
        ("cupy driver.launchKernel, packed once", cupy_driver_launch, sync_cp),
        ("cupy current stream's pointer", current_stream, sync_cp),
        *launches,
        ("paragrad Kernel (packed launch)", lambda: packed_kernel((8,), (256,), (a, b, c, n)), sync_cp),
        ("cupy.empty", lambda: cupy.empty((32, 64), cupy.float32), sync_cp),
        ("torch a + b", lambda: ta + tb, sync_t),
        ("torch a + bias", lambda: ta + tbias, sync_t),
        ("torch sigmoid", lambda: ta.sigmoid(), sync_t),
        ("torch empty", lambda: torch.empty(32, 64, device="cuda"), sync_t),
        ("paragrad a + b", lambda: ga + gb, sync_cp),
        ("paragrad a + bias", lambda: ga + gbias, sync_cp),
        ("paragrad sigmoid", lambda: ga.sigmoid(), sync_cp),
        ("paragrad a * 2.0", lambda: ga * 2.0, sync_cp),
    ]
    rows += gemm_rows(sync_cp, sync_t)
    print(f"command : python {' '.join(sys.argv)}")
    print(f"device  : {torch.cuda.get_device_name()}, cupy {cupy.__version__}, torch {torch.__version__}, "
          f"paragrad {pg.__version__}")
    for name, fn, sync in rows:
        print(f"{name:32s} {_time(fn, 3000, sync):8.2f} us")


def gemm_rows(sync_cp, sync_t):
    """A (512, 64) @ (64, 256) float32 product (a Linear over a batch of sequences) by each
    path: cuBLAS's gemm_strided_batched_ex (what paragrad calls), cuBLASLt's matmul with the
    descriptors and the algorithm chosen once (no per-call heuristics), paragrad's backend
    GEMM, paragrad's a @ b, torch's."""
    from nvmath.bindings import cublas, cublasLt

    from paragrad.backends.cuda.matmul import cublas as gemm

    m, k, n = 512, 64, 256
    a, b = cupy.random.rand(m, k, dtype=cupy.float32), cupy.random.rand(k, n, dtype=cupy.float32)
    c = cupy.empty((m, n), cupy.float32)
    one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)
    h = gemm.handle()
    compute = cublas.ComputeType.COMPUTE_32F

    def strided():
        cublas.gemm_strided_batched_ex(h, cublas.Operation.N, cublas.Operation.N, n, m, k, one.ctypes.data,
                                       b.data.ptr, 0, n, 0, a.data.ptr, 0, k, 0, zero.ctypes.data,
                                       c.data.ptr, 0, n, m * n, 1, compute, -1)

    # cuBLASLt, column-major: C^T (n, m) = B^T (n, k) @ A^T (k, m)
    lh = cublasLt.create()
    desc = cublasLt.matmul_desc_create(compute, 0)
    bd, ad, cd = (cublasLt.matrix_layout_create(0, n, k, n), cublasLt.matrix_layout_create(0, k, m, k),
                  cublasLt.matrix_layout_create(0, n, m, n))
    pref = cublasLt.matmul_preference_create()
    ws_size = np.array([4 << 20], np.uint64)
    cublasLt.matmul_preference_set_attribute(pref, cublasLt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES,
                                             ws_size.ctypes.data, 8)
    found = cublasLt.MatmulHeuristicResult(1)
    count = np.zeros(1, np.int32)
    cublasLt.matmul_algo_get_heuristic(lh, desc, bd, ad, cd, cd, pref, 1, found.ptr, count.ctypes.data)
    ws = cupy.empty(4 << 20, cupy.uint8)
    stream = cupy.cuda.get_current_stream().ptr

    def lt():
        cublasLt.matmul(lh, desc, one.ctypes.data, b.data.ptr, bd, a.data.ptr, ad, zero.ctypes.data,
                        c.data.ptr, cd, c.data.ptr, cd, found.ptr, ws.data.ptr, 4 << 20, stream)

    lt()
    sync_cp()
    assert cupy.allclose(c, a @ b, rtol=1e-3, atol=1e-3), "cuBLASLt product differs"
    ta, tb = torch.rand(m, k, device="cuda"), torch.rand(k, n, device="cuda")
    ga, gb = pg.tensor(a.get(), device="cuda"), pg.tensor(b.get(), device="cuda")
    return [("cuBLAS gemm_strided_batched_ex", strided, sync_cp),
            ("cuBLASLt matmul, algo cached", lt, sync_cp),
            ("paragrad backend gemm.matmul", lambda: gemm.matmul(a, b), sync_cp),
            ("paragrad gemm.matmul(out=)", lambda: gemm.matmul(a, b, c), sync_cp),
            ("paragrad a @ b (512x64 @ 64x256)", lambda: ga @ gb, sync_cp),
            ("torch a @ b (512x64 @ 64x256)", lambda: ta @ tb, sync_t)]


if __name__ == "__main__":
    main()
