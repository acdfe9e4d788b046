"""GEMM forward+backward, paragrad vs PyTorch on the same GPU, side by side in one run.

    python bench/gemm.py [--iters 20] [--no-cpu]

For each M x K x N: y = x @ w with x (M, K) and w (K, N) requiring grad, then y.backward(g):
three GEMMs, 6*M*K*N flops. GPU times are kernel times: the whole fwd+bwd (autograd included)
is captured into one CUDA graph per framework (`--iters` steps in it) and replayed, timed with
CUDA events, median of 5 replays. So launch overhead is out and the numbers compare the GEMM
algorithms each framework picks. paragrad cpu is timed eagerly (wall clock, one step).
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time

import numpy as np

SHAPES = [(64, 768, 3072), (64, 3072, 768), (64, 768, 2304), (64, 768, 768), (32, 1024, 4096),
          (32, 4096, 1024), (4096, 4096, 4096)]


def tflops(m, k, n, ms):
    return 6 * m * k * n / (ms * 1e-3) / 1e12


def time_pg_cuda(m, k, n, precision, iters):
    import cupy

    import paragrad as pg
    pg.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    dtype = pg.bfloat16 if precision == "bf16" else pg.float32
    rng = np.random.default_rng(0)
    x = pg.tensor(rng.standard_normal((m, k)), dtype=dtype, device="cuda", requires_grad=True)
    w = pg.tensor(rng.standard_normal((k, n)) / np.sqrt(k), dtype=dtype, device="cuda", requires_grad=True)
    g = pg.tensor(rng.standard_normal((m, n)), dtype=dtype, device="cuda")

    def step():
        x.grad = w.grad = None
        (x @ w).backward(g)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for _ in range(3):
            step()
        stream.synchronize()
        stream.begin_capture()
        for _ in range(iters):
            step()
        graph = stream.end_capture()
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        times = []
        for _ in range(5):
            start.record(stream)
            graph.launch(stream)
            end.record(stream)
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end) / iters)
    pg.backends.cuda.matmul.allow_tf32 = False
    return statistics.median(times)


def time_torch(m, k, n, precision, iters):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((m, k)), dtype=dtype, device="cuda", requires_grad=True)
    w = torch.tensor(rng.standard_normal((k, n)) / np.sqrt(k), dtype=dtype, device="cuda", requires_grad=True)
    g = torch.tensor(rng.standard_normal((m, n)), dtype=dtype, device="cuda")

    def step():
        x.grad = w.grad = None
        (x @ w).backward(g)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(iters):
            step()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(5):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / iters)
    torch.backends.cuda.matmul.allow_tf32 = False
    return statistics.median(times)


def time_pg_cpu(m, k, n):
    import paragrad as pg
    rng = np.random.default_rng(0)
    x = pg.tensor(rng.standard_normal((m, k)).astype(np.float32), requires_grad=True)
    w = pg.tensor(rng.standard_normal((k, n)).astype(np.float32), requires_grad=True)
    g = pg.tensor(rng.standard_normal((m, n)).astype(np.float32))
    (x @ w).backward(g)
    reps = 1 if m * k * n > 1e9 else 20
    t0 = time.perf_counter()
    for _ in range(reps):
        x.grad = w.grad = None
        (x @ w).backward(g)
    return (time.perf_counter() - t0) / reps * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--no-cpu", action="store_true")
    p.add_argument("--precisions", default="fp32,tf32,bf16")
    args = p.parse_args()
    import cupy
    import torch

    import paragrad as pg
    print(f"command : python {' '.join(sys.argv)}")
    print(f"device  : {pg.cuda.get_device_name()} ({pg.backends.backend_for('cuda').describe()})")
    print(f"versions: paragrad {pg.__version__}, torch {torch.__version__}, cupy {cupy.__version__}, "
          f"python {platform.python_version()}")
    print("times: ms per forward+backward (3 GEMMs); TFLOP/s = 6MKN / time; ratio = paragrad / torch time")
    head = f"{'M x K x N':>16s} {'precision':>9s} {'paragrad':>9s} {'TFLOP/s':>8s} {'torch':>9s} {'TFLOP/s':>8s} {'ratio':>6s}"
    print(head)
    rows = []
    for m, k, n in SHAPES:
        if not args.no_cpu:
            t = time_pg_cpu(m, k, n)
            print(f"{f'{m}x{k}x{n}':>16s} {'cpu f32':>9s} {t:9.3f} {tflops(m, k, n, t):8.2f} {'':>9s} {'':>8s} {'':>6s}")
        for prec in args.precisions.split(","):
            iters = max(2, args.iters // (8 if m * k * n > 1e10 else 1))
            try:
                tp = time_pg_cuda(m, k, n, prec, iters)
            except Exception as e:  # noqa: BLE001 - reported in the table
                print(f"{f'{m}x{k}x{n}':>16s} {prec:>9s} failed: {type(e).__name__}: {e}")
                continue
            tt = time_torch(m, k, n, prec, iters)
            rows.append((m, k, n, prec, tp, tt))
            print(f"{f'{m}x{k}x{n}':>16s} {prec:>9s} {tp:9.4f} {tflops(m, k, n, tp):8.1f} {tt:9.4f} "
                  f"{tflops(m, k, n, tt):8.1f} {tp / tt:6.2f}")
    worst = max((tp / tt for *_, tp, tt in rows), default=float("nan"))
    print(f"worst paragrad/torch time ratio over GPU rows: {worst:.2f}")


if __name__ == "__main__":
    main()
