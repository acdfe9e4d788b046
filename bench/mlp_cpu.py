"""One MNIST-MLP training step (forward, cross-entropy, backward, Adam; batch 64) on the CPU:
paragrad vs PyTorch, side by side in one run, on the same data and initial weights.

    python bench/mlp_cpu.py [--steps 200]

Prints the median milliseconds per step for 784-256-128-10 and 784-784-784-784-10; the two
frameworks are timed in alternating rounds.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

SIZES = {"784-256-128-10": (784, 256, 128, 10), "784-784-784-784-10": (784, 784, 784, 784, 10)}


def make_step(lib, sizes, batch, seed=0):
    """A training-step closure for paragrad or torch (same API), weights from one NumPy RNG."""
    rng = np.random.default_rng(seed)
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        lin = lib.nn.Linear(a, b)
        with lib.no_grad():
            bound = 1 / np.sqrt(a)
            lin.weight.copy_(lib.tensor(rng.uniform(-bound, bound, (b, a)).astype(np.float32)))
            lin.bias.copy_(lib.tensor(rng.uniform(-bound, bound, (b,)).astype(np.float32)))
        layers += [lin, lib.nn.ReLU()]
    model = lib.nn.Sequential(*layers[:-1])
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    xs = [lib.tensor(rng.standard_normal((batch, sizes[0])).astype(np.float32)) for _ in range(8)]
    ys = [lib.tensor(rng.integers(0, sizes[-1], batch)) for _ in range(8)]
    state = {"i": 0}

    def step():
        i = state["i"] = (state["i"] + 1) % len(xs)
        loss = lib.nn.functional.cross_entropy(model(xs[i]), ys[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def time_steps(step_a, step_b, steps, rounds=10):
    """Median ms per step of two step functions, timed in alternating rounds so that drift in
    the machine's speed (other tenants, clocks) hits both alike."""
    for _ in range(max(steps // 10, 5)):
        step_a()
        step_b()
    times = ([], [])
    for _ in range(rounds):
        for step, out in ((step_a, times[0]), (step_b, times[1])):
            for _ in range(max(steps // rounds, 1)):
                t0 = time.perf_counter()
                step()
                out.append(time.perf_counter() - t0)
    return tuple(statistics.median(t) * 1e3 for t in times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args()
    import torch

    import paragrad
    print(f"command : python {' '.join(sys.argv)}")
    print(f"machine : {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"paragrad {paragrad.__version__}, torch {torch.__version__} ({torch.get_num_threads()} threads), "
          f"numpy {np.__version__}")
    print(f"{'model':22s} {'paragrad ms':>12s} {'torch ms':>10s} {'paragrad/torch':>15s}")
    for name, sizes in SIZES.items():
        tp, tt = time_steps(make_step(paragrad, sizes, args.batch), make_step(torch, sizes, args.batch),
                            args.steps)
        print(f"{name:22s} {tp:12.2f} {tt:10.2f} {tp / tt:14.2f}x")


if __name__ == "__main__":
    main()
