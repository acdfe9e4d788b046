"""Where a GPT training step's GPU time goes, kernel by kernel: paragrad and PyTorch eager side by
side on bench/gpt.py's model, weights, batch and optimizer (bf16 autocast, AdamW, clipping).

    python bench/gpt_kernels.py [--steps 5] [--top 30] [--n-layer 6 ...]

torch.profiler's CUDA activity (CUPTI) records every kernel the process launches, so paragrad's
own kernels, CuPy's, cuBLASLt's and cuDNN's show up beside PyTorch's. Each framework runs 3
warm-up steps, then --steps profiled eager steps; the table sums each kernel name's GPU time and
divides by the steps. paragrad's jitted step (what bench/gpt.py times) replays these kernels in a
CUDA graph, so its step time is about this kernel time plus the gaps between kernels.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict

import numpy as np

from gpt import load_paragrad_weights, paragrad_gpt, torch_gpt

WARMUP = 3


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


def paragrad_step(cfg, x, y):
    import paragrad as pg
    from paragrad.nn.utils.clip_grad import clip_grad_norm_
    model = paragrad_gpt(cfg, "cuda")
    model.train()
    opt = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99), "cuda")
    px, py = pg.tensor(x, device="cuda"), pg.tensor(y, device="cuda")

    def step():
        with pg.autocast("cuda", dtype=pg.bfloat16):
            _, loss = model(px, py)
        opt.zero_grad()
        loss.backward()
        clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return step, pg.cuda.synchronize


def torch_step(cfg, x, y):
    import torch
    model = load_paragrad_weights(torch_gpt(cfg), cfg, "cuda")
    model.train()
    opt = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99), "cuda")
    tx, ty = torch.tensor(x, device="cuda"), torch.tensor(y, device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            _, loss = model(tx, ty)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return step, torch.cuda.synchronize


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n-layer", type=int, default=6)
    p.add_argument("--n-head", type=int, default=6)
    p.add_argument("--n-embd", type=int, default=384)
    p.add_argument("--block-size", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--steps", type=int, default=5, help="profiled steps per framework")
    p.add_argument("--top", type=int, default=30, help="kernel names listed per framework")
    a = p.parse_args()
    import torch
    if not torch.cuda.is_available():
        sys.exit("bench/gpt_kernels.py profiles GPU kernels and needs a CUDA GPU "
                 "(torch.cuda.is_available() is False)")
    cfg = dict(n_layer=a.n_layer, n_head=a.n_head, n_embd=a.n_embd, block_size=a.block_size,
               vocab_size=65, dropout=a.dropout, bias=True)
    rng = np.random.default_rng(0)
    x, y = (rng.integers(0, 65, (a.batch_size, a.block_size)) for _ in range(2))
    print(f"command : python {' '.join(sys.argv)}")
    print(f"device  : {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"model   : GPT n_layer {a.n_layer}, n_head {a.n_head}, n_embd {a.n_embd}, block {a.block_size}, "
          f"batch {a.batch_size}, dropout {a.dropout}, bf16 autocast; {a.steps} profiled eager steps each")
    for name, make in (("paragrad", paragrad_step), ("torch eager", torch_step)):
        times = kernel_times(*make(cfg, x, y), a.steps)
        print(f"\n== {name}: kernel time {sum(times.values()):.2f} ms a step, {len(times)} kernel names")
        for kernel, ms in sorted(times.items(), key=lambda kv: -kv[1])[:a.top]:
            print(f"  {ms:7.3f} ms  {kernel[:110]}")


if __name__ == "__main__":
    main()
