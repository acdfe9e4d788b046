"""nanoGPT's own train.py on config/train_shakespeare_char.py, unmodified and start to finish,
under PyTorch and under `paragrad run`, in one run: the best val loss each reaches and its time an
iteration; then nanoGPT's sample.py on the checkpoint paragrad's run wrote.

    python bench/nanogpt.py [--compile True False] [--max-iters 5000] [-- more train.py flags]
    python bench/nanogpt.py --device cpu --max-iters 20 -- --eval_interval=10 --eval_iters=2 \
        --block_size=32 --batch_size=4 --n_layer=1 --n_head=2 --n_embd=32     # smoke test

Each (framework, --compile) pair is one fresh process running `train.py CONFIG --device=D
--compile=C --max_iters=N --out_dir=...` (plus the flags after `--`) in a folder prepared as
bench/scripts.py prepares nanoGPT (data/shakespeare_char/ made by the dataset's prepare.py from
Tiny Shakespeare). From what train.py prints: the best val loss is the lowest of its `step N: ...
val loss X` lines; ms/iteration is the median of the times its `iter N: ..., time T ms` lines
print, leaving out iteration 0 and those that ran an evaluation (every eval_interval-th), so
torch.compile's compiles and pg.compile's first recordings weigh as little as they do over a
whole run. The ratio is paragrad's over PyTorch's with the same --compile: with True, PyTorch's
torch.compile in its default mode, as the script calls it. Issue 37's targets: compile=True best
val loss <= 1.48 and ratio <= 0.6; compile=False ratio <= 1.0.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import default_data_dir, print_header
from scripts import THIRD, nanogpt_data

NANOGPT = THIRD / "nanogpt"
ITER_LINE = re.compile(r"^iter (\d+): loss [\d.]+, time ([\d.]+)ms", re.M)
EVAL_LINE = re.compile(r"^step (\d+): train loss ([\d.]+), val loss ([\d.]+)", re.M)


def eval_interval(extra):
    """The eval_interval train.py runs with: the last --eval_interval= given, else the config's."""
    given = [a.split("=", 1)[1] for a in extra if a.startswith("--eval_interval=")]
    if given:
        return int(given[-1])
    return int(re.search(r"^eval_interval = (\d+)", (NANOGPT / "config" / "train_shakespeare_char.py").read_text(),
                         re.M).group(1))


def summary(out, every):
    """-> (best val loss, median ms of the iterations that ran no evaluation) from train.py's output."""
    vals = [float(v) for _, _, v in EVAL_LINE.findall(out)]
    times = [float(t) for it, t in ITER_LINE.findall(out) if int(it) % every]
    return (min(vals) if vals else None), (statistics.median(times) if times else None)


def train(framework, compile_, a, extra, work):
    """One run of train.py -> (its output, the command's exit status)."""
    launcher = ["-m", "paragrad", "run"] if framework == "paragrad" else []
    cmd = [sys.executable, *launcher, str(NANOGPT / "train.py"), str(NANOGPT / "config" / "train_shakespeare_char.py"),
           f"--device={a.device}", f"--compile={compile_}", f"--max_iters={a.max_iters}",
           f"--out_dir={work / 'out'}", *extra]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=a.timeout)
    return proc.stdout + proc.stderr, proc.returncode


def sample(a, work, tmp):
    """sample.py (under paragrad run) on the checkpoint in work/out: its output, or why not.
    It imports tiktoken but decodes with data/shakespeare_char/meta.pkl: where tiktoken isn't
    installed an empty module stands in for it."""
    cmd = [sys.executable, "-m", "paragrad", "run", str(NANOGPT / "sample.py"), f"--out_dir={work / 'out'}",
           f"--device={a.device}", "--num_samples=1", "--max_new_tokens=200", "--compile=False"]
    env = dict(os.environ)
    if importlib.util.find_spec("tiktoken") is None:
        (tmp / "stand_in").mkdir(exist_ok=True)
        (tmp / "stand_in" / "tiktoken.py").write_text("")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp / "stand_in"), env.get("PYTHONPATH")]))
    if not (work / "out" / "ckpt.pt").exists():
        return "no checkpoint: train.py saves one at an evaluation after iteration 0 whose val loss is its best so far"
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=300, env=env)
    return proc.stdout if proc.returncode == 0 else f"sample.py failed ({proc.returncode}): {proc.stderr[-500:]}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--compile", nargs="+", default=["True", "False"], choices=("True", "False"),
                   help="train.py's --compile values to run (default both)")
    p.add_argument("--max-iters", type=int, default=5000, help="train.py's --max_iters (default the config's 5000)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds a run may take")
    p.add_argument("--data-dir", default=None, help="folder holding tinyshakespeare/ (default: $PARAGRAD_DATA, "
                                                    "else ../shared/data)")
    p.add_argument("extra", nargs="*", help="after --: more train.py flags (--name=value)")
    a = p.parse_args()
    data_dir = Path(a.data_dir) if a.data_dir else default_data_dir("tinyshakespeare")
    every = eval_interval(a.extra)
    print_header(a.device)
    print(f"run     : train.py config/train_shakespeare_char.py --max_iters={a.max_iters} {' '.join(a.extra)}; "
          f"ms/iteration: median over the logged iterations that ran no evaluation (every {every}th)\n")
    print(f"{'framework':10s} {'compile':>7s} {'best val loss':>13s} {'ms/iter':>8s} {'ratio':>6s}")
    sampled = None
    with tempfile.TemporaryDirectory(prefix="paragrad-nanogpt-") as tmp:
        for compile_ in a.compile:
            ms_torch = None
            for framework in ("torch", "paragrad"):
                work = Path(tmp) / f"{framework}-{compile_}"
                nanogpt_data(data_dir / "tinyshakespeare" / "input.txt", work)
                out, rc = train(framework, compile_, a, a.extra, work)
                best, ms = summary(out, every)
                ratio = f"{ms / ms_torch:6.2f}" if framework == "paragrad" and ms and ms_torch else ""
                ms_torch = ms if framework == "torch" else ms_torch
                failed = f"   (exit {rc}: {out.strip().splitlines()[-1][:200] if out.strip() else ''})" if rc else ""
                print(f"{framework:10s} {compile_:>7s} {_num(best, 13, 4)} {_num(ms, 8, 2)} {ratio:>6s}{failed}",
                      flush=True)
                if framework == "paragrad" and sampled is None and rc == 0:
                    sampled = (compile_, sample(a, work, Path(tmp)))
    if sampled:
        print(f"\nsample.py on paragrad's checkpoint (--compile={sampled[0]}):\n{sampled[1].strip()[:1200]}")


def _num(x, width, digits):
    return f"{x:{width}.{digits}f}" if x is not None else f"{'-':>{width}s}"

if __name__ == "__main__":
    main()
