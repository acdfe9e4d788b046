"""The plots of the benchmark pages: one PNG per workload in docs/benchmarks/, drawn from the JSON
results the bench scripts wrote (bench/results/*.json). No GPU, no run: it reads what is there.

    python bench/plot.py                 # every plot, into docs/benchmarks/
    python bench/plot.py --only gpt      # one of them
    python bench/plot.py --out /tmp/p    # somewhere else

Each JSON carries the command that wrote it; the GPU ones of bench/gpt.py and bench/ddp_gpu.py
carry the device's name too. The day of every run, and the machine of the runs whose JSON does
not name it, are those of the BENCHMARKS.md section that reported the run (now in
docs/benchmarks/ and docs/notes/): RUNS below. Needs matplotlib (headless: the Agg backend)."""
from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.ticker import FuncFormatter  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
OUT = ROOT / "docs" / "benchmarks"
DPI = 100

# file: (day of the run, machine when the JSON doesn't name it, command when it carries none)
RUNS = {
    "mnist_bf16.json": ("2026-11-26", "NVIDIA H200", None),
    "mnist_1epoch.json": ("2026-11-25", "NVIDIA H100 80GB HBM3", None),
    "mnist_cnn.json": ("2026-11-22", "NVIDIA H100 80GB HBM3", None),
    "resnet.json": ("2026-11-26", "NVIDIA H200", None),
    "gpt.json": ("2026-11-26", None, None),
    "gpt_cpu.json": ("2026-11-26", "2-core CPU (AMD EPYC), a loaded machine", None),
    "ddp_gpu_resnet.json": ("2026-11-26", None, None),
    "ddp_gpu_gpt.json": ("2026-11-26", None, None),
    "scripts_cuda.json": ("2026-11-26", "NVIDIA H200",
                          "bench/scripts.py --device cuda --steps 50 --repeats 1"),
    "scripts_cpu.json": ("2026-11-25", "2-core CPU (AMD EPYC)",
                         "bench/scripts.py --steps 100 --repeats 3 --json bench/results/scripts_cpu.json"),
    "cli.json": ("2026-11-25", "NVIDIA H100 80GB HBM3", None),
    "op_overhead_cpu.json": ("2026-11-28", "2-core CPU (AMD EPYC)", None),
    "op_overhead_cuda.json": ("2026-11-28", None, None),
}

PARAGRAD = {"": "#1f4e9a", "bf16": "#4f86d9", "eager": "#9dbcec"}     # paragrad's rows: blues
TORCH = {"bf16": "#f0a07a", "graph": "#d9622b", "eager": "#e9b949", "compile": "#a83232"}  # PyTorch's
OTHER = "#8c8c8c"                                                     # tinygrad


def load(name):
    with open(RESULTS / name) as f:
        return json.load(f)


def command(name, data):
    """The command as a reader would type it: python bench/..., without the output paths."""
    cmd = data.get("command") or RUNS[name][2]
    words, out, skip = shlex.split(cmd), [], False
    for w in words:
        if skip:
            skip = False
            continue
        if w in ("--json", "--plot"):
            skip = True
            continue
        out.append(w)
    if not out[0].startswith("bench/"):
        out[0] = "bench/" + out[0]
    return "python " + " ".join(out)


def source(name, data):
    """'machine, day' of a run."""
    day, machine, _ = RUNS[name]
    named = data.get("device_name")
    return f"{named if named and named != 'cpu' else machine}, {day}"


def colour(label):
    """paragrad's rows in blues, PyTorch's in oranges and reds, tinygrad grey."""
    if label.startswith("tinygrad"):
        return OTHER
    table = PARAGRAD if label.startswith("paragrad") else TORCH
    return next((c for k, c in table.items() if k and k in label), table.get("", TORCH["graph"]))


def thousands(x, _pos=None):
    return f"{x:,.0f}"


def short(x, _pos=None):
    """1,000,000 -> 1M, 20,000 -> 20k: tick labels of a log axis."""
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if x >= size:
            return f"{x / size:g}{suffix}"
    return f"{x:g}"


def log_axis(axis):
    axis.set_major_formatter(FuncFormatter(short))
    axis.set_minor_formatter(FuncFormatter(lambda x, _pos: short(x) if str(short(x))[0] in "25" else ""))


def hbars(ax, labels, values, unit, fmt="{:.3f}", log=False):
    """Horizontal bars, the first label on top, each with its value written after it."""
    ys = list(range(len(labels)))[::-1]
    ax.barh(ys, values, color=[colour(lab) for lab in labels])
    ax.set_yticks(ys, labels)
    for y, v in zip(ys, values):
        ax.text(v, y, " " + fmt.format(v), va="center", fontsize=8)
    ax.set_xlabel(unit)
    if log:
        ax.set_xscale("log")
        log_axis(ax.xaxis)
    ax.set_xlim(right=max(values) * (3 if log else 1.25))
    ax.grid(axis="x", alpha=0.3)


def grouped(ax, groups, series, unit, log=False, fmt=None):
    """Vertical bars: one group per entry of groups, one bar per (label, values) of series."""
    width = 0.8 / len(series)
    for i, (label, values) in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        bars = ax.bar(xs, values, width, label=label, color=colour(label))
        if fmt:
            ax.bar_label(bars, [fmt.format(v) for v in values], fontsize=7, rotation=90, padding=2)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(unit)
    if log:
        ax.set_yscale("log")
        log_axis(ax.yaxis)
    else:
        ax.yaxis.set_major_formatter(FuncFormatter(thousands))
        ax.set_ylim(top=ax.get_ylim()[1] * 1.2)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def finish(fig, title, captions, path):
    fig.suptitle(title, fontsize=12)
    fig.text(0.01, 0.005, "\n".join(captions), fontsize=7.5, family="monospace", va="bottom")
    fig.tight_layout(rect=(0, 0.025 + 0.022 * len(captions), 1, 1))
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


def mean(xs):
    return sum(xs) / len(xs)


def plot_mnist_mlp(out):
    bf16, one = load("mnist_bf16.json"), load("mnist_1epoch.json")
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.6))
    rows = bf16["table1"]
    hbars(axes[0, 0], [r["name"] for r in rows], [mean(r["epoch_s"]) for r in rows], "seconds per epoch (mean of 3)")
    axes[0, 0].set_title(f"784-784-784-784-10, batch 64, float32 and bf16\n{source('mnist_bf16.json', bf16)}",
                         fontsize=10)
    rows = one["table1"]
    hbars(axes[0, 1], [r["name"] for r in rows], [mean(r["epoch_s"]) for r in rows], "seconds per epoch")
    axes[0, 1].set_title(f"the same MLP, float32, every framework, one epoch\n{source('mnist_1epoch.json', one)}",
                         fontsize=10)
    t2 = bf16["table2"]
    for ax, mlp in ((axes[1, 0], True), (axes[1, 1], False)):
        rows = [r for r in t2 if r["model"].startswith("gpt") != mlp]
        groups = [f"{r['model'].split()[-1] if mlp else 'gpt'}\nb{r['batch']}" for r in rows]
        series = [(k, [r[k] for r in rows]) for k in ("paragrad jit", "torch graph", "torch eager")]
        if mlp:
            grouped(ax, groups, series, "samples/s (log scale)", log=True)
            what = "relu: 784-256-128-10, gelu: 512-2048-2048-512"
        else:
            grouped(ax, groups, series, "tokens/s")
            what = "nanoGPT 6x384, 64 tokens, float32"
        ax.tick_params(axis="x", labelsize=8)
        ax.set_title(f"Table 2, training throughput ({what})\n{source('mnist_bf16.json', bf16)}", fontsize=10)
    finish(fig, "MNIST MLP on the GPU: paragrad jit (one CUDA graph a step) against PyTorch",
           [f"top left, bottom: {command('mnist_bf16.json', bf16)}",
            f"top right: {command('mnist_1epoch.json', one)}"], out / "mnist-mlp.png")


def plot_mnist_cnn(out):
    d = load("mnist_cnn.json")
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.6))
    rows = d["rows"]
    hbars(a, [r["name"] for r in rows], [r["time_s"] for r in rows], "seconds to the first evaluation >= 99 %",
          fmt="{:.3f} s")
    a.set_title(f"time to 99 % test accuracy (warm-up apart)\n{source('mnist_cnn.json', d)}", fontsize=10)
    for r in rows:
        b.plot([c[1] for c in r["curve"]], [100 * c[3] for c in r["curve"]], marker=".", label=r["name"],
               color=colour(r["name"]))
    b.axhline(99, color="k", lw=0.8, ls="--")
    b.set_xlabel("seconds since the first step (evaluations every quarter epoch)")
    b.set_ylabel("test accuracy, %")
    b.set_ylim(90, 100)
    b.grid(alpha=0.3)
    b.legend(fontsize=8)
    b.set_title(f"test accuracy against time\n{source('mnist_cnn.json', d)}", fontsize=10)
    cfg = d["config"]
    finish(fig, f"MNIST CNN (paragrad.models.MNISTCNN), batch {cfg['batch_size']}, float32 (TF32 off)",
           [command("mnist_cnn.json", d)], out / "mnist-cnn.png")


def plot_resnet(out):
    d = load("resnet.json")
    cases = {"32x256": "32x32, batch 256, torchvision stem", "32x256-cifar": "32x32, batch 256, CIFAR stem",
             "224x64": "224x224, batch 64"}
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.6))
    for ax, (case, title) in zip(axes, cases.items()):
        rows = [r for r in d["rows"] if r["case"] == case]
        grouped(ax, [f"{r['precision']}\n{r['paragrad jit'] / r['torch eager']:.2f}x" for r in rows],
                [(k, [r[k] for r in rows]) for k in ("paragrad jit", "torch eager")], "images/s", fmt="{:,.0f}")
        ax.set_title(title, fontsize=10)
    finish(fig, f"ResNet-18 training throughput: paragrad jit against PyTorch eager ({source('resnet.json', d)})",
           [command("resnet.json", d) + "   (under each precision: paragrad / PyTorch eager; "
            "PyTorch with cudnn.benchmark, no graph, no compile)"], out / "resnet.png")


def plot_gpt(out):
    gpu, cpu = load("gpt.json"), load("gpt_cpu.json")
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.4))
    for ax, name, d in ((a, "gpt.json", gpu), (b, "gpt_cpu.json", cpu)):
        rows = d["training"]
        hbars(ax, [r["row"] for r in rows], [r["ms_per_iter"] for r in rows], "ms per training iteration",
              fmt="{:.2f} ms")
        c = d["config"]
        ax.set_title(f"{c['n_layer']} layers x {c['n_embd']}, block {c['block_size']}, batch {d['batch_size']}, "
                     f"{d['precision']}\n{source(name, d)}", fontsize=10)
    finish(fig, "nanoGPT shakespeare-char training step: paragrad against PyTorch eager and torch.compile",
           [f"left: {command('gpt.json', gpu)}", f"right: {command('gpt_cpu.json', cpu)}",
            "(on the CPU paragrad's row runs eagerly; that run's machine was loaded: BENCHMARKS.md's idle-machine "
            "runs wrote no JSON)"], out / "gpt.png")


def plot_data_parallel(out):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    captions = []
    for ax, name, unit in ((axes[0], "ddp_gpu_resnet.json", "images/s"), (axes[1], "ddp_gpu_gpt.json", "tokens/s")):
        d = load(name)
        counts = d["counts"]
        series = []
        for fw, label in (("paragrad", "paragrad jit + DDP"), ("torch", "torch DDP (eager)")):
            rows = {r["gpus"]: r for r in d["rows"] if r["framework"] == fw}
            series.append((label, [rows[n]["rate"] for n in counts]))
        eff = {(r["framework"], r["gpus"]): r["efficiency"] for r in d["rows"]}
        groups = [f"{n} GPU{'s' if n > 1 else ''}\n"
                  f"eff. {100 * eff['paragrad', n]:.1f} % / {100 * eff['torch', n]:.1f} %" for n in counts]
        grouped(ax, groups, series, unit + " (all GPUs)", fmt="{:,.0f}")
        model = "ResNet-18, 32x32, batch 256 a GPU, bf16" if "resnet" in name else \
            "GPT shakespeare-char, batch 64 x 256 a GPU, bf16"
        ax.set_title(f"{model}\n{source(name, d)}", fontsize=10)
        captions.append(command(name, d))
    captions.append("efficiency = throughput(n) / (n x throughput(1)), each framework against its own 1-GPU run "
                    "(paragrad / torch)")
    finish(fig, "Data parallel on one host's GPUs: throughput and scaling efficiency",
           captions, out / "data-parallel.png")


def plot_scripts(out):
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.6))
    captions = []
    for ax, name in zip(axes, ("scripts_cuda.json", "scripts_cpu.json")):
        d = load(name)
        rows = d["rows"][::-1]
        ys = range(len(rows))
        ax.barh([y + 0.2 for y in ys], [r["torch_ms"] for r in rows], 0.4, label="torch eager",
                color=TORCH["eager"])
        ax.barh([y - 0.2 for y in ys], [r["paragrad_ms"] for r in rows], 0.4, label="paragrad run (eager)",
                color=PARAGRAD[""])
        for y, r in zip(ys, rows):
            ax.text(max(r["torch_ms"], r["paragrad_ms"]) * 1.1, y, f"{r['paragrad_ms'] / r['torch_ms']:.2f}x",
                    va="center", fontsize=8)
        ax.set_yticks(list(ys), [r["script"] for r in rows], fontsize=8)
        ax.set_xscale("log")
        log_axis(ax.xaxis)
        ax.set_xlim(min(min(r["torch_ms"], r["paragrad_ms"]) for r in rows) / 2,
                    max(max(r["torch_ms"], r["paragrad_ms"]) for r in rows) * 4)
        ax.set_xlabel("ms per training step (log scale; the ratio is paragrad / torch)")
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize=8, loc="upper right")
        ax.set_title(f"{'GPU' if d['device'] == 'cuda' else 'CPU'}, {d['steps']} steps\n{source(name, d)}",
                     fontsize=10)
        captions.append(command(name, d))
    finish(fig, "Unmodified PyTorch scripts: `paragrad run` against the same script under PyTorch eager",
           captions, out / "scripts.png")


def plot_cli(out):
    d = load("cli.json")
    res = d["results"]
    models = list(res)
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.4))
    labels = {"paragrad": "paragrad train", "torch": "torch eager script"}
    grouped(a, models, [(labels[fw], [res[m][fw]["wall_s"] for m in models]) for fw in ("paragrad", "torch")],
            "whole-process wall time, s", fmt="{:.2f} s")
    a.set_title(f"2 epochs of MNIST, start-up included\n{source('cli.json', d)}", fontsize=10)
    grouped(b, models, [(labels[fw], [res[m][fw]["train_samples_per_s"] for m in models])
                        for fw in ("paragrad", "torch")], "epoch 2 training samples/s", fmt="{:,.0f}")
    b.set_title(f"epoch 2, training only\n{source('cli.json', d)}", fontsize=10)
    finish(fig, "`paragrad train mnist` against a hand-written PyTorch eager script doing the same work",
           [command("cli.json", d)], out / "cli.png")


def plot_ops(out):
    """Per-op host time, paragrad / torch, one panel per device whose JSON exists."""
    names = [n for n in ("op_overhead_cpu.json", "op_overhead_cuda.json") if (RESULTS / n).exists()]
    if not names:
        raise FileNotFoundError(None, None, str(RESULTS / "op_overhead_cpu.json"))
    fig, axes = plt.subplots(1, len(names), figsize=(max(9.0, 6.8 * len(names)), 6.4), squeeze=False)
    for ax, name in zip(axes[0], names):
        d = load(name)
        rows = d["rows"][::-1]
        ratios = [r["paragrad_us"] / r["torch_us"] for r in rows]
        ys = range(len(rows))
        ax.barh(list(ys), ratios, color=[PARAGRAD[""] if x <= 1 else TORCH["graph"] for x in ratios])
        for y, r, x in zip(ys, rows, ratios):
            ax.text(x + 0.04, y, f"{x:.2f}x  ({r['paragrad_us']:.1f} / {r['torch_us']:.1f} us)", va="center",
                    fontsize=7)
        ax.axvline(1.0, color="black", lw=0.8)
        ax.set_yticks(list(ys), [r["case"] for r in rows], fontsize=7)
        ax.set_xlim(0, max(ratios) * 1.6)
        ax.set_xlabel("paragrad's time / torch's (< 1: paragrad faster), eager")
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(f"{'GPU' if d['device'] == 'cuda' else 'CPU'}: {source(name, d)}", fontsize=10)
    finish(fig, "One eager op's host time, paragrad / PyTorch eager",
           [command(n, load(n)) for n in names] + ["(one run each; the CPU host's timings swing by up to 2-3x "
                                                    "between runs: BENCHMARKS.md)"], out / "ops.png")


PLOTS = {"mnist-mlp": plot_mnist_mlp, "mnist-cnn": plot_mnist_cnn, "resnet": plot_resnet, "gpt": plot_gpt,
         "data-parallel": plot_data_parallel, "scripts": plot_scripts, "cli": plot_cli, "ops": plot_ops}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=OUT, help="folder of the PNGs (default: docs/benchmarks/)")
    p.add_argument("--only", nargs="+", choices=sorted(PLOTS), help="draw only these plots")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or PLOTS:
        try:
            PLOTS[name](args.out)
        except FileNotFoundError as e:
            print(f"{name}: skipped, {e.filename} is missing")


if __name__ == "__main__":
    main()
