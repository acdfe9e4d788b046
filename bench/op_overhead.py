"""Time per op: paragrad vs PyTorch, side by side in one run: a tiny add and matmul, forward
only and forward+backward; two ops of issue 14 whose kernels were the cost (pow(x, 3.0) and an
embedding's forward+backward); the ops a training script calls most (mul with and without
grad, a view, x[idx], a reduction, cross-entropy); and the tiny-op host path of nanoGPT-style
data loading (`torch.stack([data[i:i+8] for i in ix])` and its parts: iterating a tensor, a
slice with 0-d tensor bounds, `i + 8`, `int(i)`, stack/cat of 32 pieces, `tensor(list)`).

    python bench/op_overhead.py [--repeat 2000] [--rounds 1] [--device cpu|cuda] [--json PATH]

On the GPU (eager, no graphs) each timed batch ends with a device synchronization, so a
figure is the larger of the host's and the device's time per op.

Tiny tensors make the arithmetic negligible, so most figures are the framework's own per-op
cost: argument checks, dtype promotion, tensor creation, graph recording and the backward
engine. Each figure is the median over several timed batches; with --rounds N, each case is
timed N times per framework, the two alternating, and each keeps its fastest: on a host whose
speed swings from one moment to the next (the 2-core CI machine), a slow spell then moves one
round, not the ratio.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np


def _time(fn, repeat, sync, batches=7):
    for _ in range(max(repeat // 10, 10)):   # warm-up
        fn()
    sync()
    per = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        sync()
        per.append((time.perf_counter() - t0) / repeat * 1e6)
    return statistics.median(per)


def cases(lib, device):
    """(name, fn) pairs for one library; lib is paragrad or torch (same API)."""
    rng = np.random.default_rng(0)
    a = lib.tensor(rng.standard_normal((4, 4)).astype(np.float32), device=device)
    b = lib.tensor(rng.standard_normal((4, 4)).astype(np.float32), device=device)
    ag = a.detach().clone().requires_grad_()
    bg = b.detach().clone().requires_grad_()

    def add_fwd():
        return a + b

    def mm_fwd():
        return a @ b

    def add_fwd_bwd():
        (ag + bg).sum().backward()

    def mm_fwd_bwd():
        (ag @ bg).sum().backward()

    x = lib.tensor(rng.standard_normal((32, 16, 256)).astype(np.float32), device=device)   # (B, T, C)
    emb = lib.nn.Embedding(27, 64).to(device)                                 # (V, D)
    ids = lib.tensor(rng.integers(0, 27, (32, 16)), device=device)            # (B, T) int64

    def pow3_fwd():
        return lib.pow(x, 3.0)

    def emb_fwd_bwd():
        emb(ids).sum().backward()

    # The rest of the issue-36 rows: the ops a training script calls most, with and without grad.
    logits = lib.tensor(rng.standard_normal((32, 27)).astype(np.float32), device=device,
                        requires_grad=True)                                   # (B, V)
    targets = lib.tensor(rng.integers(0, 27, 32), device=device)              # (B,)
    rows = lib.tensor(np.array([0, 2, 3]), device=device)

    def mul_fwd():
        return a * b

    def mul_grad_fwd():
        return ag * bg

    def view():
        return a.view(16)

    def index():
        return a[rows]

    def reduce_sum():
        return a.sum(1)

    def cross_entropy_fwd_bwd():
        lib.nn.functional.cross_entropy(logits, targets).backward()

    return [("add (4x4) forward", add_fwd), ("matmul (4x4) forward", mm_fwd),
            ("add + sum, forward+backward", add_fwd_bwd), ("matmul + sum, forward+backward", mm_fwd_bwd),
            ("pow(x, 3.0) (32x16x256) forward", pow3_fwd),
            ("embedding 27x64[32x16] fwd+bwd", emb_fwd_bwd),
            ("mul (4x4) forward", mul_fwd), ("mul (4x4) with grad, forward", mul_grad_fwd),
            ("view (4x4 -> 16)", view), ("index a[tensor of 3]", index),
            ("sum over dim 1 (4x4)", reduce_sum),
            ("cross_entropy (32x27) fwd+bwd", cross_entropy_fwd_bwd)] + tiny_cases(lib, device)


def tiny_cases(lib, device):
    """The tiny-op host path: the data-loading idiom of nanoGPT-style scripts and its parts."""
    data = lib.tensor(np.random.default_rng(1).integers(0, 65, 10_000), device=device)   # (N,)
    gen = lib.Generator(device=device) if device == "cuda" else lib.Generator()
    gen.manual_seed(0)
    ix = lib.randint(len(data) - 8, (32,), generator=gen, device=device)              # (32,)
    i = ix[0]                                                                          # 0-d
    rows = [data[j:j + 8] for j in range(0, 256, 8)]
    values = [float(v) for v in range(32)]

    def idiom():   # get_batch: 32 windows of 8 tokens, stacked
        return lib.stack([data[j:j + 8] for j in ix])

    def iterate():
        return list(ix)

    def slice_0d():
        return data[i:i + 8]

    def add_0d():
        return i + 8

    def index_0d():
        return int(i)

    def stack_rows():
        return lib.stack(rows)

    def cat_rows():
        return lib.cat(rows)

    def tensor_list():
        return lib.tensor(values, device=device)

    return [("idiom: stack([data[i:i+8] for i in ix])", idiom),
            ("iterate a 32-element tensor", iterate), ("data[i:i+8], i a 0-d tensor", slice_0d),
            ("i + 8, i a 0-d tensor", add_0d), ("int(i), i a 0-d tensor", index_0d),
            ("stack of 32 rows of 8", stack_rows), ("cat of 32 rows of 8", cat_rows),
            ("tensor(list of 32 floats)", tensor_list)]


def best_of_rounds(rounds, time_a, time_b):
    """(a's fastest, b's fastest) over `rounds` timings of each, alternating which goes first."""
    best = [float("inf"), float("inf")]
    for r in range(rounds):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            best[i] = min(best[i], (time_a, time_b)[i]())
    return best[0], best[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=2000)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--rounds", type=int, default=1, help="times each case is timed per framework, "
                   "alternating; each keeps its fastest (default 1)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the rows to this file "
                   "(bench/plot.py draws docs/benchmarks/ops.png from bench/results/op_overhead_*.json)")
    args = p.parse_args()
    import torch

    import paragrad
    torch.set_num_threads(1)
    gpu = args.device == "cuda"
    sync_pg = paragrad.cuda.synchronize if gpu else (lambda: None)
    sync_t = torch.cuda.synchronize if gpu else (lambda: None)
    if args.rounds < 1:
        p.error(f"--rounds must be at least 1, got {args.rounds}")
    rows = []
    for (name, f_pg), (_, f_t) in zip(cases(paragrad, args.device), cases(torch, args.device)):
        rows.append((name, *best_of_rounds(args.rounds, lambda: _time(f_pg, args.repeat, sync_pg),
                                           lambda: _time(f_t, args.repeat, sync_t))))
    print(f"command : python {' '.join(sys.argv)}")
    if args.rounds > 1:
        print(f"rounds  : {args.rounds} per case and framework, alternating; each figure its fastest")
    print(f"machine : {platform.processor() or platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}, paragrad {paragrad.__version__}, torch {torch.__version__}, "
          f"numpy {np.__version__}")
    if gpu:
        print(f"device  : {torch.cuda.get_device_name()} (eager, synchronized per batch)")
    print(f"{'case':42s} {'paragrad us':>12s} {'torch us':>10s} {'ratio':>7s}")
    for name, tp, tt in rows:
        print(f"{name:42s} {tp:12.2f} {tt:10.2f} {tp / tt:7.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": "bench/op_overhead.py " + " ".join(sys.argv[1:]), "device": args.device,
                       "device_name": torch.cuda.get_device_name() if gpu else platform.processor() or "cpu",
                       "versions": {"paragrad": paragrad.__version__, "torch": torch.__version__},
                       "rows": [{"case": n, "paragrad_us": tp, "torch_us": tt} for n, tp, tt in rows]}, f, indent=1)


if __name__ == "__main__":
    main()
