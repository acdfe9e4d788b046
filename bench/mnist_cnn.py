"""MNIST CNN on one GPU: time to 99 % test accuracy, paragrad (pg.jit: one CUDA graph per step) vs
PyTorch (eager, the whole step in one CUDA graph, torch.compile), side by side in one process run.

    python bench/mnist_cnn.py [--epochs 5] [--batch-size 128] [--lr 1e-3] [--target 0.99]
                              [--eval-every N] [--frameworks NAME ...] [--data-dir DIR] [--json PATH]

The model is paragrad.models.MNISTCNN (conv32-conv32-maxpool-conv64-maxpool-conv128, each conv 3x3,
padded, bias-free, followed by BatchNorm2d and ReLU; global average pool; Linear 128->10; 103k
parameters) and, for PyTorch, the same modules in the same order. One protocol for every framework:
  - the same initial weights: paragrad draws them (pg.manual_seed(0)); its state_dict, BatchNorm
    running statistics included, is loaded by name into every model. Before any run the script
    prints the largest logit difference between the paragrad and torch models on test images
    (eval and train mode): it should be rounding-sized (1e-7 to 1e-6 on the CPU);
  - all 60k training and 10k test images (float32, normalized) and int64 labels uploaded to the
    device once, before any timing;
  - the same data order: one NumPy generator (seed 0) per framework run draws a permutation for
    the warm-up, then one per epoch, uploaded inside the timed region; step i gathers its batch
    on the device, X[perm[Bi:Bi+B]], Y[...]; the last partial batch is dropped (468 steps per
    epoch at batch 128);
  - Adam (lr 1e-3), cosine annealing to 0 over all steps of --epochs epochs, stepped on the host
    after every step. paragrad: pg.optim.lr_scheduler.CosineAnnealingLR outside the jitted step
    (the learning rate lives on the device; pg.jit copies it before each replay). torch eager and
    compile: torch's CosineAnnealingLR. torch CUDA graph: the captured capturable Adam reads its lr
    from a CUDA tensor; torch's CosineAnnealingLR runs on a float-lr shadow optimizer and each
    value is written into that tensor with one fill_ (no host sync, the same host numbers as the
    eager rows);
  - an untimed warm-up (its own column): 3 training steps on batches 0-2 of the warm-up
    permutation and one evaluation (kernel compiles, cuDNN plans and autotuning, graph captures,
    torch.compile). The warm-up steps train: every model starts the clock with the same 3 updates
    done (at the initial lr; the schedule starts with the clock). paragrad jit: eager call,
    capture (which runs the graph once), replay. torch CUDA graph: 2 steps on a side stream,
    capture, first replay (as the PyTorch docs do);
  - after the warm-up the clock runs: the test accuracy is evaluated every --eval-every steps
    (default a quarter epoch) and at each epoch end: model.eval(), the 10k test images in chunks
    of 2000 under no_grad, correct predictions summed on the device and read once, model.train().
    A framework stops at its first evaluation reaching --target (0.99), else after --epochs;
  - reported: "to 99% s" = wall time from the clock start to the end of that evaluation,
    evaluations, permutation uploads and schedule steps included; "train s" = the training
    segments alone up to that point, each timed between two device synchronizations; steps to
    the target (warm-up excluded), train ms/step, and the accuracy of the last evaluation.
    Ratios divide "to 99% s" by that of torch eager and of torch CUDA graph (>1 = slower).
float32 throughout: TF32 off for GEMMs and convolutions in both (PyTorch's cuDNN allows TF32 by
default, paragrad does not); --tf32 allows it in both. cudnn.benchmark = True in both frameworks
(torch.backends.cudnn / pg.backends.cudnn: their autotuning happens in the warm-up). torch eager uses Adam's default (foreach)
implementation; the CUDA graph row fused+capturable Adam (capturable only if fused is refused);
torch.compile compiles model+loss forward (and so its backward), Adam stays eager, evaluation runs
the eager model (no recompile for eval mode).

Every framework runs inside try/except: one that fails prints an error row and the run goes on.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from common import (capturable_adam, capture_torch_step, default_data_dir, load_mnist, print_header,
                    timed_warmup, torch_eager_step)

SEED = 0
WARMUP_STEPS = 3          # pg.jit: call 1 eager, call 2 captures, call 3 replays
EVAL_CHUNK = 2000         # test images per evaluation forward pass
FRAMEWORKS = ("paragrad-jit", "torch-eager", "torch-graph", "torch-compile", "paragrad-eager")
DEFAULT_FRAMEWORKS = FRAMEWORKS[:4]
LABELS = {"paragrad-jit": "paragrad jit", "paragrad-eager": "paragrad eager", "torch-eager": "torch eager",
          "torch-graph": "torch CUDA graph", "torch-compile": "torch.compile"}


# ---- data, weights, machine ------------------------------------------------------------------

def initial_state():
    """{name: NumPy array} of a fresh paragrad MNISTCNN drawn with seed 0: parameters and
    BatchNorm buffers, the one starting point of every framework."""
    import paragrad as pg
    from paragrad.models import MNISTCNN
    pg.manual_seed(SEED)
    return {k: np.array(v.cpu().numpy()) for k, v in MNISTCNN().state_dict().items()}


def paragrad_cnn(state, device):
    import paragrad as pg
    from paragrad.models import MNISTCNN
    model = MNISTCNN()
    model.load_state_dict({k: pg.tensor(v) for k, v in state.items()})
    return model.to(device)


def torch_cnn(state, device):
    """MNISTCNN in PyTorch: the same modules in the same order, so state_dict names match."""
    import torch
    from torch import nn

    def conv_bn_relu(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]
    model = nn.Sequential(*conv_bn_relu(1, 32), *conv_bn_relu(32, 32), nn.MaxPool2d(2),
                          *conv_bn_relu(32, 64), nn.MaxPool2d(2), *conv_bn_relu(64, 128),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))
    model.load_state_dict({k: torch.tensor(v) for k, v in state.items()})   # strict: every name
    return model.to(device)


def check_same_init(state, data, device, n=512):
    """Largest |logit difference| between the paragrad and torch models built from state, on the
    first n test images, in eval mode (running statistics) and train mode (batch statistics;
    these models are thrown away, so their statistics updates don't matter)."""
    import torch

    import paragrad as pg
    x = data["xtest"][:n]
    pm, tm = paragrad_cnn(state, device), torch_cnn(state, device)
    diffs = []
    for train in (False, True):
        pm.train(train)
        tm.train(train)
        with pg.no_grad():
            a = pm(pg.tensor(x, device=device)).cpu().numpy()
        with torch.no_grad():
            b = tm(torch.tensor(x, device=device)).cpu().numpy()
        diffs.append(float(np.abs(a - b).max()))
    return {"tensors": len(state), "images": len(x), "eval_max_abs_diff": diffs[0], "train_max_abs_diff": diffs[1]}


# ---- one trainer per framework ---------------------------------------------------------------

@dataclass
class Trainer:
    """One framework's side of the protocol. step(perm, i) trains on batch i of perm."""
    step: Callable
    sched_step: Callable           # one learning-rate schedule step, after each training step
    permutation: Callable          # (NumPy int64 permutation) -> the same on the device
    evaluate: Callable             # -> test accuracy, a host float
    sync: Callable
    warmup: Callable | None = None  # (perm) -> None; default: WARMUP_STEPS steps
    details: Callable = lambda: ""  # read after the run (graph sizes)
    note: str = ""


def torch_setup(data, state, cfg):
    """What every torch row shares: data on the device, the model, evaluation, sync."""
    import torch
    dev = cfg.device
    X, Y, xte, yte = (torch.tensor(data[k], device=dev) for k in ("xtrain", "ytrain", "xtest", "ytest"))
    model = torch_cnn(state, dev)

    def evaluate():
        model.eval()
        with torch.no_grad():
            correct = torch.zeros((), dtype=torch.int64, device=dev)
            for i in range(0, len(yte), EVAL_CHUNK):
                correct += (model(xte[i:i + EVAL_CHUNK]).argmax(1) == yte[i:i + EVAL_CHUNK]).sum()
        model.train()
        return correct.item() / len(yte)
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    return X, Y, model, dict(permutation=lambda order: torch.from_numpy(order).to(dev), evaluate=evaluate, sync=sync)


def setup_torch_eager(data, state, cfg, compile_fwd=False):
    import torch
    X, Y, model, common = torch_setup(data, state, cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.total_steps)
    step, note = torch_eager_step(model, opt, X, Y, cfg.batch_size, compile_fwd)
    return Trainer(step=step, sched_step=sched.step, note=note, **common)


def setup_torch_graph(data, state, cfg):
    import torch
    import torch.nn.functional as F
    if cfg.device != "cuda":
        raise RuntimeError("CUDA graphs need --device cuda")
    X, Y, model, common = torch_setup(data, state, cfg)
    B = cfg.batch_size
    lr = torch.tensor(cfg.lr, device=cfg.device)   # read on the device by every replay
    opt, note = capturable_adam(model.parameters(), lr)
    # The schedule runs on a float-lr shadow: torch's scheduler on a Tensor lr does its arithmetic
    # in small device ops whose form has changed across versions; this keeps the host numbers of
    # the eager rows and costs one fill_ kernel per step.
    shadow = torch.optim.SGD([torch.zeros(1)], lr=cfg.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(shadow, T_max=cfg.total_steps)
    shadow.step()   # a no-op (no grads) that spares the "scheduler before optimizer" warning
    static_idx = torch.zeros(B, dtype=torch.int64, device=cfg.device)
    graph = []

    def body():
        loss = F.cross_entropy(model(X[static_idx]), Y[static_idx])
        loss.backward()
        opt.step()

    def step(perm, i):
        static_idx.copy_(perm[i * B:(i + 1) * B])
        graph[0].replay()

    def warmup(perm):   # WARMUP_STEPS - 1 eager steps on a side stream, capture, first replay
        graph.append(capture_torch_step(body, opt, lambda i: static_idx.copy_(perm[i * B:(i + 1) * B]),
                                        WARMUP_STEPS - 1)[0])
        step(perm, WARMUP_STEPS - 1)

    def sched_step():
        sched.step()
        lr.fill_(sched.get_last_lr()[0])
    return Trainer(step=step, sched_step=sched_step, warmup=warmup, note=note, **common)


def setup_paragrad(data, state, cfg, jit):
    import paragrad as pg
    import paragrad.nn.functional as F
    dev = cfg.device
    X, Y, xte, yte = (pg.tensor(data[k], device=dev) for k in ("xtrain", "ytrain", "xtest", "ytest"))
    model = paragrad_cnn(state, dev)
    opt = pg.optim.Adam(model.parameters(), lr=cfg.lr)
    sched = pg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.total_steps)
    B = cfg.batch_size

    def train_step(idx):          # idx: (B,) int64 on the device
        x, y = X[idx], Y[idx]
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    fn = pg.jit(train_step) if jit else train_step

    def evaluate():
        model.eval()
        with pg.no_grad():
            correct = None
            for i in range(0, len(yte), EVAL_CHUNK):
                hits = (model(xte[i:i + EVAL_CHUNK]).argmax(1) == yte[i:i + EVAL_CHUNK]).sum()
                correct = hits if correct is None else correct + hits
        model.train()
        return correct.item() / len(yte)

    def details():
        return f"one CUDA graph of {fn.graph_nodes()} nodes per step" if jit and dev == "cuda" else ""
    return Trainer(step=lambda perm, i: fn(perm[i * B:(i + 1) * B]), sched_step=sched.step,
                   permutation=lambda order: pg.tensor(order, device=dev), evaluate=evaluate,
                   sync=pg.cuda.synchronize if dev == "cuda" else (lambda: None), details=details,
                   note="pg.optim.Adam" + (", step under pg.jit" if jit else ", eager"))


SETUPS = {"paragrad-jit": lambda d, s, c: setup_paragrad(d, s, c, jit=True),
          "paragrad-eager": lambda d, s, c: setup_paragrad(d, s, c, jit=False),
          "torch-eager": setup_torch_eager,
          "torch-graph": setup_torch_graph,
          "torch-compile": lambda d, s, c: setup_torch_eager(d, s, c, compile_fwd=True)}


# ---- the protocol ----------------------------------------------------------------------------

@dataclass
class Config:
    device: str
    epochs: int
    batch_size: int
    lr: float
    target: float
    eval_every: int
    steps_per_epoch: int

    @property
    def total_steps(self):
        return self.epochs * self.steps_per_epoch


@dataclass
class Row:
    name: str
    warmup_s: float = float("nan")
    time_s: float | None = None        # wall time to the target, evaluations included
    train_s: float | None = None       # training segments only, up to the target
    steps: int | None = None           # training steps to the target (warm-up excluded)
    final_acc: float | None = None     # accuracy of the last evaluation
    curve: list = field(default_factory=list)   # (step, wall s, train s, accuracy) per evaluation
    note: str = ""
    error: str = ""


def run_protocol(name, data, state, cfg):
    row = Row(LABELS[name])
    try:
        tr = SETUPS[name](data, state, cfg)
        row.note = tr.note
        orders = np.random.default_rng(SEED)          # the same orders for every framework
        n = len(data["ytrain"])
        perm = tr.permutation(orders.permutation(n))
        row.warmup_s = timed_warmup(tr, perm, WARMUP_STEPS)
        train_until_target(tr, row, orders, n, cfg)
        try:   # after the timed run, so that asking costs no timed work
            row.note = ", ".join(s for s in (row.note, tr.details()) if s)
        except Exception as e:  # noqa: BLE001 - a detail we can't read is left out, with the reason
            print(f"  {row.name}: details failed: {type(e).__name__}: {e}")
    except Exception as e:  # noqa: BLE001 - one framework failing must not end the run
        row.error = f"{type(e).__name__}: {e}".split("\n")[0][:160]
        print(f"  {row.name} failed:\n" + "".join(traceback.format_exc().splitlines(True)[-12:]), flush=True)
    return row


def train_until_target(tr, row, orders, n, cfg):
    """The timed run: train, evaluating every cfg.eval_every steps and at each epoch end, until
    an evaluation reaches cfg.target or the epochs run out. Fills row's timing fields."""
    start = time.perf_counter()
    train_s, step = 0.0, 0
    for _ in range(cfg.epochs):
        seg = time.perf_counter()        # the device is idle here: the last evaluation read it
        perm = tr.permutation(orders.permutation(n))
        for i in range(cfg.steps_per_epoch):
            tr.step(perm, i)
            tr.sched_step()
            step += 1
            if step % cfg.eval_every and i != cfg.steps_per_epoch - 1:
                continue
            tr.sync()
            train_s += time.perf_counter() - seg
            acc = tr.evaluate()
            wall = time.perf_counter() - start
            row.curve.append((step, round(wall, 4), round(train_s, 4), acc))
            row.final_acc = acc
            if acc >= cfg.target:
                row.time_s, row.train_s, row.steps = wall, train_s, step
                print_curve(row)
                return
            seg = time.perf_counter()
    print_curve(row)


def print_curve(row):
    points = [f"{s} {w:.2f}s {a * 100:.2f}" for s, w, _, a in row.curve]
    lines = [", ".join(points[i:i + 6]) for i in range(0, len(points), 6)]
    print(f"  {row.name}: (step, seconds, accuracy %) " + ("\n" + " " * 6).join(lines), flush=True)


def print_table(rows, cfg):
    pct = f"{cfg.target * 100:g}%"
    print(f"\nMNIST CNN (MNISTCNN, 103k parameters), Adam lr {cfg.lr:g} + cosine over {cfg.epochs} epochs, "
          f"batch {cfg.batch_size}, {cfg.steps_per_epoch} steps/epoch, test accuracy every {cfg.eval_every} "
          f"steps and at epoch ends; time to {pct} test accuracy")
    ref = {r.name: r.time_s for r in rows if r.time_s and not r.error}
    ref_eager, ref_graph = ref.get(LABELS["torch-eager"]), ref.get(LABELS["torch-graph"])
    to = f"to {pct} s"
    print(f"{'framework':17s} {'warm-up':>8s} {to:>11s} {'train s':>8s} {'steps':>6s} {'ms/step':>8s} "
          f"{'final acc':>9s} {'/teager':>7s} {'/tgraph':>7s}")
    for r in rows:
        if r.error:
            print(f"{r.name:17s} {r.error}")
            continue
        acc = f"{r.final_acc * 100:8.2f}%" if r.final_acc is not None else f"{'-':>9s}"
        if r.time_s is None:
            print(f"{r.name:17s} {r.warmup_s:8.2f} {'not reached':>11s} {'-':>8s} {'-':>6s} {'-':>8s} {acc} "
                  f"{'-':>7s} {'-':>7s}")
            continue
        ratio = lambda base: f"{r.time_s / base:7.2f}" if base else f"{'-':>7s}"  # noqa: E731
        print(f"{r.name:17s} {r.warmup_s:8.2f} {r.time_s:11.3f} {r.train_s:8.3f} {r.steps:6d} "
              f"{1000 * r.train_s / r.steps:8.3f} {acc} {ratio(ref_eager)} {ratio(ref_graph)}")
    print(f"{to}: wall time after the warm-up, evaluations included; train s: training segments only; "
          f"/teager, /tgraph: {to} over that of torch eager, torch CUDA graph (>1 = slower)")
    for r in rows:
        if r.note and not r.error:
            print(f"  {r.name}: {r.note}")


# ---- main ------------------------------------------------------------------------------------

def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=5, help="at most this many epochs (the cosine schedule's length)")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3, help="Adam's initial learning rate")
    p.add_argument("--target", type=float, default=0.99, help="test accuracy to reach (fraction)")
    p.add_argument("--eval-every", type=int, default=None,
                   help="evaluate every N steps (default: a quarter epoch), and at each epoch end")
    p.add_argument("--frameworks", nargs="+", default=list(DEFAULT_FRAMEWORKS), metavar="NAME",
                   help=f"any of {', '.join(FRAMEWORKS)} (default: {', '.join(DEFAULT_FRAMEWORKS)})")
    p.add_argument("--data-dir", default=None, help="folder holding mnist/ (default: $PARAGRAD_DATA, "
                   "else ../shared/data, else .data)")
    p.add_argument("--tf32", action="store_true", help="allow TF32 for float32 GEMMs and convolutions "
                   "in both frameworks (default: off in both)")
    p.add_argument("--limit-steps", type=int, default=None, help="train only N steps per epoch (quick runs)")
    p.add_argument("--limit-test", type=int, default=None, help="evaluate on the first N test images (quick runs)")
    p.add_argument("--json", default=None, help="also write the numbers to this file")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help=argparse.SUPPRESS)  # CPU smoke test
    args = p.parse_args()
    args.frameworks = [n for f in args.frameworks for n in f.split(",") if n]
    if unknown := [n for n in args.frameworks if n not in FRAMEWORKS]:
        p.error(f"unknown framework(s) {', '.join(unknown)}; choose from {', '.join(FRAMEWORKS)}")
    for name in ("epochs", "batch_size", "eval_every", "limit_steps", "limit_test"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive")
    if args.lr <= 0 or not 0 < args.target <= 1:
        p.error("--lr must be positive and --target in (0, 1]")
    return args


def main():
    args = parse_args()
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"bench/mnist_cnn.py needs a CUDA GPU, and torch {torch.__version__} sees none "
                 f"(torch.cuda.is_available() is False). For a CPU smoke test of the code paths: python "
                 f"bench/mnist_cnn.py --device cpu --frameworks paragrad-jit torch-eager --epochs 1 "
                 f"--limit-steps 20 --eval-every 10 --limit-test 1000 --target 0.5")
    root = Path(args.data_dir) if args.data_dir else default_data_dir()
    if root is None:
        sys.exit("bench/mnist_cnn.py: no MNIST found; pass --data-dir (the folder holding mnist/) or set PARAGRAD_DATA")
    import paragrad as pg
    # one float32 precision in both frameworks: paragrad's switch covers GEMMs and convolutions
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = args.tf32
    torch.set_float32_matmul_precision("high" if args.tf32 else "highest")
    pg.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.benchmark = pg.backends.cudnn.benchmark = True      # both autotune convs

    print_header(args.device)
    data = load_mnist(root, limit_test=args.limit_test)
    steps = len(data["ytrain"]) // args.batch_size
    steps = min(steps, args.limit_steps) if args.limit_steps else steps
    cfg = Config(device=args.device, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                 target=args.target, eval_every=args.eval_every or max(steps // 4, 1), steps_per_epoch=steps)
    print(f"data    : {root}/mnist, {len(data['ytrain'])} train / {len(data['ytest'])} test images; "
          f"{steps} steps per epoch; float32, TF32 {'on' if args.tf32 else 'off'}")
    state = initial_state()
    check = check_same_init(state, data, args.device)
    print(f"weights : {check['tensors']} tensors from pg.manual_seed({SEED}) into every model; max |logit "
          f"diff| paragrad vs torch on {check['images']} test images: eval {check['eval_max_abs_diff']:.2e}, "
          f"train {check['train_max_abs_diff']:.2e}", flush=True)
    if max(check["eval_max_abs_diff"], check["train_max_abs_diff"]) > 1e-3:
        print("WARNING : the two models disagree beyond rounding; the comparison below is suspect")
    rows = [run_protocol(name, data, state, cfg) for name in args.frameworks]
    print_table(rows, cfg)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "config": asdict(cfg), "tf32": args.tf32,
                       "init_check": check, "rows": [asdict(r) for r in rows]}, f, indent=1)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
