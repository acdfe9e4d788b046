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

    ta, tb, tbias = torch.rand(32, 64, device="cuda"), torch.rand(32, 64, device="cuda"), torch.rand(64, device="cuda")
    ga, gb, gbias = (pg.tensor(x.get(), device="cuda") for x in (a, b, bias))
    rows = [
        ("cupy.add(a, b)", lambda: cupy.add(a, b), sync_cp),
        ("cupy.add(a, b, out=c)", lambda: cupy.add(a, b, out=c), sync_cp),
        ("cupy.add(a, bias)", lambda: cupy.add(a, bias), sync_cp),
        ("ElementwiseKernel(a, b, c)", lambda: add_kernel(a, b, c), sync_cp),
        ("RawKernel launch", lambda: raw((8,), (256,), (a, b, c, n)), sync_cp),
        ("driver launchKernel (ctypes)", driver_launch, sync_cp),
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
    print(f"command : python {' '.join(sys.argv)}")
    print(f"device  : {torch.cuda.get_device_name()}, cupy {cupy.__version__}, torch {torch.__version__}, "
          f"paragrad {pg.__version__}")
    for name, fn, sync in rows:
        print(f"{name:32s} {_time(fn, 3000, sync):8.2f} us")


if __name__ == "__main__":
    main()
