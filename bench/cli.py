"""`paragrad train mnist` from the command line vs the same training as a hand-written PyTorch
script, each a fresh process, side by side in one run.

    python bench/cli.py [--models mlp cnn] [--epochs 2] [--repeats 1] [--warm] [--data-dir DIR]
                        [--json PATH] [--device cuda]

Each model (mlp: 784-256-128-10 with ReLU; cnn: paragrad.models.MNISTCNN) is trained twice:
  - paragrad: `python -m paragrad train mnist --model M --device cuda --epochs 2 --precision fp32
    --out TMP --overwrite --data-dir DIR`, the CLI with its other defaults (pg.jit on the GPU: one
    CUDA graph per step; Adam lr 1e-3, weight decay 0, cosine decay stepped every batch, batch 64,
    seed 0);
  - torch: TORCH_SCRIPT below, written to a temporary file and run with the same interpreter. It
    does the CLI's work in eager PyTorch without importing paragrad: MNIST read with NumPy from the
    IDX files and normalized (mean 0.1307, std 0.3081), both splits uploaded to the device once;
    the same models, optimizer and schedule; each epoch a permutation drawn on the host from a
    seeded torch.Generator and uploaded, batches gathered on the device (images[idx]), the last
    partial batch kept (938 steps per epoch); the loss summed on the device and read on the host
    every 100 steps; test accuracy in batches of 500 under no_grad with one host read; a weights
    finiteness check; per epoch a checkpoint (torch.save of model, optimizer, scheduler and
    generator state), metrics.jsonl and curves.png (when matplotlib is there), as the CLI writes.
    What it leaves out: the CLI's per-step count of finite losses (two tiny device ops a step).
float32 throughout (TF32 off in both, paragrad's default). Timings per run:
  - wall s: the whole process (time.perf_counter around subprocess.run): interpreter start,
    imports, GPU initialisation, data loading, kernel compiles and plans, training, checkpoints;
  - epoch N s: what the process prints, "epoch N: ..., Zs" (read from its metrics.jsonl, which
    holds the same figure to the millisecond): from drawing the epoch's order to the test
    accuracy on the host, training and evaluation together;
  - samples/s: training images per epoch over that epoch time; train samples/s: metrics.jsonl's
    samples_per_second, training images over the training loop alone.
Each configuration runs --repeats times (the table shows medians). paragrad keeps compiled kernels
and timed GEMM choices per machine under $PARAGRAD_CACHE (default ~/.cache/paragrad), and PyTorch
its own caches, so the first run on a fresh machine pays compiles the next ones don't: --warm runs
each configuration once untimed first, to time warm caches. A run that fails prints an error row
with the end of its stderr and the benchmark goes on.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from common import default_data_dir, print_header, version

REPO = Path(__file__).resolve().parent.parent
MODELS = ("mlp", "cnn")
FRAMEWORKS = ("paragrad", "torch")
TRAIN_IMAGES, TEST_IMAGES = 60000, 10000
EPOCH_LINE = re.compile(r"^epoch (\d+): train loss (\S+), test accuracy ([\d.]+)%, ([\d.]+)s$", re.M)

TORCH_SCRIPT = r'''"""MNIST training in eager PyTorch, the work of `paragrad train mnist` (written by bench/cli.py)."""
import argparse, gzip, json, sys, time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, LR, SEED, MEAN, STD = 64, 1e-3, 0, 0.1307, 0.3081


def read_idx(folder, name):
    gz, raw = folder / (name + ".gz"), folder / name
    data = gzip.open(gz).read() if gz.exists() else raw.read_bytes()
    magic, count = int.from_bytes(data[:4], "big"), int.from_bytes(data[4:8], "big")
    arr = np.frombuffer(data, np.uint8, offset=16 if magic == 2051 else 8)
    return arr.reshape(count, 28, 28) if magic == 2051 else arr


def load(folder, split, limit, device):
    """(N, 1, 28, 28) float32 normalized images and int64 labels, on the device."""
    images = read_idx(folder, f"{split}-images-idx3-ubyte")[:limit]
    labels = read_idx(folder, f"{split}-labels-idx1-ubyte")[:limit]
    x = (images.astype(np.float32)[:, None] / 255.0 - MEAN) / STD
    return torch.from_numpy(x).to(device), torch.from_numpy(labels.astype(np.int64)).to(device)


def conv_bn_relu(cin, cout):
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]


def build(model):
    if model == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    return nn.Sequential(*conv_bn_relu(1, 32), *conv_bn_relu(32, 32), nn.MaxPool2d(2), *conv_bn_relu(32, 64),
                         nn.MaxPool2d(2), *conv_bn_relu(64, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(128, 10))


@torch.no_grad()
def evaluate(model, images, labels, batch=500):
    model.eval()
    correct = torch.zeros((), dtype=torch.int64, device=images.device)
    for i in range(0, len(labels), batch):
        correct += (model(images[i:i + batch]).argmax(-1) == labels[i:i + batch]).sum()
    return correct.item() / len(labels)


def plot(records, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    epochs = [r["epoch"] for r in records]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.plot(epochs, [r["train_loss"] for r in records], marker="o")
    b.plot(epochs, [100 * r["test_accuracy"] for r in records], marker="o")
    fig.savefig(path, dpi=100)
    plt.close(fig)


p = argparse.ArgumentParser()
for name in ("--model", "--device", "--data-dir", "--out"):
    p.add_argument(name, required=True)
p.add_argument("--epochs", type=int, required=True)
p.add_argument("--limit", type=int, default=None)
args = p.parse_args()
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
torch.manual_seed(SEED)
folder = Path(args.data_dir) / "mnist"
images, labels = load(folder, "train", args.limit, args.device)
test_images, test_labels = load(folder, "t10k", args.limit, args.device)
model = build(args.model).to(args.device)
opt = torch.optim.Adam(model.parameters(), lr=LR, weight_decay=0.0)
n, steps = len(labels), -(-len(labels) // BATCH)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * steps)
shuffle = torch.Generator().manual_seed(SEED)
out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)
print(f"training {args.model} ({sum(q.numel() for q in model.parameters()):,} parameters) on {n:,} "
      f"MNIST images, device {args.device}", flush=True)
records = []
for epoch in range(1, args.epochs + 1):
    model.train()
    t0 = time.perf_counter()
    order = torch.randperm(n, generator=shuffle).to(args.device)
    loss_sum = torch.zeros((), device=args.device)
    for step, start in enumerate(range(0, n, BATCH), 1):
        idx = order[start:start + BATCH]
        loss = F.cross_entropy(model(images[idx]), labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        loss_sum += loss.detach() * len(idx)
        if step % 100 == 0 or step == steps:    # the only host reads of the loop
            seen = min(start + BATCH, n)
            print(f"epoch {epoch}/{args.epochs} {step}/{steps} loss {loss_sum.item() / seen:.4f}", file=sys.stderr)
    train_seconds = time.perf_counter() - t0
    train_loss = loss_sum.item() / n
    bad = sum((~t.isfinite()).sum() for t in model.state_dict().values() if t.is_floating_point())
    if int(bad):
        sys.exit(f"the weights became non-finite in epoch {epoch}")
    acc = evaluate(model, test_images, test_labels)
    sync()
    seconds = time.perf_counter() - t0
    records.append({"epoch": epoch, "train_loss": train_loss, "test_accuracy": acc, "seconds": round(seconds, 3),
                    "train_seconds": round(train_seconds, 3), "samples_per_second": round(n / train_seconds, 1)})
    print(f"epoch {epoch}: train loss {train_loss:.4f}, test accuracy {100 * acc:.2f}%, {seconds:.1f}s", flush=True)
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                "epoch": epoch, "shuffle": shuffle.get_state()}, out / f"epoch{epoch}.pt")
    (out / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    plot(records, out / "curves.png")
'''


@dataclass
class Run:
    """One process: its wall time and, per epoch, the record it printed and wrote."""
    wall_s: float = 0.0
    epochs: list = field(default_factory=list)   # metrics.jsonl records, one per epoch
    error: str = ""


def command(framework, model, args, script, out):
    common = ["--device", args.device, "--epochs", str(args.epochs), "--data-dir", str(args.data_dir)]
    if framework == "paragrad":
        limit = ["--limit", str(args.limit), "--test-limit", str(args.limit)] if args.limit else []
        # fp32 as the torch script (the CLI's cnn default on cuda is bf16 autocast)
        return [sys.executable, "-m", "paragrad", "train", "mnist", "--model", model, *common,
                "--precision", "fp32", "--out", str(out), "--overwrite", *limit]
    return [sys.executable, str(script), "--model", model, *common, "--out", str(out),
            *(["--limit", str(args.limit)] if args.limit else [])]


def epoch_records(stdout, out):
    """The epochs a run printed, with metrics.jsonl's fields: the printed line proves the epoch
    finished; the file holds its seconds to the millisecond (the line rounds to 0.1 s)."""
    printed = [int(m.group(1)) for m in EPOCH_LINE.finditer(stdout)]
    if not printed:
        raise RuntimeError("printed no 'epoch N: train loss ..., test accuracy ...%, Zs' line")
    metrics = {r["epoch"]: r for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())}
    return [metrics[e] for e in printed]


def run_once(cmd, out):
    print("run: " + " ".join(cmd), flush=True)
    run = Run()
    try:
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        run.wall_s = time.perf_counter() - t0
        if proc.returncode != 0:
            tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
            raise RuntimeError(f"exit code {proc.returncode}: {tail[-300:]}")
        run.epochs = epoch_records(proc.stdout, out)
    except Exception as e:  # noqa: BLE001 - an error row, and the benchmark goes on
        run.error = f"{type(e).__name__}: {e}"
    return run


def summarize(runs, epochs, train_images):
    """Medians over the repeats that succeeded, or the first error if none did."""
    ok = [r for r in runs if not r.error and len(r.epochs) == epochs]
    if not ok:
        return {"error": next((r.error for r in runs if r.error), "missing epochs")}
    med = lambda f: statistics.median(f(r) for r in ok)  # noqa: E731
    last = epochs - 1
    return {"wall_s": med(lambda r: r.wall_s),
            "epoch_s": [med(lambda r, e=e: r.epochs[e]["seconds"]) for e in range(epochs)],
            "samples_per_s": med(lambda r: train_images / r.epochs[last]["seconds"]),
            "train_samples_per_s": med(lambda r: r.epochs[last]["samples_per_second"]),
            "test_accuracy": med(lambda r: r.epochs[last]["test_accuracy"]),
            "repeats": [{"wall_s": r.wall_s, "epochs": r.epochs, "error": r.error} for r in runs]}


def print_table(results, models, epochs):
    ep = f"ep{epochs}"
    print(f"\n{'model':5s} {'framework':9s} {'wall s':>7s} "
          + " ".join(f"{f'ep{e + 1} s':>7s}" for e in range(epochs))
          + f" {ep + ' samples/s':>15s} {ep + ' train samples/s':>21s} {ep + ' acc %':>9s} {'wall pg/torch':>13s}")
    for model in models:
        pg, tc = results[model]["paragrad"], results[model]["torch"]
        for framework in FRAMEWORKS:
            s = results[model][framework]
            if "error" in s:
                print(f"{model:5s} {framework:9s} failed: {s['error']}")
                continue
            ratio = f"{pg['wall_s'] / tc['wall_s']:13.2f}" if framework == "paragrad" and "error" not in tc else ""
            print((f"{model:5s} {framework:9s} {s['wall_s']:7.2f} " + " ".join(f"{t:7.3f}" for t in s["epoch_s"])
                   + f" {s['samples_per_s']:15,.0f} {s['train_samples_per_s']:21,.0f}"
                   f" {100 * s['test_accuracy']:9.2f} {ratio}").rstrip())
    print(f"wall pg/torch: paragrad's whole-process time over torch's (>1 = paragrad slower); {ep} samples/s: "
          f"training images over the epoch's time, evaluation included; train samples/s: over the training "
          f"loop alone (metrics.jsonl)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--repeats", type=int, default=1, help="timed runs per configuration (median shown)")
    p.add_argument("--warm", action="store_true", help="run each configuration once untimed first "
                   "(fills the kernel caches under $PARAGRAD_CACHE, default ~/.cache/paragrad)")
    p.add_argument("--data-dir", default=None, help="folder holding mnist/ (default: $PARAGRAD_DATA, "
                   "else ../shared/data, else .data)")
    p.add_argument("--json", default=None, help="also write the numbers to this file")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                   help="cpu: a smoke test of the code paths, with --limit")
    p.add_argument("--limit", type=int, default=None, help=argparse.SUPPRESS)  # N train and N test images
    args = p.parse_args()
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"bench/cli.py needs a CUDA GPU, and torch {torch.__version__} sees none. For a CPU "
                 f"smoke test: python bench/cli.py --device cpu --models mlp --epochs 1 --limit 640")
    args.data_dir = Path(args.data_dir).resolve() if args.data_dir else default_data_dir()
    if args.data_dir is None or not (args.data_dir / "mnist").is_dir():
        sys.exit("bench/cli.py: no MNIST found; pass --data-dir (the folder holding mnist/) or set PARAGRAD_DATA")

    print_header(args.device)
    train_images = min(args.limit or TRAIN_IMAGES, TRAIN_IMAGES)
    print(f"data    : {args.data_dir}/mnist, {train_images} train / {min(args.limit or TEST_IMAGES, TEST_IMAGES)} "
          f"test images, {-(-train_images // 64)} steps per epoch, {args.epochs} epoch(s), "
          f"{args.repeats} timed run(s) per configuration{', after one warm run' if args.warm else ''}")
    runs = {(m, f): [] for m in args.models for f in FRAMEWORKS}
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        script = Path(tmp) / "torch_mnist.py"
        script.write_text(TORCH_SCRIPT)
        for repeat in range(-1 if args.warm else 0, args.repeats):   # -1: the untimed warm run
            for (model, framework), done in runs.items():
                out = Path(tmp) / f"{model}-{framework}-{repeat}"
                run = run_once(command(framework, model, args, script, out), out)
                if repeat >= 0:
                    done.append(run)
                elif run.error:
                    print(f"  warm run failed: {run.error}")
        results = {m: {f: summarize(runs[m, f], args.epochs, train_images) for f in FRAMEWORKS}
                   for m in args.models}
    print_table(results, args.models, args.epochs)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "device": args.device, "results": results,
                       "versions": {"paragrad": version("paragrad"), "torch": version("torch")}}, f, indent=1)


if __name__ == "__main__":
    main()
