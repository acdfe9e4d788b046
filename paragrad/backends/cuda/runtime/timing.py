"""GPU time of a few calls, without the host's launch overhead: what an autotuner (cuBLASLt vs
small_gemm in matmul/mlp.py, cuDNN plans under pg.backends.cudnn.benchmark) must compare, since the
chosen kernel later runs inside a CUDA graph, where host overhead is gone."""
from __future__ import annotations

import time

import cupy

_spin = cupy.RawKernel(r"""extern "C" __global__ void pg_spin(long long cycles) {
    long long t0 = clock64(); while (clock64() - t0 < cycles) {} }""", "pg_spin")


def gpu_time(fn, repeats=5):
    """GPU milliseconds of `repeats` calls of fn(), after two warm-up calls (plans, autotuning):
    a spinning kernel queued first keeps the GPU busy while the host queues every repeat, so
    host overhead between launches isn't counted. The spin lasts twice the host time of the
    repeats, in cycles of a 2 GHz clock (H100/H200 run below that, which only lengthens it).
    Timing the calls between two events without the spin measures the host instead whenever a
    kernel is shorter than its launch (tens of microseconds from Python)."""
    fn()
    t0 = time.perf_counter()
    fn()
    host = time.perf_counter() - t0
    stream = cupy.cuda.get_current_stream()
    _spin((1,), (1,), (cupy.int64(int(2 * repeats * host * 2e9)),))
    start = stream.record()
    for _ in range(repeats):
        fn()
    end = stream.record()
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end)
