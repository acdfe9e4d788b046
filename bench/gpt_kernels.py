"""Where a GPT training step's GPU time goes, kernel by kernel: paragrad, PyTorch eager and
torch.compile side by side on bench/gpt.py's model, weights, batch and optimizer (bf16
autocast, AdamW, clipping).

    python bench/gpt_kernels.py [--steps 5] [--top 30] [--n-layer 6 ...]

torch.profiler's CUDA activity (CUPTI) records every kernel the process launches, so paragrad's
own kernels, CuPy's, cuBLASLt's and cuDNN's show up beside PyTorch's. Each framework runs 3
warm-up steps, then --steps profiled eager steps; the table sums each kernel name's GPU time and
divides by the steps (torch.compile compiles during its warm-up). paragrad's jitted step (what
bench/gpt.py times) replays these kernels in a CUDA graph, so its step time is about this kernel
time plus the gaps between kernels. Each table's first line also gives the time in the matrix
products and attention (cuBLAS and cuDNN kernels, which all three frameworks call): the part
that fusing the other ops can't shrink.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict

import numpy as np

from gpt import add_model_arguments, model_config, paragrad_step, parse_arguments, torch_step

WARMUP = 3
VOCAB = 65          # shakespeare's characters; random tokens (kernel times don't depend on them)


def kernel_times(run_step, sync, steps):
    """{kernel name: GPU ms per step} over `steps` calls of run_step() (after WARMUP untimed)."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(WARMUP):
        run_step()
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            run_step()
        sync()
    times = defaultdict(float)
    for event in prof.key_averages():
        if event.device_type.name == "CUDA" and event.device_time_total > 0:
            times[event.key] += event.device_time_total / 1e3 / steps      # us -> ms a step
    return times


_LIBRARY_KERNELS = ("nvjet", "cutlass", "cublas", "cudnn", "gemm", "sdpa")


def library_time(times):
    """ms a step in cuBLAS and cuDNN kernels (GEMMs, attention and their helpers)."""
    return sum(ms for k, ms in times.items() if any(n in k.lower() for n in _LIBRARY_KERNELS))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_arguments(p)
    p.add_argument("--steps", type=int, default=5, help="profiled steps per framework")
    p.add_argument("--top", type=int, default=30, help="kernel names listed per framework")
    a = parse_arguments(p)
    import torch
    if not torch.cuda.is_available():
        sys.exit("bench/gpt_kernels.py profiles GPU kernels and needs a CUDA GPU "
                 "(torch.cuda.is_available() is False)")
    import paragrad as pg
    cfg = model_config(a, VOCAB)
    rng = np.random.default_rng(0)
    x, y = (rng.integers(0, VOCAB, (a.batch_size, a.block_size)) for _ in range(2))
    print(f"command : python {' '.join(sys.argv)}")
    print(f"device  : {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"model   : GPT n_layer {a.n_layer}, n_head {a.n_head}, n_embd {a.n_embd}, block {a.block_size}, "
          f"batch {a.batch_size}, dropout {a.dropout}, bf16 autocast; {a.steps} profiled eager steps each")
    _, pstep = paragrad_step(cfg, "cuda", bf16=True)
    px, py = pg.tensor(x, device="cuda"), pg.tensor(y, device="cuda")
    _, _, tstep = torch_step(cfg, "cuda", bf16=True)
    tx, ty = torch.tensor(x, device="cuda"), torch.tensor(y, device="cuda")
    _, _, cstep = torch_step(cfg, "cuda", bf16=True, compiled=True)
    tables = [("paragrad", kernel_times(lambda: pstep(px, py), pg.cuda.synchronize, a.steps)),
              ("torch eager", kernel_times(lambda: tstep(tx, ty), torch.cuda.synchronize, a.steps)),
              ("torch.compile", kernel_times(lambda: cstep(tx, ty), torch.cuda.synchronize, a.steps))]
    for name, times in tables:
        print(f"\n== {name}: kernel time {sum(times.values()):.2f} ms a step ({library_time(times):.2f} in "
              f"cuBLAS/cuDNN), {len(times)} kernel names")
        for kernel, ms in sorted(times.items(), key=lambda kv: -kv[1])[:a.top]:
            print(f"  {ms:7.3f} ms  {kernel[:110]}")


if __name__ == "__main__":
    main()
