"""Data-parallel MNIST-MLP training on the CPU: paragrad's DistributedDataParallel, LocalSGD,
DiLoCo and DDP with ZeroRedundancyOptimizer (ZeRO-1) beside PyTorch's DistributedDataParallel
(gloo), with and without its ZeroRedundancyOptimizer, with 1 and 2 processes, in one run.

    python bench/ddp.py [--steps 1000] [--batch 64] [--nprocs 1,2] [--rounds 3]

Every run trains the 784-256-128-10 MLP (paragrad train mnist's default model) with Adam
(lr 1e-3; LocalSGD's and DiLoCo's inner optimizer too) for --steps steps of the global batch
--batch, split over the processes, from the same initial weights (one NumPy RNG) and in the
same data order (a NumPy permutation per epoch; rank r takes its slice of each global batch).
It reports, per scheme and process count:
  samples/s     global samples per second over the steps after a warm-up of 50 (rank 0's clock,
                between barriers), every synchronization included: the median of --rounds
                runs, the rounds interleaving every configuration (other work on the machine
                then hits each alike; its range is printed too);
  accuracy      rank 0's test accuracy on the 10,000 test images after all the steps (--steps a
                multiple of 50 ends LocalSGD N=10 and DiLoCo H=50 on a synchronization);
  bytes/step    what one rank hands to collectives per step: paragrad's bytes_communicated()
                over the run (construction excluded); for torch the gradient bytes of its one
                all-reduce per step (the parameters' bytes: DDP reduces every gradient once),
                with ZeRO-1 plus the bytes of rank 0's share, which it broadcasts;
  state bytes   the optimizer state rank 0 holds (Adam's two moments and step counts): ZeRO-1
                keeps its share's only.
paragrad ranks start with paragrad launch's launcher (mpirun), torch ranks as processes of their
own joined through a TCP rendezvous. Every process runs one BLAS/OpenMP thread, so that two
processes on a two-core machine don't fight over cores; the speed-up from 1 to 2 processes
is then what data parallelism gives.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
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
from mnist import build_mlp, init_weights  # noqa: E402  (the MLP and weights of bench/mnist.py's Table 2)

SIZES = (784, 256, 128, 10)
WARMUP = 50
SCHEMES = {"ddp": "DDP", "localsgd": "LocalSGD N=10", "diloco": "DiLoCo H=50", "zero": "DDP + ZeRO-1"}
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


# ---- the worker: one rank of one run -------------------------------------------------------------
def batches(n, global_batch, steps, rank, world, seed=0):
    """The indices rank `rank` trains on at each step: its slice of each global batch of a new
    permutation per epoch (the same for every framework)."""
    rng, share, out = np.random.default_rng(seed), global_batch // world, []
    while len(out) < steps:
        perm = rng.permutation(n)
        for start in range(0, n - global_batch + 1, global_batch):
            out.append(perm[start + rank * share:start + (rank + 1) * share])
            if len(out) == steps:
                break
    return out


def paragrad_worker(scheme, steps, global_batch, data):
    import paragrad as pg
    import paragrad.distributed as dist
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = build_mlp(pg, init_weights(SIZES), "relu", "cpu")
    if scheme == "zero":
        from paragrad.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(model.parameters(), pg.optim.Adam, lr=1e-3)
    else:
        opt = pg.optim.Adam(model.parameters(), lr=1e-3)
    net, stepper = model, opt
    if scheme in ("ddp", "zero"):
        net = pg.nn.parallel.DistributedDataParallel(model)
    elif scheme == "localsgd":
        stepper = dist.LocalSGD(model, opt, sync_every=10)
    else:
        stepper = dist.DiLoCo(model, opt, sync_every=50)
    X, Y = pg.tensor(data["xtrain"]), pg.tensor(data["ytrain"])
    idx = [pg.tensor(i) for i in batches(len(data["ytrain"]), global_batch, steps, rank, world)]

    def step(i):
        loss = pg.nn.functional.cross_entropy(net(X[idx[i]]), Y[idx[i]])
        opt.zero_grad()
        loss.backward()
        stepper.step()

    dist.reset_bytes_communicated()
    seconds = timed(step, steps, dist.barrier)
    sent = dist.bytes_communicated() / steps
    result = None
    if rank == 0:
        with pg.no_grad():
            logits = model(pg.tensor(data["xtest"]))
        result = {"seconds": seconds, "bytes_per_step": sent, "state_bytes": state_bytes(opt.state),
                  "accuracy": float((logits.argmax(-1).numpy() == data["ytest"]).mean())}
    dist.destroy_process_group()
    return result


def state_bytes(state):
    """Bytes of the tensors in an optimizer's per-parameter state (either framework's)."""
    return sum(v.numel() * v.element_size() for st in state.values() for v in st.values()
               if hasattr(v, "element_size"))


def torch_worker(scheme, steps, global_batch, data, rank, world, port):
    import torch
    import torch.distributed as tdist
    torch.set_num_threads(1)
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    model = build_mlp(torch, init_weights(SIZES), "relu", "cpu")
    net = torch.nn.parallel.DistributedDataParallel(model)
    if scheme == "zero":
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-3)
        local = opt.optim
    else:
        opt = local = torch.optim.Adam(model.parameters(), lr=1e-3)
    X, Y = torch.from_numpy(data["xtrain"]), torch.from_numpy(data["ytrain"])
    idx = [torch.from_numpy(i) for i in batches(len(data["ytrain"]), global_batch, steps, rank, world)]

    def step(i):
        loss = torch.nn.functional.cross_entropy(net(X[idx[i]]), Y[idx[i]])
        opt.zero_grad()
        loss.backward()
        opt.step()

    seconds = timed(step, steps, tdist.barrier)
    result = None
    if rank == 0:
        with torch.no_grad():
            logits = model(torch.from_numpy(data["xtest"]))
        shared = [p for g in local.param_groups for p in g["params"]] if scheme == "zero" else []
        result = {"seconds": seconds, "accuracy": float((logits.argmax(-1).numpy() == data["ytest"]).mean()),
                  "bytes_per_step": sum(p.numel() * p.element_size() for p in [*model.parameters(), *shared]),
                  "state_bytes": state_bytes(local.state)}
    tdist.destroy_process_group()
    return result


def timed(step, steps, barrier):
    """Seconds of the steps after the warm-up, between two barriers (all steps are taken)."""
    for i in range(min(WARMUP, steps)):
        step(i)
    barrier()
    t0 = time.perf_counter()
    for i in range(WARMUP, steps):
        step(i)
    barrier()
    return time.perf_counter() - t0


def worker(args):
    from common import load_mnist
    data = load_mnist(args.data, flat=True)
    if args.framework == "paragrad":
        result = paragrad_worker(args.scheme, args.steps, args.batch, data)
    else:
        result = torch_worker(args.scheme, args.steps, args.batch, data, args.rank, args.world, args.port)
    if result is not None:
        Path(args.result).write_text(json.dumps(result))


# ---- the driver ----------------------------------------------------------------------------------
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_one(framework, scheme, nproc, args, folder):
    from paragrad.cli.launch import launcher_command
    result = folder / f"{framework}-{scheme}-{nproc}.json"
    common = [sys.executable, str(Path(__file__).resolve()), "--worker", framework, "--scheme", scheme,
              "--steps", str(args.steps), "--batch", str(args.batch), "--data", str(args.data),
              "--result", str(result)]
    env = dict(os.environ, **ONE_THREAD, PYTHONPATH=os.pathsep.join(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    if framework == "paragrad":
        procs = [subprocess.Popen(launcher_command(nproc, common), env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)]
    else:
        port = free_port()
        procs = [subprocess.Popen(common + ["--rank", str(r), "--world", str(nproc), "--port", str(port)],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for r in range(nproc)]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    if any(p.returncode for p in procs) or not result.exists():
        raise RuntimeError(f"{framework} {scheme} on {nproc} process(es) failed:\n" + "\n".join(outputs)[-4000:])
    out = json.loads(result.read_text())
    out["samples_per_second"] = args.batch * (args.steps - WARMUP) / out["seconds"]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--batch", type=int, default=64, help="global batch")
    p.add_argument("--nprocs", default="1,2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--data", default=None)
    p.add_argument("--worker", choices=["paragrad", "torch"], dest="framework")
    p.add_argument("--scheme", default="ddp", choices=list(SCHEMES))
    p.add_argument("--result")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--world", type=int, default=1)
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    if args.framework:
        return worker(args)
    from common import default_data_dir, print_header
    args.data = args.data or default_data_dir("mnist")
    if args.data is None:
        sys.exit("MNIST not found: set PARAGRAD_DATA to the folder holding mnist/")
    nprocs = [int(n) for n in args.nprocs.split(",")]
    print_header("cpu", cpu_smoke_test=False)
    print(f"load    : {os.getloadavg()[0]:.2f} (1-minute load average before the runs; "
          f"other work on this machine slows every row alike only roughly)")
    print(f"run     : MLP {'-'.join(map(str, SIZES))}, Adam lr 1e-3, {args.steps} steps of global batch "
          f"{args.batch} ({args.steps * args.batch:,} samples), one thread per process\n")
    runs = [("torch", "ddp"), ("paragrad", "ddp"), ("paragrad", "localsgd"), ("paragrad", "diloco"),
            ("torch", "zero"), ("paragrad", "zero")]
    rounds = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.rounds):
            print(f"round {k + 1}, load {os.getloadavg()[0]:.2f}:")
            for n in nprocs:
                for framework, scheme in runs:
                    r = run_one(framework, scheme, n, args, Path(tmp))
                    rounds.setdefault((framework, scheme, n), []).append(r)
                    print(f"  {framework:8s} {SCHEMES[scheme]:14s} {n} proc: {r['samples_per_second']:9,.0f} "
                          f"samples/s, accuracy {100 * r['accuracy']:.2f}%, {r['bytes_per_step']:,.0f} B/step",
                          flush=True)
    results = {}
    for key, rs in rounds.items():
        rates = sorted(r["samples_per_second"] for r in rs)
        results[key] = {**rs[0], "samples_per_second": statistics.median(rates), "range": (rates[0], rates[-1])}
    print()
    print_table(results, nprocs)


def print_table(results, nprocs):
    ddp_bytes = {n: results["paragrad", "ddp", n]["bytes_per_step"] for n in nprocs}
    print("| framework | scheme | processes | samples/s (median) | range | vs torch DDP | test accuracy | bytes/step | "
          "fewer bytes than DDP | state bytes (rank 0) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in nprocs:
        torch_rate = results["torch", "ddp", n]["samples_per_second"]
        for (framework, scheme, m), r in results.items():
            if m != n:
                continue
            fewer = f"{ddp_bytes[n] / r['bytes_per_step']:.2g}x" if r["bytes_per_step"] else "-"
            lo, hi = r["range"]
            print(f"| {framework} | {SCHEMES[scheme]} | {n} | {r['samples_per_second']:,.0f} | "
                  f"{lo / 1000:,.1f}k-{hi / 1000:,.1f}k | "
                  f"{r['samples_per_second'] / torch_rate:.2f}x | {100 * r['accuracy']:.2f}% | "
                  f"{r['bytes_per_step']:,.0f} | {fewer} | {r['state_bytes']:,} |")
    if 1 in nprocs and 2 in nprocs:
        print()
        for framework, scheme in [k[:2] for k in results if k[2] == 2]:
            speedup = results[framework, scheme, 2]["samples_per_second"] / results[framework, scheme, 1]["samples_per_second"]
            print(f"{framework} {SCHEMES[scheme]}: 2 processes run {speedup:.2f}x the samples/s of 1")


if __name__ == "__main__":
    main()
