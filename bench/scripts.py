"""Public PyTorch training scripts, unmodified, through `paragrad run` and through PyTorch:
median step time and the loss at the last step, side by side in one run.

    python bench/scripts.py [--device cpu|cuda] [--steps 50] [--repeats 2] [--only NAME ...]
                            [--json PATH] [--profile DIR] [--paragrad-env KEY=VALUE ...]

The scripts (kept with their licences under bench/third_party/):
  - makemore.py (karpathy/makemore, MIT): character-level names, six model types: bigram, MLP,
    RNN and GRU (hand-written cells), bag-of-words, Transformer (masked self-attention with a
    tanh-GELU written out); AdamW, a DataLoader over RandomSampler(replacement=True,
    num_samples=int(1e10)). Run as `makemore.py -i names.txt -o TMP --type T --num-workers 0
    --device D` (no worker processes for either framework);
  - word_language_model (pytorch/examples, BSD-3): word-level LSTM, GRU and Transformer
    language models, SGD by hand with gradient clipping, `--batch_size 10 --lr 2` (at the
    default lr 20 the first 50 steps are chaotic: torch's own loss at step 50 spans 8 to 30
    over six seeds; at lr 2 both frameworks give 6.8-7.6 on every seed). Its corpus here is
    Tiny Shakespeare's first 12,000 lines split 90/5/5 into train/valid/test (../shared/data),
    not WikiText-2; `--accel` on the GPU;
  - regression (pytorch/examples, BSD-3): a polynomial fitted by a Linear layer, SGD by hand
    (CPU only: the script has no device option);
  - nanoGPT (karpathy/nanoGPT, MIT): train.py with config/train_shakespeare_char.py, a
    character-level GPT on Tiny Shakespeare made into train.bin/val.bin by the dataset's own
    prepare.py; fused-QKV attention through F.scaled_dot_product_attention, AdamW over two
    parameter groups, a cosine schedule, gradient clipping (its GradScaler stays off: no
    float16). `--compile=False`, one evaluation of 2 batches (at iteration 0, before the timed
    steps). On the CPU a small model (4 layers, 4 heads, 128 wide, block 64, batch 12, no
    dropout, float32); on the GPU the config's own (6 x 6 x 384, block 256, batch 64, dropout
    0.2) in nanoGPT's bfloat16 autocast. On the GPU also "compile": the same with its default
    `--compile=True` (torch.compile's default mode: torch's inductor; paragrad's forward and
    backward as captured CUDA graphs);
  - mnist and vae (pytorch/examples, BSD-3): mnist/main.py (a small CNN, Adadelta, StepLR) and
    vae/main.py (a fully connected VAE, Adam), each on MNIST through torchvision's datasets
    (paragrad.vision under paragrad run), `--epochs 1`; on the GPU their accelerator settings
    (one loader worker, pinned memory, shuffled batches), on the CPU `--no-accel`. MNIST's files
    are put unzipped in torchvision's layout, ../data/MNIST/raw from the run's folder;
  - mnist_rnn, mnist_forward_forward and siamese_network (pytorch/examples, BSD-3), on MNIST as
    above: an LSTM over the rows of each digit (Adadelta); Hinton's forward-forward training of
    two 500-unit layers, full batch (each layer's --epochs are its steps: the bench's steps plus
    ten; on the CPU 5,000 training and 1,000 test digits); a siamese ResNet-18
    (torchvision.models.resnet18) scoring pairs of digits with Python's random picking them;
  - dcgan (pytorch/examples, BSD-3) on torchvision's FakeData (1,000 random 64x64 images): a
    DCGAN, two Adams, two backward calls a batch (each counts as a step); on the CPU 16 filters
    where the script's default is 64;
  - minGPT (karpathy/minGPT, MIT): projects/chargpt/chargpt.py, a character-level GPT on Tiny
    Shakespeare with minGPT's Trainer (a DataLoader over RandomSampler(replacement=True), AdamW,
    clipping), `--trainer.num_workers=0`; gpt-nano at batch 32 on the CPU, the script's gpt-mini
    at batch 64 on the GPU. Its callback samples 500 characters at iteration 0 (inside the first
    step interval) and every 500 iterations (past the bench's steps unless --steps >= 490).
Each run is a fresh process (bench/script_steps.py) that stops the script after --steps
training steps (a step: one backward call). Every configuration runs --repeats times per
framework, torch and paragrad alternating (torch first, then paragrad first, ...). Step time:
the median of the host intervals between consecutive steps on the CPU; on the GPU the
synchronized window over the last four fifths of the steps, divided by its steps. The table
shows each framework's median over the repeats and the ratio paragrad / torch (< 1: paragrad
faster); the losses are the last step's, for the same steps (random initializations differ
between the frameworks: compare them as training curves, not digits). With --paragrad-env,
paragrad runs once per setting given (`PARAGRAD_LAZY=0 PARAGRAD_LAZY=1`), each a column of its
own, all interleaved with torch's runs: an A/B measured on one machine in one run.
"""
from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import statistics
import subprocess
import shutil
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Callable, NamedTuple

from common import default_data_dir, print_header

HERE = Path(__file__).resolve().parent
THIRD = HERE / "third_party"
MAKEMORE_TYPES = ("bigram", "mlp", "rnn", "gru", "bow", "transformer")
WLM_MODELS = ("LSTM", "GRU", "Transformer")
LINES = 12000       # of Tiny Shakespeare: about 300 batches of 10 x 35 words, an 8k-word vocabulary


class Config(NamedTuple):
    """One configuration: the script, its arguments ("{work}" stands for the run's fresh folder,
    also its working directory), an optional prepare(work) that puts there what the script
    reads from its working directory, and variables added to the script's environment."""
    script: Path
    args: list
    prepare: Callable | None = None
    env: dict | None = None


def configurations(device, steps, corpus, text, mnist=None):
    """name -> Config; corpus: the word_language_model folder, text: Tiny Shakespeare's input.txt,
    mnist: the folder of MNIST's four .gz files (without it, no MNIST scripts)."""
    out = {}
    for t in MAKEMORE_TYPES:
        out[f"makemore {t}"] = Config(THIRD / "makemore" / "makemore.py",
                                      ["-i", str(THIRD / "makemore" / "names.txt"), "-o", "{work}", "--type", t,
                                       "--num-workers", "0", "--max-steps", str(steps + 10), "--device", device])
    for m in WLM_MODELS:
        out[f"word_language_model {m}"] = Config(THIRD / "word_language_model" / "main.py",
                                                 ["--data", str(corpus), "--model", m, "--epochs", "1",
                                                  "--batch_size", "10", "--lr", "2", "--save", "{work}/model.pt"]
                                                 + (["--accel"] if device == "cuda" else []))
    if device == "cpu":
        out["regression"] = Config(THIRD / "regression" / "main.py", [])
    nanogpt = THIRD / "nanogpt"
    small = ["--block_size=64", "--batch_size=12", "--n_layer=4", "--n_head=4", "--n_embd=128", "--dropout=0.0",
             "--dtype=float32"]
    out["nanogpt shakespeare_char"] = Config(
        nanogpt / "train.py", [str(nanogpt / "config" / "train_shakespeare_char.py"), f"--device={device}",
                               "--compile=False", f"--max_iters={steps + 10}", f"--eval_interval={steps + 100}",
                               "--eval_iters=2", "--out_dir={work}/out", *(small if device == "cpu" else [])],
        prepare=partial(nanogpt_data, text))
    if device == "cuda":        # its default, torch.compile
        plain = out["nanogpt shakespeare_char"]
        out["nanogpt shakespeare_char compile"] = plain._replace(
            args=[a if a != "--compile=False" else "--compile=True" for a in plain.args])
    if mnist is not None:
        cuda = device == "cuda"
        accel = [] if cuda else ["--no-accel"]
        for name in ("mnist", "vae", "siamese_network"):
            out[name] = Config(THIRD / name / "main.py", ["--epochs", "1", *accel], prepare=partial(mnist_raw, mnist))
        out["mnist_rnn"] = Config(THIRD / "mnist_rnn" / "main.py", ["--epochs", "1", *(["--accel"] if cuda else [])],
                                  prepare=partial(mnist_raw, mnist))
        out["mnist_forward_forward"] = Config(      # (full-batch steps: the CPU's a tenth of the GPU's)
            THIRD / "mnist_forward_forward" / "main.py",
            ["--epochs", str(steps + 10), *([] if cuda else ["--no_accel", "--train_size", "5000", "--test_size", "1000"])],
            prepare=partial(mnist_raw, mnist, root="data"))
    out["dcgan"] = Config(      # (its fake dataset: no download; 64x64 images, the script's default sizes on the GPU)
        THIRD / "dcgan" / "main.py",
        ["--dataset", "fake", "--niter", "1", "--workers", "2", "--manualSeed", "1", "--outf", "{work}/out",
         *(["--accel"] if device == "cuda" else ["--ngf", "16", "--ndf", "16"])])
    mingpt = THIRD / "mingpt"
    # chargpt imports mingpt, which its README installs (pip install -e .): here, PYTHONPATH.
    # work_dir is relative (to the run's folder): merge_from_args literal_evals each value and
    # catches only ValueError, and an absolute path is a SyntaxError there.
    out["mingpt chargpt"] = Config(
        mingpt / "projects" / "chargpt" / "chargpt.py",
        [f"--trainer.max_iters={steps + 10}", f"--trainer.device={device}", "--trainer.num_workers=0",
         "--system.work_dir=out", *(["--model.model_type=gpt-nano", "--trainer.batch_size=32"] if device == "cpu"
                                    else [])],
        prepare=partial(copy_text, text, "input.txt"),
        env={"PYTHONPATH": os.pathsep.join(filter(None, [str(mingpt), os.environ.get("PYTHONPATH")]))})
    return out


def copy_text(text, name, work):
    shutil.copyfile(text, Path(work) / name)


def nanogpt_data(text, work):
    """nanoGPT's train.py and sample.py exec configurator.py and read data/shakespeare_char/ from
    their working directory: copy configurator.py there and run the dataset's own prepare.py on
    Tiny Shakespeare put beside it (it downloads input.txt only when that is missing)."""
    data = Path(work) / "data" / "shakespeare_char"
    data.mkdir(parents=True, exist_ok=True)
    shutil.copy(THIRD / "nanogpt" / "configurator.py", work)
    shutil.copy(THIRD / "nanogpt" / "data" / "shakespeare_char" / "prepare.py", data)
    copy_text(text, "input.txt", data)
    subprocess.run([sys.executable, str(data / "prepare.py")], cwd=data, check=True, capture_output=True)


def mnist_raw(src, work, root="../data"):
    """pytorch/examples' MNIST scripts read torchvision's layout from their working folder,
    ROOT/MNIST/raw (../data, or data for mnist_forward_forward): the four IDX files unzipped
    there once (torchvision looks for those names), and a results/ folder (vae/main.py saves
    its images into it)."""
    raw = Path(work) / root / "MNIST" / "raw"
    if not raw.is_dir():
        raw.mkdir(parents=True)
        for gz in Path(src).glob("*-ubyte.gz"):
            (raw / gz.stem).write_bytes(gzip.decompress(gz.read_bytes()))
    (Path(work) / "results").mkdir(exist_ok=True)


def shakespeare_corpus(data_dir, folder):
    """Tiny Shakespeare's first LINES lines as train/valid/test.txt (90/5/5) in folder."""
    text = (Path(data_dir) / "tinyshakespeare" / "input.txt").read_text().splitlines()[:LINES]
    cut1, cut2 = int(len(text) * 0.9), int(len(text) * 0.95)
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in (("train", text[:cut1]), ("valid", text[cut1:cut2]), ("test", text[cut2:])):
        (folder / f"{name}.txt").write_text("\n".join(lines) + "\n")
    return folder


def run_once(framework, name, config, steps, device, tmp, profile=None, env=None):
    """One fresh process of config (a Config) -> (step seconds, last loss) or an error string.
    With `profile` (a folder), paragrad's run is profiled into profile/NAME.prof (which slows
    it down); `env` (a dict) is added to the process's environment after config's."""
    work = Path(tempfile.mkdtemp(dir=tmp))
    if config.prepare:
        config.prepare(work)
    result = work / "result.json"
    profiler = []
    if profile and framework == "paragrad":
        profiler = ["-m", "cProfile", "-o", str(Path(profile).resolve() / (name.replace(" ", "-") + ".prof"))]
    cmd = [sys.executable, *profiler, str(HERE / "script_steps.py"), framework, str(steps), str(result),
           str(config.script), *[a.replace("{work}", str(work)) for a in config.args]]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True,
                          env={**os.environ, **(config.env or {}), **(env or {})})
    if proc.returncode != 0 or not result.exists():
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return f"{framework} failed (exit {proc.returncode}): {tail[:200]}"
    r = json.loads(result.read_text())
    if r["steps"] < steps:
        return f"{framework}: the script ended after {r['steps']} of {steps} steps"
    seconds = (r["window_seconds"] / r["window_steps"] if device == "cuda"
               else statistics.median(r["intervals"]))
    return seconds, r["last_loss"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--steps", type=int, default=50, help="training steps per run (default 50)")
    p.add_argument("--repeats", type=int, default=2, help="runs per framework and script (default 2)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these configurations (prefixes)")
    p.add_argument("--data-dir", default=None, help="folder holding tinyshakespeare/ (default: $PARAGRAD_DATA, "
                                                    "else ../shared/data)")
    p.add_argument("--json", default=None, help="also write the numbers to this file")
    p.add_argument("--profile", default=None, metavar="DIR",
                   help="profile paragrad's runs with cProfile into DIR/NAME.prof (slower: for where "
                        "time goes, not for the ratios)")
    p.add_argument("--paragrad-env", nargs="+", default=None, metavar="KEY=VALUE",
                   help="run paragrad once per setting, each a column of its own, interleaved with "
                        "torch's runs (e.g. PARAGRAD_LAZY=0 PARAGRAD_LAZY=1)")
    args = p.parse_args()
    variants = paragrad_variants(p, args.paragrad_env)
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir("tinyshakespeare")
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    print_header(args.device, cpu_smoke_test=False)
    print(f"steps   : {args.steps} per run, {args.repeats} run(s) per framework, alternating\n")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus = shakespeare_corpus(data_dir, Path(tmp) / "corpus")
        mnist = data_dir / "mnist"
        vision = importlib.util.find_spec("torchvision") is not None
        if not mnist.is_dir() or not vision:
            print(f"(the MNIST scripts left out: {'torch has no torchvision here' if mnist.is_dir() else f'no {mnist}'})")
            mnist = None
        configs = configurations(args.device, args.steps, corpus, data_dir / "tinyshakespeare" / "input.txt", mnist)
        if not vision:
            print("(dcgan left out: torch has no torchvision here)")
            del configs["dcgan"]
        if args.only:
            configs = {k: v for k, v in configs.items() if any(k.startswith(o) for o in args.only)}
        print(f"{'script':32s} {'torch ms':>9s} " + "".join(f"{v + ' ms':>{_width(v)}s} {'ratio':>6s} " for v in variants)
              + f"{'torch loss':>11s} " + " ".join(f"{v + ' loss':>{_width(v) + 2}s}" for v in variants))
        for name, config in configs.items():
            rows.append(run_script(name, config, variants, args, tmp))
    print()
    for v in variants:
        ratios = [r["variants"][v]["ms"] / r["torch_ms"] for r in rows if r["torch_ms"] and r["variants"][v]["ms"]]
        if ratios:
            print(f"{v} / torch step time: median {statistics.median(ratios):.2f}, worst {max(ratios):.2f} "
                  f"over {len(ratios)} of {len(rows)} scripts")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": args.device, "steps": args.steps, "rows": rows}, indent=1))


def paragrad_variants(parser, settings):
    """column label -> environment added to paragrad's runs: {"paragrad": {}} by default."""
    if not settings:
        return {"paragrad": {}}
    for kv in settings:
        if "=" not in kv:
            parser.error(f"--paragrad-env takes KEY=VALUE settings, got {kv!r}")
    return {f"paragrad {kv}": dict([kv.split("=", 1)]) for kv in settings}


def _width(label):
    return max(12, len(label) + 3)


def run_script(name, config, variants, args, tmp):
    """One configuration, --repeats times per framework, the order rotated each repeat (torch
    first, then a paragrad column first, ...): its table line, printed, and its row."""
    frameworks = ["torch", *variants]
    runs = {fw: [] for fw in frameworks}
    errors = []
    for rep in range(args.repeats):
        k = rep % len(frameworks)
        for fw in frameworks[k:] + frameworks[:k]:
            kind, env = ("torch", None) if fw == "torch" else ("paragrad", variants[fw])
            r = run_once(kind, name, config, args.steps, args.device, tmp, args.profile, env)
            (errors.append(f"{fw}: {r}" if fw != kind else r) if isinstance(r, str) else runs[fw].append(r))
    cell = {fw: (statistics.median(s for s, _ in runs[fw]) * 1e3, runs[fw][-1][1]) if runs[fw] else None
            for fw in frameworks}
    t = cell["torch"]
    fmt = lambda c, i, f: f"{c[i]:{f}}" if c else "failed"   # noqa: E731
    line = f"{name:32s} {fmt(t, 0, '9.2f'):>9s} "
    for v in variants:
        g = cell[v]
        ratio = f"{g[0] / t[0]:6.2f}" if t and g else f"{'-':>6s}"
        line += f"{fmt(g, 0, '.2f'):>{_width(v)}s} {ratio} "
    line += f"{fmt(t, 1, '11.4f'):>11s} " + " ".join(f"{fmt(cell[v], 1, '.4f'):>{_width(v) + 2}s}" for v in variants)
    print(line, flush=True)
    for e in dict.fromkeys(errors):
        print(f"  {e}")
    first = cell[next(iter(variants))]
    return {"script": name, "torch_ms": t and t[0], "paragrad_ms": first and first[0],
            "torch_loss": t and t[1], "paragrad_loss": first and first[1],
            "variants": {v: {"ms": cell[v] and cell[v][0], "loss": cell[v] and cell[v][1]} for v in variants},
            "errors": errors}


if __name__ == "__main__":
    main()
