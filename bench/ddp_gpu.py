"""Data-parallel training on several GPUs: paragrad (the whole step under pg.jit, DDP over nccl
with its gradient all-reduces captured in the graph) beside PyTorch's DistributedDataParallel
(NCCL, eager, optionally torch.compile), on 1, 2, 4 and 8 GPUs, in one run.

    python bench/ddp_gpu.py [--gpus 1,2,4,8] [--models resnet,gpt,gpt2] [--torch-compile] [--json PATH]
    python bench/ddp_gpu.py --models gpt --frameworks torch.compile     # paragrad and torch.compile only
    python bench/ddp_gpu.py --device cpu          # CPU smoke test: mpi / gloo, tiny models

Models (per GPU, the single-GPU benches' builders and settings, bench/resnet.py and bench/gpt.py):
  resnet  ResNet-18 (torchvision's layout, ImageNet stem, 10 classes), 32x32 random images,
          batch 256 per GPU, bf16 autocast, model and images channels-last, SGD (lr 0.1,
          momentum 0.9, weight decay 5e-4), cudnn.benchmark on: images/s;
  gpt     nanoGPT's shakespeare-char GPT (6 layers, 6 heads, 384 wide, block 256, vocab 65,
          dropout 0.2), batch 64 per GPU, bf16 autocast, AdamW as nanoGPT (fused), gradient
          clipping at 1.0, random tokens: tokens/s;
  gpt2    GPT-2 124M (nanoGPT's config/train_gpt2.py model: 12 layers, 12 heads, 768 wide, block
          1024, vocabulary 50304, no biases, dropout 0), batch 16 per GPU, bf16 autocast, AdamW
          (lr 6e-4, betas (0.9, 0.95), fused), clipping at 1.0, random tokens: tokens/s and MFU
          (bench/gpt2.py runs it beside PyTorch DDP eager and torch.compile).
MFU (GPT models): model FLOPs a token as nanoGPT's estimate_mfu counts them (6 N + 12 L C T, N
the parameters without the position embedding, reported by paragrad's rank 0) times tokens/s,
over the GPUs' dense bf16 peak (989.4 TFLOP/s each for an H100 SXM or H200; no figure for other
cards).
Both frameworks start from the same weights (paragrad's model built with seed 0, copied into the
PyTorch one) and train on the same random batches already on the device (rank r: NumPy seed r,
4 batches cycled). DDP: bucket 25 MB in both, buffers broadcast before each forward (both
defaults). Each count starts its own rank processes: paragrad through `paragrad launch`'s
launcher command (mpirun, NCCL_NVLS_ENABLE=0 passed to every rank), PyTorch as one process per
GPU joined through a TCP rendezvous (NCCL_NVLS_ENABLE=0 in their environment too).
Timing, on rank 0: warm-up steps (cuDNN autotuning, pg.jit's capture, torch.compile), then
--windows windows of --steps steps, each between a barrier and a device synchronization on
every rank; throughput = global samples (or tokens) of a window / its seconds, the median window.
  scaling efficiency = throughput(n) / (n x throughput(1)), of each framework against itself;
  ratio              = paragrad / PyTorch DDP eager (and / torch.compile with --torch-compile);
  bytes/step         = what one rank hands to collectives per optimizer step (paragrad's
                       counter): DDP (ddp.bytes_per_step: gradients and buffers), LocalSGD
                       N=10 and DiLoCo H=50 (dist.bytes_communicated() over one sync period of
                       eager steps, divided by its steps).

Targets this run is judged by: paragrad's scaling efficiency >= 90 % at the largest GPU count,
and paragrad's throughput >= PyTorch DDP's at every count (both models).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from ddp import ONE_THREAD, free_port  # noqa: E402 - the CPU bench's launch helpers

UNITS = {"resnet": "images/s", "gpt": "tokens/s", "gpt2": "tokens/s"}
WARMUP = {"resnet": 5, "gpt": 10, "gpt2": 10}
SCHEMES = (("localsgd", "LocalSGD N=10", 10), ("diloco", "DiLoCo H=50", 50))
N_BATCHES = 4
# (per-GPU batch, model settings) on the GPU and in the CPU smoke test
RESNET = {"cuda": dict(batch=256, size=32, classes=10), "cpu": dict(batch=2, size=32, classes=10)}
GPTS = {   # model -> per device (batch, shape), and the rest of its config
    "gpt": ({"cuda": dict(batch=64, n_layer=6, n_head=6, n_embd=384, block_size=256),
             "cpu": dict(batch=2, n_layer=1, n_head=2, n_embd=32, block_size=16)},
            dict(vocab_size=65, dropout=0.2, bias=True)),
    "gpt2": ({"cuda": dict(batch=16, n_layer=12, n_head=12, n_embd=768, block_size=1024),
              "cpu": dict(batch=2, n_layer=1, n_head=2, n_embd=32, block_size=16)},
             dict(vocab_size=50304, dropout=0.0, bias=False)),
}
# AdamW as each model's nanoGPT config: (weight decay, lr, betas)
GPT_ADAMW = {"gpt": (0.1, 1e-3, (0.9, 0.99)), "gpt2": (0.1, 6e-4, (0.9, 0.95))}
BF16_PEAK = {"H100": 989.4e12, "H200": 989.4e12}     # dense bf16 FLOP/s of the SXM cards


def gpt_shape(model, device):
    return GPTS[model][0][device]


def gpt_config(model, device):
    c = gpt_shape(model, device)
    return dict(n_layer=c["n_layer"], n_head=c["n_head"], n_embd=c["n_embd"], block_size=c["block_size"],
                **GPTS[model][1])


def units_per_step(model, device, world):
    """Global samples (resnet: images, the GPTs: tokens) of one step on `world` ranks."""
    if model == "resnet":
        return RESNET[device]["batch"] * world
    c = gpt_shape(model, device)
    return c["batch"] * c["block_size"] * world


def mfu(model, device, params, rate, gpus, device_name):
    """Model FLOPs utilization of `rate` tokens/s on `gpus` GPUs (nanoGPT's estimate_mfu count),
    or None where the card's peak isn't known."""
    peak = next((v for k, v in BF16_PEAK.items() if k in device_name and "PCIe" not in device_name), None)
    if peak is None or not params or not rate:
        return None
    c = gpt_shape(model, device)
    flops_per_token = 6 * params + 12 * c["n_layer"] * c["n_embd"] * c["block_size"]
    return flops_per_token * rate / (gpus * peak)


def random_data(model, device, rank):
    """This rank's N_BATCHES (x, y) NumPy batches: the same in both frameworks."""
    if model == "resnet":
        from resnet import random_batches
        c = RESNET[device]
        return random_batches(c["size"], c["batch"], c["classes"], k=N_BATCHES, seed=rank)
    c, rng = gpt_shape(model, device), np.random.default_rng(rank)
    vocab = GPTS[model][1]["vocab_size"]
    tokens = [rng.integers(0, vocab, (c["batch"], c["block_size"] + 1)) for _ in range(N_BATCHES)]
    return [(t[:, :-1].astype(np.int64), t[:, 1:].astype(np.int64)) for t in tokens]


# ---- paragrad: one rank -------------------------------------------------------------------------
def paragrad_parts(model_name, device, bf16):
    """(model, optimizer, loss(net, x, y), after_backward(model)) built from seed 0."""
    import paragrad as pg
    import paragrad.nn.functional as F
    from paragrad.nn.utils.clip_grad import clip_grad_norm_
    if model_name == "resnet":
        from paragrad.models import resnet18
        pg.manual_seed(0)
        layout = pg.channels_last if bf16 else pg.contiguous_format
        model = resnet18(num_classes=RESNET["cpu"]["classes"], stem="imagenet").to(device, memory_format=layout)
        opt = pg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
        return model, opt, lambda net, x, y: F.cross_entropy(net(x), y), lambda m: None
    from gpt import paragrad_gpt
    model = paragrad_gpt(gpt_config(model_name, "cuda" if device.startswith("cuda") else "cpu"), device)
    opt = model.configure_optimizers(*GPT_ADAMW[model_name], device.split(":")[0])
    return model, opt, lambda net, x, y: net(x, y)[1], lambda m: clip_grad_norm_(m.parameters(), 1.0)


def paragrad_worker(a):
    import paragrad as pg
    import paragrad.distributed as dist
    from common import per_second
    from paragrad.nn.parallel import DistributedDataParallel as DDP
    cuda = a.device == "cuda"
    dist.init_process_group("nccl" if cuda else "mpi", timeout=datetime.timedelta(seconds=300))
    rank, world = dist.get_rank(), dist.get_world_size()
    index = dist.get_node_local_rank(fallback_rank=rank) % pg.cuda.device_count() if cuda else None
    device = f"cuda:{index}" if cuda else "cpu"
    pg.backends.cudnn.benchmark = cuda
    bf16 = cuda     # bf16 autocast on the GPU; float32 in the CPU smoke test
    layout = pg.channels_last if bf16 and a.model == "resnet" else pg.contiguous_format
    data = [(pg.tensor(x, device=device).contiguous(memory_format=layout) if a.model == "resnet" else
             pg.tensor(x, device=device), pg.tensor(y, device=device)) for x, y in random_data(a.model, a.device, rank)]

    model, opt, loss_of, after_backward = paragrad_parts(a.model, device, bf16)
    model.eval()    # the loss before training (eval: no dropout, BatchNorm's initial statistics)
    with pg.no_grad(), pg.autocast(a.device, dtype=pg.bfloat16, enabled=bf16):
        first_loss = loss_of(model, *data[0]).float().item()
    model.train()
    ddp = DDP(model, device_ids=[index] if cuda else None, bucket_cap_mb=25)

    @pg.jit
    def train_step(x, y):
        with pg.autocast(a.device, dtype=pg.bfloat16, enabled=bf16):
            loss = loss_of(ddp, x, y)
        opt.zero_grad()
        loss.backward()
        after_backward(model)
        opt.step()
        return loss

    def sync():
        dist.barrier()
        if cuda:
            pg.cuda.synchronize()
    rate = per_second(lambda i: train_step(*data[i % len(data)]), sync, units_per_step(a.model, a.device, world),
                      a.steps, WARMUP[a.model], a.windows)
    result = {"rate": rate, "first_loss": first_loss, "bytes_per_step": {"DDP": ddp.bytes_per_step},
              "graph_nodes": train_step.graph_nodes() if cuda else None,
              "params": model.get_num_params() if a.model in GPTS else None}
    del ddp, model, opt, train_step
    if world > 1:
        for key, label, every in SCHEMES:
            result["bytes_per_step"][label] = scheme_bytes(key, every, a.model, device, bf16, data)
    dist.destroy_process_group()
    return result if rank == 0 else None


def scheme_bytes(key, every, model_name, device, bf16, data):
    """dist.bytes_communicated() per step over one sync period of eager LocalSGD or DiLoCo steps
    (a fresh model: DDP's gradient hooks stay out of it)."""
    import paragrad as pg
    import paragrad.distributed as dist
    model, opt, loss_of, after_backward = paragrad_parts(model_name, device, bf16)
    stepper = dist.LocalSGD(model, opt, sync_every=every) if key == "localsgd" else \
        dist.DiLoCo(model, opt, sync_every=every)
    dist.reset_bytes_communicated()
    for i in range(every):
        with pg.autocast(device.split(":")[0], dtype=pg.bfloat16, enabled=bf16):
            loss = loss_of(model, *data[i % len(data)])
        opt.zero_grad()
        loss.backward()
        after_backward(model)
        stepper.step()
    return dist.bytes_communicated() / every


# ---- PyTorch: one rank --------------------------------------------------------------------------
def torch_model(model_name, device):
    """The PyTorch model holding paragrad_parts' initial weights."""
    import torch
    if model_name in GPTS:
        from gpt import load_paragrad_weights, torch_gpt
        cfg = gpt_config(model_name, "cuda" if device.startswith("cuda") else "cpu")
        return load_paragrad_weights(torch_gpt(cfg), cfg, device)
    from resnet import torch_resnet18
    model = torch_resnet18(RESNET["cpu"]["classes"], "imagenet")
    source = list(paragrad_parts("resnet", "cpu", False)[0].state_dict().items())
    target = list(model.state_dict().items())
    # the same architecture, registered in the same order (torchvision's); names differ
    # (Sequential indices here), so the tensors are copied by position, shapes checked
    if len(source) != len(target):
        raise RuntimeError(f"resnet18: {len(source)} paragrad tensors, {len(target)} torch tensors")
    with torch.no_grad():
        for (pname, p), (tname, t) in zip(source, target):
            if tuple(p.shape) != tuple(t.shape):
                raise RuntimeError(f"resnet18: {pname} {tuple(p.shape)} vs torch {tname} {tuple(t.shape)}")
            t.copy_(torch.from_numpy(np.asarray(p.numpy())).to(t.dtype))
    return model.to(device)


def torch_worker(a):
    import torch
    import torch.distributed as tdist
    import torch.nn.functional as F
    from common import per_second
    cuda = a.device == "cuda"
    if cuda:
        torch.cuda.set_device(a.rank)
        torch.backends.cudnn.benchmark = True
    else:
        torch.set_num_threads(1)
    tdist.init_process_group("nccl" if cuda else "gloo", init_method=f"tcp://127.0.0.1:{a.port}",
                             rank=a.rank, world_size=a.world, timeout=datetime.timedelta(seconds=300))
    device = f"cuda:{a.rank}" if cuda else "cpu"
    bf16 = cuda
    layout = torch.channels_last if bf16 and a.model == "resnet" else torch.contiguous_format
    model = torch_model(a.model, device).to(memory_format=layout)
    data = [(torch.tensor(x, device=device).contiguous(memory_format=layout) if a.model == "resnet" else
             torch.tensor(x, device=device), torch.tensor(y, device=device))
            for x, y in random_data(a.model, a.device, a.rank)]
    if a.model == "resnet":
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    else:
        opt = model.configure_optimizers(*GPT_ADAMW[a.model], a.device)
    model.eval()    # as paragrad_worker: the loss before training, from the same weights and batch
    with torch.no_grad(), torch.autocast(a.device, dtype=torch.bfloat16, enabled=bf16):
        x, y = data[0]
        first_loss = (F.cross_entropy(model(x), y) if a.model == "resnet" else model(x, y)[1]).float().item()
    model.train()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[a.rank] if cuda else None,
                                                    bucket_cap_mb=25)
    net = torch.compile(ddp) if a.framework == "torch.compile" else ddp

    def step(i):
        x, y = data[i % len(data)]
        with torch.autocast(a.device, dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(net(x), y) if a.model == "resnet" else net(x, y)[1]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if a.model in GPTS:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    def sync():
        tdist.barrier(device_ids=[a.rank] if cuda else None)     # nccl: on this rank's GPU
        if cuda:
            torch.cuda.synchronize()
    warmup = WARMUP[a.model] * (3 if a.framework == "torch.compile" else 1)
    rate = per_second(step, sync, units_per_step(a.model, a.device, a.world), a.steps, warmup, a.windows)
    tdist.destroy_process_group()
    return {"rate": rate, "first_loss": first_loss} if a.rank == 0 else None


def worker(a):
    result = paragrad_worker(a) if a.framework == "paragrad" else torch_worker(a)
    if result is not None:
        Path(a.result).write_text(json.dumps(result))


# ---- the driver ---------------------------------------------------------------------------------
def run_one(framework, model, nproc, a, folder):
    """Start nproc ranks of one configuration -> rank 0's result dict, or {"error": text}."""
    from paragrad.cli.launch import launcher_command
    result = folder / f"{framework}-{model}-{nproc}.json"
    common = [sys.executable, str(Path(__file__).resolve()), "--worker", framework, "--model", model,
              "--device", a.device, "--steps", str(a.steps), "--windows", str(a.windows), "--result", str(result)]
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", PYTHONPATH=os.pathsep.join(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    if a.device == "cpu":
        env.update(ONE_THREAD)
    if framework == "paragrad":
        argvs = [launcher_command(nproc, common)]
    else:
        port = free_port()
        argvs = [common + ["--rank", str(r), "--world", str(nproc), "--port", str(port)] for r in range(nproc)]
    with tempfile.TemporaryFile("w+") as log:     # a file, not a pipe: ranks never block on output
        procs = [subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, text=True) for argv in argvs]
        deadline, failed = time.monotonic() + a.timeout, None
        # until all end, one fails (torch's other ranks would wait for it until their own
        # timeout), or the time is up
        while any(p.poll() is None for p in procs) and not any(p.poll() for p in procs):
            if time.monotonic() > deadline:
                failed = f"still running after {a.timeout} s"
                break
            time.sleep(0.2)
        for p in procs:     # SIGTERM first: mpirun passes it on to its ranks, SIGKILL would orphan them
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        log.seek(0)
        output = log.read()
    if failed is None and (any(p.returncode for p in procs) or not result.exists()):
        failed = f"exit status {[p.returncode for p in procs]}"
    if failed:
        tail = [line for line in output.splitlines() if line.strip()][-12:]
        return {"error": f"{failed}: " + " | ".join(tail)[-1500:]}
    return json.loads(result.read_text())


def efficiency(rows, model, framework, n):
    one, this = rows.get((model, framework, 1), {}).get("rate"), rows.get((model, framework, n), {}).get("rate")
    return this / (n * one) if one and this else None


def pct(x):
    return f"{100 * x:.1f}%" if x is not None else "-"


def print_model_table(rows, model, counts, frameworks):
    rate = {k: r.get("rate") for k, r in rows.items()}
    print(f"\n{model}: {UNITS[model]} (global, all GPUs); eff = throughput(n) / (n x throughput(1)); "
          f"ratio = paragrad / row (>1 = paragrad faster)")
    head = f"{'GPUs':>4s} {'paragrad jit+DDP':>17s} {'eff':>6s}"
    for f in frameworks[1:]:
        head += f" {f + ' DDP':>19s} {'eff':>6s} {'ratio':>6s}"
    print(head)
    for n in counts:
        pg_rate = rate.get((model, "paragrad", n))
        line = f"{n:4d} {pg_rate or 0:17,.0f} {pct(efficiency(rows, model, 'paragrad', n)):>6s}" if pg_rate else \
            f"{n:4d} {'failed':>17s} {'-':>6s}"
        for f in frameworks[1:]:
            t = rate.get((model, f, n))
            r = f"{pg_rate / t:6.2f}" if pg_rate and t else f"{'-':>6s}"
            line += (f" {t:19,.0f}" if t else f" {'failed':>19s}") + f" {pct(efficiency(rows, model, f, n)):>6s} {r}"
        print(line)
    for (m, f, n), r in rows.items():
        if m == model and r.get("error"):
            print(f"  {f} on {n} GPU(s) failed: {r['error']}")
    nbytes = [(n, rows[model, "paragrad", n]["bytes_per_step"]) for n in counts
              if "bytes_per_step" in rows.get((model, "paragrad", n), {})]
    if nbytes:
        labels = ["DDP"] + [label for _, label, _ in SCHEMES]
        print(f"  paragrad bytes/step per rank: " + "; ".join(
            f"{n} GPU(s): " + ", ".join(f"{lab} {b[lab]:,.0f}" for lab in labels if lab in b) for n, b in nbytes))


def print_mfu(rows, model, counts, frameworks, device, device_name):
    params = next((r["params"] for (m, f, n), r in rows.items() if m == model and r.get("params")), None)
    cells = []
    for f in frameworks:
        for n in counts:
            u = mfu(model, device, params, rows.get((model, f, n), {}).get("rate"), n, device_name)
            cells.append(f"{f} {n}: {pct(u)}")
    peak = next((k for k in BF16_PEAK if k in device_name and "PCIe" not in device_name), None)
    print(f"  MFU ({params or 0:,} parameters without the position embedding; "
          f"{'peak ' + peak + ' bf16 dense, ' if peak else 'no known peak for ' + device_name + ': '}"
          f"per GPU): " + "; ".join(cells))


def print_targets(rows, models, counts, frameworks):
    """The two targets in the docstring, met or not (a failed row counts as missed)."""
    top = max(counts)
    for model in models:
        eff = efficiency(rows, model, "paragrad", top)
        print(f"target {model}: paragrad scaling efficiency at {top} GPUs >= 90%: {pct(eff)} -> "
              f"{'met' if eff is not None and eff >= 0.9 else 'missed'}" if top > 1 else
              f"target {model}: scaling efficiency needs more than one GPU")
        if "torch" in frameworks:
            ratios = [(rows.get((model, "paragrad", n), {}).get("rate") or 0) /
                      rows[model, "torch", n]["rate"] if rows.get((model, "torch", n), {}).get("rate") else None
                      for n in counts]
            shown = ", ".join(f"{n}: {r:.2f}x" if r is not None else f"{n}: -" for n, r in zip(counts, ratios))
            met = all(r is not None and r >= 1 for r in ratios)
            print(f"target {model}: paragrad >= torch DDP eager at every count: {shown} -> {'met' if met else 'missed'}")


def nccl_version(torch):
    """torch's NCCL version: a tuple in recent torch, an int (2.21.5 -> 22105) in older ones."""
    v = torch.cuda.nccl.version()
    return ".".join(map(str, v)) if isinstance(v, tuple) else f"{v // 10000}.{v // 100 % 100}.{v % 100}"


def check_same_start(rows, cpu):
    """Same weights and batch in both frameworks -> the same loss before training: equal to
    float32 rounding on the CPU, within bf16 autocast's error on the GPU."""
    tol = 1e-4 if cpu else 2e-2
    for (model, f, n), r in rows.items():
        mine = rows.get((model, "paragrad", n), {}).get("first_loss")
        if f != "paragrad" and mine is not None and r.get("first_loss") is not None:
            gap = abs(mine - r["first_loss"]) / max(abs(mine), 1e-12)
            if gap > tol:
                print(f"WARNING {model} {n}: loss before training differs: paragrad {mine:.6f}, {f} "
                      f"{r['first_loss']:.6f} (relative {gap:.1e} > {tol:.0e}): not the same start")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", default="1,2,4,8", help="rank counts (one GPU each), those above the "
                   "machine's GPU count are left out")
    p.add_argument("--models", default="resnet,gpt", help="comma separated, of resnet, gpt, gpt2")
    p.add_argument("--torch-compile", action="store_true", help="also PyTorch DDP with torch.compile")
    p.add_argument("--frameworks", default="paragrad,torch",
                   help="the rows beside paragrad's, of torch (eager), torch.compile; paragrad always runs")
    p.add_argument("--steps", type=int, default=None, help="steps per timed window (default 50; CPU: 2)")
    p.add_argument("--windows", type=int, default=None, help="timed windows, median taken (default 3; CPU: 1)")
    p.add_argument("--timeout", type=float, default=540, help="seconds per configuration before it is killed")
    p.add_argument("--json", default=None, help="also write the numbers to this file")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                   help="cpu: smoke test (mpi and gloo, tiny models, 1 and 2 processes)")
    p.add_argument("--worker", choices=["paragrad", "torch", "torch.compile"], dest="framework",
                   help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--world", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    a = p.parse_args()
    cpu = a.device == "cpu"
    a.steps = a.steps or (2 if cpu else 50)
    a.windows = a.windows or (1 if cpu else 3)
    if a.framework:
        return worker(a)
    models = [m for m in a.models.split(",") if m]
    if bad := [m for m in models if m not in UNITS]:
        p.error(f"unknown model: {', '.join(bad)} (of {', '.join(UNITS)})")
    import torch
    if not cpu and not torch.cuda.is_available():
        sys.exit("bench/ddp_gpu.py needs CUDA GPUs (torch.cuda.is_available() is False); CPU smoke test: "
                 "python bench/ddp_gpu.py --device cpu")
    available = 2 if cpu else torch.cuda.device_count()
    wanted = [int(n) for n in a.gpus.split(",") if n]
    counts = [n for n in wanted if n <= available] if not cpu else [1, 2]
    if not counts:
        sys.exit(f"none of --gpus {a.gpus} fits this machine's {available} GPU(s)")
    frameworks = ["paragrad"] + [f for f in a.frameworks.split(",") if f and f != "paragrad"]
    if a.torch_compile and "torch.compile" not in frameworks:
        frameworks.append("torch.compile")
    if bad := [f for f in frameworks if f not in ("paragrad", "torch", "torch.compile")]:
        p.error(f"unknown framework: {', '.join(bad)} (of paragrad, torch, torch.compile)")
    from common import print_header
    print_header(a.device)
    if not cpu:
        print(f"gpus    : {available} ({torch.cuda.get_device_name(0)}), counts run: {counts}; "
              f"torch NCCL {nccl_version(torch)}; NCCL_NVLS_ENABLE=0")
    print(f"run     : {a.windows} window(s) of {a.steps} steps after the warm-up "
          f"({', '.join(f'{m} {WARMUP[m]}' for m in models)} steps; torch.compile 3x), median window; "
          f"per GPU: " + ", ".join(f"{m} batch {RESNET[a.device]['batch']}" if m == "resnet" else
                                   f"{m} batch {gpt_shape(m, a.device)['batch']} x "
                                   f"{gpt_shape(m, a.device)['block_size']} tokens" for m in models)
          + f"; {'float32' if cpu else 'bf16 autocast'}")
    rows = {}
    with tempfile.TemporaryDirectory(prefix="paragrad-ddp-gpu-") as tmp:
        for model in models:
            for n in counts:
                for f in frameworks:
                    t0 = time.monotonic()
                    r = rows[model, f, n] = run_one(f, model, n, a, Path(tmp))
                    shown = (f"{r['rate']:,.0f} {UNITS[model]}, loss before training {r['first_loss']:.4f}"
                             if "rate" in r else f"failed: {r['error'][:300]}")
                    print(f"  {model:6s} {f:13s} {n} rank(s): {shown} ({time.monotonic() - t0:.0f} s wall)",
                          flush=True)
                    save(a, rows, counts)
    device_name = "cpu" if cpu else torch.cuda.get_device_name(0)
    for model in models:
        print_model_table(rows, model, counts, frameworks)
        if model in GPTS:
            print_mfu(rows, model, counts, frameworks, a.device, device_name)
    print()
    print_targets(rows, models, counts, frameworks)
    check_same_start(rows, cpu)
    save(a, rows, counts)


def save(a, rows, counts):
    """--json: written after every configuration too, so that a run cut short keeps its rows."""
    if not a.json:
        return
    import torch
    cpu = a.device == "cpu"
    with open(a.json, "w") as out:
        json.dump({"command": " ".join(sys.argv), "device": a.device,
                   "device_name": torch.cuda.get_device_name(0) if not cpu else "cpu", "counts": counts,
                   "steps": a.steps, "windows": a.windows,
                   "rows": [{"model": m, "framework": f, "gpus": n, **r,
                             "efficiency": efficiency(rows, m, f, n)} for (m, f, n), r in rows.items()]},
                  out, indent=1)


if __name__ == "__main__":
    main()
