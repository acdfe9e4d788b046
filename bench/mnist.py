"""MNIST MLP training on one GPU: paragrad (eager, jit) vs PyTorch (eager, torch.compile, the
whole step in one CUDA graph) vs tinygrad (TinyJit), side by side in one process run.

    python bench/mnist.py [--epochs 3] [--frameworks NAME ...] [--data-dir DIR] [--skip-throughput]
                          [--limit-steps N] [--tp-steps 200]

Table 1 trains the seed MLP 784-784-784-784-10 (Linear+ReLU x3, Linear to 10) with Adam (lr 1e-3)
at batch 64 on real MNIST, with one protocol for every framework:
  - the same initial weights (PyTorch's default Linear init, drawn once with NumPy, seed 0);
  - all 60k training images (float32, normalized with mean 0.1307 / std 0.3081, flattened to 784)
    and int64 labels uploaded to the GPU once, before any timing;
  - the same data order for every framework: each epoch's permutation is drawn with NumPy (one
    seeded generator per framework run, so every framework gets the same sequence of orders) and
    uploaded to the device inside the timed epoch (480 KB); step i gathers its batch on the
    device, X[perm[64i:64i+64]], Y[...]; the last partial batch is dropped (937 steps per epoch).
    Same weights and same order: the accuracy columns differ only by each framework's rounding;
  - an epoch's time runs from the permutation to the test accuracy on the host: the 10k test
    images in one forward pass under no_grad, argmax, accuracy read back once; the device is
    synchronized before the clock is read;
  - an untimed warm-up (3 training steps and one evaluation: compiles, graph captures, kernel and
    GEMM-plan caches) comes first and is reported in its own column. The torch CUDA graph row
    warms up on a side stream, captures, and replays once (as the PyTorch docs do). Warm-up steps
    train too: every model sees 3-4 batches more than the epochs give.
float32 throughout (TF32 off in PyTorch and paragrad; tinygrad's ALLOW_TF32 is off by default),
except the two bf16 rows: paragrad jit and the torch CUDA-graph step with the forward and the loss
under bfloat16 autocast (float32 weights, Adam on them; the evaluation's forward under autocast
too). Their /tgraph column compares with the torch graph bf16 row.

Kernels per step: PyTorch eager and torch.compile count, in a torch.profiler trace of 5 steps, the
GPU ops (kernels + memcpy + memset) and the kernels among them. The CUDA-graph rows count the nodes
of the captured step graph (torch: driver API cuGraphGetNodes, also counting its kernel nodes;
paragrad jit: `step.graph_nodes()`); each replay also launches one copy of the batch indices into
the static input buffer. tinygrad counts the kernels in its captured JIT (its graph batches them
into a few CUDA graphs). paragrad eager: n/a.

Table 2 (skip with --skip-throughput) is training throughput in samples/s on random data already
on the GPU, Adam lr 1e-3, for 784-256-128-10 (ReLU, 10 classes), 512-2048-2048-512 (GELU with
the tanh approximation, cross-entropy over 512 classes) and nanoGPT's shakespeare-char GPT with a
64-token context (float32, dropout off; its rows count tokens/s: batch * 64 a step), batch 32..512: paragrad jit vs PyTorch
eager vs PyTorch with the whole step in one CUDA graph (fused capturable Adam). Each number: 20
warm-up steps, then the median of 5 windows of --tp-steps steps, each timed between two
synchronizations.

Every framework runs inside try/except: one that fails prints an error row and the run goes on.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from common import (capturable_adam, capture_torch_step, default_data_dir, load_mnist, per_second,
                    print_header, timed_warmup, torch_eager_step, version)

SIZES = (784, 784, 784, 784, 10)
BATCH, LR, SEED = 64, 1e-3, 0
WARMUP_STEPS = 3          # jit/TinyJit: call 1 eager, call 2 captures, call 3 replays
FRAMEWORKS = ("paragrad-eager", "paragrad-jit", "torch-eager", "torch-compile", "torch-graph", "tinygrad",
              "paragrad-jit-bf16", "torch-graph-bf16")
LABELS = {"paragrad-eager": "paragrad eager", "paragrad-jit": "paragrad jit", "torch-eager": "torch eager",
          "torch-compile": "torch.compile", "torch-graph": "torch CUDA graph", "tinygrad": "tinygrad TinyJit",
          "paragrad-jit-bf16": "paragrad jit bf16", "torch-graph-bf16": "torch graph bf16"}
TP_MODELS = {"784-256-128-10 relu": ((784, 256, 128, 10), "relu"),
             "512-2048-2048-512 gelu": ((512, 2048, 2048, 512), "gelu"),
             "gpt 6x384, 64 tokens": "gpt"}
# the GPT rows: nanoGPT's shakespeare-char model with a 64-token context (bench/gpt.py has the
# same model at 256), float32, dropout off; a sample is one token (batch * 64 a step)
TP_GPT = dict(n_layer=6, n_head=6, n_embd=384, block_size=64, vocab_size=65, dropout=0.0, bias=True)
TP_BATCHES = (32, 64, 128, 256, 512)
TP_WARMUP = 20            # untimed steps before each throughput measurement


# ---- data, weights, machine ------------------------------------------------------------------

def init_weights(sizes, seed=SEED):
    """[(weight (out, in), bias (out,))] as PyTorch's default Linear init, U(+-1/sqrt(fan_in))."""
    rng = np.random.default_rng(seed)
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        bound = 1 / np.sqrt(a)
        layers.append((rng.uniform(-bound, bound, (b, a)).astype(np.float32),
                       rng.uniform(-bound, bound, (b,)).astype(np.float32)))
    return layers


def build_mlp(lib, weights, act, device):
    """paragrad or torch (same API): Linear layers with the given weights, act between them."""
    layers = []
    for w, b in weights:
        lin = lib.nn.Linear(w.shape[1], w.shape[0])
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(w))
            lin.bias.copy_(lib.tensor(b))
        layers += [lin, lib.nn.GELU(approximate="tanh") if act == "gelu" else lib.nn.ReLU()]
    return lib.nn.Sequential(*layers[:-1]).to(device)


# ---- one trainer per framework ---------------------------------------------------------------

@dataclass
class Trainer:
    """One framework's side of the protocol. step(perm, i) trains on batch i of perm."""
    step: Callable
    permutation: Callable          # (NumPy int64 permutation) -> the same on the device
    evaluate: Callable             # -> test accuracy, a host float
    sync: Callable
    warmup: Callable | None = None  # (perm) -> None; default: WARMUP_STEPS steps
    kernels: Callable = lambda: "n/a"
    note: str = ""


def torch_data(data, device):
    import torch
    return [torch.tensor(data[k], device=device) for k in ("xtrain", "ytrain", "xtest", "ytest")]


def torch_trainer(data, device, step, model, extra_note="", autocast=False):
    """The parts every torch row shares: permutation, evaluation with the eager model (under
    bfloat16 autocast for the bf16 row), sync."""
    import torch
    _, _, xte, yte = data

    def evaluate():
        with torch.no_grad(), torch.autocast(device, dtype=torch.bfloat16, enabled=autocast):
            return (model(xte).argmax(1) == yte).float().mean().item()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    return Trainer(step=step, permutation=lambda order: torch.from_numpy(order).to(device), evaluate=evaluate,
                   sync=sync, note=extra_note)


def profiled_kernels(step, permutation, device, steps=5):
    """'N ops, K kernels' per step on the GPU (ops: kernels, memcpys, memsets), from torch.profiler.
    Counted by category in its trace: its event list also holds GPU-side copies of record_function
    ranges (torch.compile annotates its regions), which are no kernels."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    if device != "cuda":
        return "n/a"
    perm = permutation(np.arange(steps * BATCH, dtype=np.int64))
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(steps):
            step(perm, i)
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        prof.export_chrome_trace(os.path.join(tmp, "trace.json"))
        with open(os.path.join(tmp, "trace.json")) as f:
            cats = [e.get("cat") for e in json.load(f)["traceEvents"]]
    kernels = cats.count("kernel")
    ops = kernels + cats.count("gpu_memcpy") + cats.count("gpu_memset")
    return f"{ops / steps:g} ops, {kernels / steps:g} kernels"


def setup_torch_eager(data, device, compile_fwd=False):
    import torch
    torch.manual_seed(SEED)
    X, Y, *_ = tensors = torch_data(data, device)
    model = build_mlp(torch, init_weights(SIZES), "relu", device)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    step, note = torch_eager_step(model, opt, X, Y, BATCH, compile_fwd)
    tr = torch_trainer(tensors, device, step, model, note)
    tr.kernels = lambda: profiled_kernels(step, tr.permutation, device)
    return tr


def setup_torch_graph(data, device, autocast=False):
    import torch
    import torch.nn.functional as F
    if device != "cuda":
        raise RuntimeError("CUDA graphs need --device cuda")
    torch.manual_seed(SEED)
    X, Y, *_ = tensors = torch_data(data, device)
    model = build_mlp(torch, init_weights(SIZES), "relu", device)
    opt, note = capturable_adam(model.parameters(), LR)
    static_idx = torch.zeros(BATCH, dtype=torch.int64, device=device)
    state = {}

    def body():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = F.cross_entropy(model(X[static_idx]), Y[static_idx])
        loss.backward()
        opt.step()

    def warmup(perm):
        state["graph"], state["nodes"] = capture_torch_step(
            body, opt, lambda i: static_idx.copy_(perm[i * BATCH:(i + 1) * BATCH]), WARMUP_STEPS)
        step(perm, WARMUP_STEPS)   # the first replay, outside the timing

    def step(perm, i):
        static_idx.copy_(perm[i * BATCH:(i + 1) * BATCH])
        state["graph"].replay()
    tr = torch_trainer(tensors, device, step, model, note, autocast)
    tr.warmup, tr.kernels = warmup, lambda: state.get("nodes", "n/a")
    return tr


def setup_paragrad(data, device, jit, autocast=False):
    import paragrad as pg
    import paragrad.nn.functional as F
    pg.manual_seed(SEED)
    X, Y, xte, yte = (pg.tensor(data[k], device=device) for k in ("xtrain", "ytrain", "xtest", "ytest"))
    model = build_mlp(pg, init_weights(SIZES), "relu", device)
    opt = pg.optim.Adam(model.parameters(), lr=LR)

    def train_step(idx):          # idx: (64,) int64 on the device
        with pg.autocast(device, dtype=pg.bfloat16, enabled=autocast):
            loss = F.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    fn = pg.jit(train_step) if jit else train_step

    def evaluate():
        with pg.no_grad(), pg.autocast(device, dtype=pg.bfloat16, enabled=autocast):
            return (model(xte).argmax(1) == yte).float().mean().item()
    return Trainer(step=lambda perm, i: fn(perm[i * BATCH:(i + 1) * BATCH]),
                   permutation=lambda order: pg.tensor(order, device=device), evaluate=evaluate,
                   sync=pg.cuda.synchronize if device == "cuda" else (lambda: None),
                   kernels=(lambda: f"{fn.graph_nodes()} nodes") if jit else (lambda: "n/a"))


def tinygrad_device(candidates):
    """The first tinygrad device that compiles and runs a kernel; sets it as tinygrad's default."""
    from tinygrad import Device, Tensor
    from tinygrad.helpers import DEV
    errors = []
    for dev in candidates:
        try:
            DEV.value = dev   # tinygrad 0.14: Device.DEFAULT is read-only, DEV replaces CUDA=1
            Device[dev]
            if (Tensor([1.0], device=dev) + 1).item() != 2.0:
                raise RuntimeError("1 + 1 != 2")
            return dev
        except Exception as e:  # noqa: BLE001 - try the next candidate
            errors.append(f"{dev}: {type(e).__name__}: {e}")
    raise RuntimeError("no tinygrad device works: " + "; ".join(errors))


def tinygrad_kernels(jit):
    """Kernels in a captured TinyJit, looking inside the CUDA graphs it batches them into."""
    from tinygrad.uop.ops import Ops

    def count(linear):
        n = 0
        for call in linear.src:
            fn = call.src[0]
            if fn.op is Ops.CUSTOM_FUNCTION and fn.arg == "graph":
                n += count(fn.src[0])
            else:
                n += fn.op is Ops.PROGRAM
        return n
    return f"{count(jit.captured.linear)} kernels"


def setup_tinygrad(data, device, candidates=None):
    try:
        import tinygrad  # noqa: F401
    except ImportError:
        raise RuntimeError("tinygrad not installed") from None
    from tinygrad import Device, Tensor, TinyJit, Variable, nn
    from tinygrad.helpers import TRAINING
    from tinygrad.nn.state import get_parameters
    dev = tinygrad_device(candidates or (("CUDA", "NV") if device == "cuda" else ("CPU",)))
    TRAINING.value = 1            # tinygrad 0.14's optimizers refuse to step without it
    Tensor.manual_seed(SEED)
    X, Y, xte, yte = (Tensor(data[k], device=dev).realize() for k in ("xtrain", "ytrain", "xtest", "ytest"))

    class MLP:
        def __init__(self, weights):
            self.layers = []
            for w, b in weights:
                lin = nn.Linear(w.shape[1], w.shape[0])
                lin.weight, lin.bias = Tensor(w, device=dev), Tensor(b, device=dev)
                self.layers.append(lin)

        def __call__(self, x):
            for lin in self.layers[:-1]:
                x = lin(x).relu()
            return self.layers[-1](x)
    model = MLP(init_weights(SIZES))
    params = get_parameters(model)
    Tensor.realize(*params)
    opt = nn.optim.Adam(params, lr=LR)
    n = data["xtrain"].shape[0]
    # the batch index is a symbolic variable: one captured JIT serves every slice of the permutation
    i_var = Variable("i", 0, n // BATCH - 1)

    @TinyJit
    def jit_step(perm, i):
        idx = perm.shrink(((i * BATCH, i * BATCH + BATCH),))
        opt.zero_grad()
        loss = model(X[idx]).sparse_categorical_crossentropy(Y[idx]).backward()
        X.grad = None             # backward also gives the data a (lazy, never realized) grad: drop it
        return loss.realize(*opt.schedule_step())

    def evaluate():
        return (model(xte).argmax(axis=1) == yte).float().mean().item()
    return Trainer(step=lambda perm, i: jit_step(perm, i_var.bind(i)),
                   permutation=lambda order: Tensor(order, device=dev).realize(),
                   evaluate=evaluate, sync=Device[dev].synchronize, kernels=lambda: tinygrad_kernels(jit_step),
                   note=f"tinygrad {version('tinygrad')} on device {dev}")


SETUPS = {"paragrad-eager": lambda d, dev: setup_paragrad(d, dev, jit=False),
          "paragrad-jit": lambda d, dev: setup_paragrad(d, dev, jit=True),
          "torch-eager": setup_torch_eager,
          "torch-compile": lambda d, dev: setup_torch_eager(d, dev, compile_fwd=True),
          "torch-graph": setup_torch_graph,
          "tinygrad": setup_tinygrad,
          "paragrad-jit-bf16": lambda d, dev: setup_paragrad(d, dev, jit=True, autocast=True),
          "torch-graph-bf16": lambda d, dev: setup_torch_graph(d, dev, autocast=True)}


# ---- table 1: the protocol -------------------------------------------------------------------

@dataclass
class Row:
    name: str
    warmup_s: float = float("nan")
    epoch_s: list = field(default_factory=list)
    acc: list = field(default_factory=list)
    kernels: str = "n/a"
    note: str = ""
    error: str = ""


def run_protocol(name, data, device, epochs, steps):
    row = Row(LABELS[name])
    try:
        tr = SETUPS[name](data, device)
        row.note = tr.note
        orders = np.random.default_rng(SEED)          # the same orders for every framework
        n = len(data["xtrain"])
        perm = tr.permutation(orders.permutation(n))
        row.warmup_s = timed_warmup(tr, perm, WARMUP_STEPS)
        for epoch in range(epochs):
            tr.sync()
            t0 = time.perf_counter()
            perm = tr.permutation(orders.permutation(n))
            for i in range(steps):
                tr.step(perm, i)
            acc = tr.evaluate()
            tr.sync()
            row.epoch_s.append(time.perf_counter() - t0)
            row.acc.append(acc)
            print(f"  {row.name}: epoch {epoch + 1} {row.epoch_s[-1]:.3f} s, test accuracy {acc:.2%}", flush=True)
        try:   # after the timed epochs, so that counting costs no timed work
            row.kernels = str(tr.kernels())
        except Exception as e:  # noqa: BLE001 - a count we can't take is n/a, with the reason
            print(f"  {row.name}: kernel count failed: {type(e).__name__}: {e}")
    except Exception as e:  # noqa: BLE001 - one framework failing must not end the run
        if str(e) == "tinygrad not installed":
            row.error = str(e)
            return row
        row.error = f"{type(e).__name__}: {e}".split("\n")[0][:160]
        print(f"  {row.name} failed:\n" + "".join(traceback.format_exc().splitlines(True)[-12:]), flush=True)
    return row


def print_table1(rows, epochs, steps):
    print(f"\nTable 1: 784-784-784-784-10 ReLU MLP, Adam lr {LR:g}, batch {BATCH}, {steps} steps/epoch "
          f"+ 10k-image test evaluation; seconds per epoch")
    mean = {r.name: statistics.mean(r.epoch_s) for r in rows if r.epoch_s and not r.error}
    ref_graph, ref_jit = mean.get(LABELS["torch-graph"]), mean.get(LABELS["paragrad-jit"])
    ref_graph_bf16 = mean.get(LABELS["torch-graph-bf16"])
    head = (f"{'framework':17s} {'warm-up':>8s} " + " ".join(f"{f'ep{e + 1} s':>7s}" for e in range(epochs))
            + f" {'mean s':>7s} {'/tgraph':>7s} {'/pgjit':>7s} "
            + " ".join(f"{f'acc{e + 1}':>6s}" for e in range(epochs)) + "  kernels/step")
    print(head)
    for r in rows:
        if r.error:
            print(f"{r.name:17s} {r.error}")
            continue
        m = mean.get(r.name)
        ratio = lambda ref: f"{m / ref:7.2f}" if m and ref else f"{'-':>7s}"  # noqa: E731
        epochs_txt = " ".join(f"{t:7.3f}" for t in r.epoch_s) + " " * (8 * (epochs - len(r.epoch_s)))
        acc_txt = " ".join(f"{a * 100:6.2f}" for a in r.acc) + " " * (7 * (epochs - len(r.acc)))
        graph = ref_graph_bf16 if r.name.endswith(" bf16") else ref_graph
        print(f"{r.name:17s} {r.warmup_s:8.2f} {epochs_txt} {m:7.3f} {ratio(graph)} {ratio(ref_jit)} "
              f"{acc_txt}  {r.kernels}")
    print("/tgraph, /pgjit: mean epoch time over that of torch CUDA graph (bf16 rows: torch graph bf16), "
          "paragrad jit (>1 = slower); acc in %")
    for r in rows:
        if r.note and not r.error:
            print(f"  {r.name}: {r.note}")


# ---- table 2: throughput ---------------------------------------------------------------------

def random_batches(sizes, batch, k=4):
    rng = np.random.default_rng(SEED)
    return ([rng.standard_normal((batch, sizes[0])).astype(np.float32) for _ in range(k)],
            [rng.integers(0, sizes[-1], batch).astype(np.int64) for _ in range(k)])


def tp_setup(lib, spec, batch, device):
    """(model, loss(x, y), xs, ys, samples a step) for a Table 2 row, in paragrad or torch (the
    same initial weights in both): an MLP of (sizes, act), or "gpt" (TP_GPT, random tokens)."""
    if spec == "gpt":
        from gpt import load_paragrad_weights, paragrad_gpt, torch_gpt
        model = (paragrad_gpt(TP_GPT, device) if lib.__name__ == "paragrad" else
                 load_paragrad_weights(torch_gpt(TP_GPT), TP_GPT, device))
        rng = np.random.default_rng(SEED)
        shape = (batch, TP_GPT["block_size"])
        xs = [rng.integers(0, TP_GPT["vocab_size"], shape) for _ in range(4)]
        ys = [rng.integers(0, TP_GPT["vocab_size"], shape) for _ in range(4)]
        return model, lambda x, y: model(x, y)[1], xs, ys, batch * TP_GPT["block_size"]
    sizes, act = spec
    model = build_mlp(lib, init_weights(sizes), act, device)
    xs, ys = random_batches(sizes, batch)
    return model, lambda x, y: lib.nn.functional.cross_entropy(model(x), y), xs, ys, batch


def tp_paragrad_jit(spec, batch, steps, device):
    import paragrad as pg
    model, loss_of, xs, ys, per_step = tp_setup(pg, spec, batch, device)
    opt = pg.optim.Adam(model.parameters(), lr=LR)
    xs, ys = [pg.tensor(x, device=device) for x in xs], [pg.tensor(y, device=device) for y in ys]

    def train_step(x, y):
        loss = loss_of(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    step = pg.jit(train_step)
    sync = pg.cuda.synchronize if device == "cuda" else (lambda: None)
    return per_second(lambda i: step(xs[i % len(xs)], ys[i % len(ys)]), sync, per_step, steps, TP_WARMUP)


def tp_torch(spec, batch, steps, device, graph):
    import torch
    model, loss_of, xs, ys, per_step = tp_setup(torch, spec, batch, device)
    xs, ys = [torch.tensor(x, device=device) for x in xs], [torch.tensor(y, device=device) for y in ys]
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    if not graph:
        opt = torch.optim.Adam(model.parameters(), lr=LR)

        def step(i):
            loss = loss_of(xs[i % len(xs)], ys[i % len(ys)])
            opt.zero_grad()
            loss.backward()
            opt.step()
        return per_second(step, sync, per_step, steps, TP_WARMUP)
    if device != "cuda":
        raise RuntimeError("CUDA graphs need --device cuda")
    opt, _ = capturable_adam(model.parameters(), LR)
    sx, sy = xs[0].clone(), ys[0].clone()

    def feed(i):   # every step copies its batch in, as paragrad's jit does with its arguments
        sx.copy_(xs[i % len(xs)])
        sy.copy_(ys[i % len(ys)])

    def body():
        loss_of(sx, sy).backward()
        opt.step()
    g, _ = capture_torch_step(body, opt, feed, WARMUP_STEPS)

    def step(i):
        feed(i)
        g.replay()
    return per_second(step, sync, per_step, steps, TP_WARMUP)


def throughput(device, steps):
    print(f"\nTable 2: training throughput, samples/s (GPT rows: tokens/s) (Adam lr {LR:g}, random data "
          f"on the device, {steps} timed steps); ratio = paragrad jit / torch CUDA graph samples/s "
          f"(>1 = paragrad faster)")
    print(f"{'model':24s} {'batch':>5s} {'paragrad jit':>13s} {'torch eager':>12s} {'torch graph':>12s} {'ratio':>6s}")
    errors, results = [], []
    for name, spec in TP_MODELS.items():
        for batch in TP_BATCHES:
            cells = []
            for label, fn in (("paragrad jit", lambda: tp_paragrad_jit(spec, batch, steps, device)),
                              ("torch eager", lambda: tp_torch(spec, batch, steps, device, graph=False)),
                              ("torch graph", lambda: tp_torch(spec, batch, steps, device, graph=True))):
                try:
                    cells.append(fn())
                except Exception as e:  # noqa: BLE001 - reported under the table
                    cells.append(None)
                    msg = f"{label}: {type(e).__name__}: {e}".split("\n")[0][:160]
                    if msg not in errors:
                        errors.append(msg)
            txt = [f"{c:,.0f}" if c else "failed" for c in cells]
            ratio = f"{cells[0] / cells[2]:6.2f}" if cells[0] and cells[2] else f"{'-':>6s}"
            print(f"{name:24s} {batch:5d} {txt[0]:>13s} {txt[1]:>12s} {txt[2]:>12s} {ratio}", flush=True)
            results.append({"model": name, "batch": batch, "paragrad jit": cells[0],
                            "torch eager": cells[1], "torch graph": cells[2]})
    for msg in errors:
        print(f"  failed: {msg}")
    return results


def plot_epoch_times(rows, path):
    """A bar chart of the mean epoch time per framework."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"note: {path} not written (needs matplotlib)")
        return
    rows = [r for r in rows if r["epoch_s"] and not r["error"]]
    names = [r["name"] for r in rows]
    means = [statistics.mean(r["epoch_s"]) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    bars = ax.barh(names[::-1], means[::-1], color="#4c72b0")
    for b, m in zip(bars, means[::-1]):
        ax.text(m + max(means) * 0.01, b.get_y() + b.get_height() / 2, f"{m:.3f} s", va="center", fontsize=8)
    ax.set_xlim(0, max(means) * 1.2)
    ax.set_xlabel("seconds per epoch (train 937 steps + 10k test eval), lower is better")
    ax.set_title("MNIST MLP 784-784-784-784-10, Adam, batch 64", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


# ---- main ------------------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--frameworks", nargs="+", default=list(FRAMEWORKS), metavar="NAME",
                   help=f"any of {', '.join(FRAMEWORKS)} (default: all, in that order)")
    p.add_argument("--data-dir", default=None, help="folder holding mnist/ (default: $PARAGRAD_DATA, "
                   "else ../shared/data, else .data)")
    p.add_argument("--skip-throughput", action="store_true", help="only table 1")
    p.add_argument("--limit-steps", type=int, default=None, help="train only N steps per epoch (quick runs)")
    p.add_argument("--tp-steps", type=int, default=200, help="timed steps per throughput window (5 windows)")
    p.add_argument("--json", default=None, help="also write both tables' numbers to this file")
    p.add_argument("--plot", default=None, help="write a PNG of the epoch times (needs matplotlib)")
    p.add_argument("--plot-from", default=None, metavar="JSON",
                   help="only draw --plot from a --json file of an earlier run")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help=argparse.SUPPRESS)  # CPU smoke test
    args = p.parse_args()
    if args.plot_from:
        with open(args.plot_from) as f:
            plot_epoch_times(json.load(f)["table1"], args.plot or "mnist_epochs.png")
        return
    names = [n for f in args.frameworks for n in f.split(",") if n]
    if unknown := [n for n in names if n not in FRAMEWORKS]:
        p.error(f"unknown framework(s) {', '.join(unknown)}; choose from {', '.join(FRAMEWORKS)}")
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"bench/mnist.py needs a CUDA GPU, and torch {torch.__version__} sees none "
                 f"(torch.cuda.is_available() is False). For a CPU smoke test of the code paths: "
                 f"python bench/mnist.py --device cpu --epochs 1 --limit-steps 20 --skip-throughput")
    root = Path(args.data_dir) if args.data_dir else default_data_dir()
    if root is None:
        sys.exit("bench/mnist.py: no MNIST found; pass --data-dir (the folder holding mnist/) or set PARAGRAD_DATA")
    torch.backends.cuda.matmul.allow_tf32 = False     # float32 GEMMs in every framework
    torch.set_float32_matmul_precision("highest")

    print_header(args.device)
    data = load_mnist(root, flat=True)
    steps = len(data["xtrain"]) // BATCH
    steps = min(steps, args.limit_steps) if args.limit_steps else steps
    print(f"data    : {root}/mnist, {len(data['xtrain'])} train / {len(data['xtest'])} test images; "
          f"{steps} steps per epoch")
    rows = [run_protocol(name, data, args.device, args.epochs, steps) for name in names]
    print_table1(rows, args.epochs, steps)
    table2 = None if args.skip_throughput else throughput(args.device, args.tp_steps)
    table1 = [vars(r) for r in rows]
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "table1": table1, "table2": table2}, f, indent=1)
    if args.plot:
        plot_epoch_times(table1, args.plot)


if __name__ == "__main__":
    main()
