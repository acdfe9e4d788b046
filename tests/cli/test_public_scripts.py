"""Public training scripts vendored unmodified under bench/third_party/ (nanoGPT, minGPT) run
for a few iterations under `paragrad run` on the CPU, prepared as bench/scripts.py prepares
them, beside real PyTorch on the same settings. Both runs go through
tests/cli/scripts/numpy_draws.py, which draws the weights and the batches from NumPy (the two
frameworks' random streams differ), and dropout is off: the printed losses then agree to their
printed digits, iteration by iteration. nanoGPT's sample.py then samples the checkpoint that
paragrad's run wrote, and bench/scripts.py times both scripts for a few steps."""
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench_modules import load_bench
from tests.data_paths import shared_data_file

from . import script_runs

REPO = Path(__file__).resolve().parents[2]
THIRD = REPO / "bench" / "third_party"


@pytest.fixture(scope="module")
def bench_scripts():
    """bench/scripts.py as a module."""
    return load_bench("scripts")


NUMPY_DRAWS = Path(__file__).parent / "scripts" / "numpy_draws.py"


def _run(framework, script, args, cwd, env=None, same_draws=True):
    return script_runs.run(framework, [*([NUMPY_DRAWS] if same_draws else []), script, *args], cwd, env)


def _losses(pattern, out):
    return {int(it): float(loss) for it, loss in re.findall(pattern, out)}


NANOGPT_TINY = ["--device=cpu", "--compile=False", "--dtype=float32", "--block_size=32", "--batch_size=8",
                "--n_layer=2", "--n_head=2", "--n_embd=64", "--dropout=0.0", "--warmup_iters=0", "--log_interval=1",
                "--eval_iters=4", "--max_iters=20", "--eval_interval=20"]


def test_nanogpt_trains_like_pytorch_and_samples_its_checkpoint(tmp_path, bench_scripts):
    text = shared_data_file("tinyshakespeare/input.txt")
    config = THIRD / "nanogpt" / "config" / "train_shakespeare_char.py"
    outs = {}
    for fw in ("paragrad", "torch"):
        work = tmp_path / fw
        bench_scripts.nanogpt_data(text, work)
        outs[fw] = _run(fw, THIRD / "nanogpt" / "train.py", [str(config), *NANOGPT_TINY, f"--out_dir={work / 'out'}"],
                        work)
    ours, theirs = (_losses(r"iter (\d+): loss ([\d.]+)", outs[fw]) for fw in ("paragrad", "torch"))
    assert sorted(ours) == list(range(21)) and all(math.isfinite(v) for v in ours.values()), outs["paragrad"]
    assert ours[20] < ours[0] - 0.5, ours         # it trained (ln 65 = 4.17 at the start)
    assert ours == pytest.approx(theirs, abs=3e-4), (ours, theirs)      # printed to 4 decimals
    evals = {fw: re.findall(r"step (\d+): train loss ([\d.]+), val loss ([\d.]+)", outs[fw]) for fw in outs}
    assert [e[0] for e in evals["paragrad"]] == ["0", "20"], outs["paragrad"]
    assert [float(v) for e in evals["paragrad"] for v in e[1:]] == pytest.approx(
        [float(v) for e in evals["torch"] for v in e[1:]], abs=3e-4), evals
    assert (tmp_path / "paragrad" / "out" / "ckpt.pt").exists()     # written at the step-20 evaluation

    # sample.py imports tiktoken at the top but, with data/shakespeare_char/meta.pkl beside it,
    # decodes with that and never touches tiktoken: an empty stand-in module answers the import
    (tmp_path / "stand_in").mkdir()
    (tmp_path / "stand_in" / "tiktoken.py").write_text("")
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "stand_in"), os.environ.get("PYTHONPATH")]))}
    for compile_ in ("False", "True"):
        out = _run("paragrad", THIRD / "nanogpt" / "sample.py",
                   [f"--out_dir={tmp_path / 'paragrad' / 'out'}", "--device=cpu", "--num_samples=1",
                    "--max_new_tokens=50", f"--compile={compile_}"], tmp_path / "paragrad", env, same_draws=False)
        head = "Loading meta from data/shakespeare_char/meta.pkl...\n"
        assert head in out, out
        sample = out.split(head, 1)[1].split("---------------")[0]
        assert len(sample) == 1 + 50 + 1, sample     # the "\n" prompt, 50 new characters, print's newline


def test_mingpt_chargpt_trains_like_pytorch(tmp_path, bench_scripts):
    text = shared_data_file("tinyshakespeare/input.txt")
    config = bench_scripts.configurations("cpu", 20, None, text)["mingpt chargpt"]
    args = ["--trainer.max_iters=31", "--model.model_type=gpt-nano", "--trainer.device=cpu",
            "--trainer.num_workers=0", "--trainer.batch_size=16", "--system.work_dir=out",
            "--model.embd_pdrop=0.0", "--model.resid_pdrop=0.0", "--model.attn_pdrop=0.0"]
    losses = {}
    for fw in ("paragrad", "torch"):
        work = tmp_path / fw
        work.mkdir()
        config.prepare(work)
        out = _run(fw, config.script, args, work, config.env)
        losses[fw] = _losses(r"iter (\d+): train loss ([\d.]+)", out)
        # iteration 0's callback samples 500 characters after the prompt and saves the model
        completion = out.split("O God, O God!", 1)[-1].split("\nsaving model", 1)[0]
        assert len(completion) == 500 and "saving model" in out, out
        assert (work / "out" / "model.pt").exists()
    ours, theirs = losses["paragrad"], losses["torch"]
    assert sorted(ours) == [0, 10, 20, 30] and all(math.isfinite(v) for v in ours.values()), ours
    assert ours[30] < ours[0] - 0.5, ours
    assert ours == pytest.approx(theirs, abs=3e-4), (ours, theirs)      # printed to 5 decimals


def test_bench_prepares_and_times_both_scripts(tmp_path):
    """bench/scripts.py's configurations of the two scripts (their work folders prepared, minGPT
    importable) run a few steps under both frameworks, each with a time and a finite loss."""
    out = tmp_path / "scripts.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "scripts.py"), "--only", "nanogpt", "mingpt",
                           "--steps", "3", "--repeats", "1", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["script"]: r for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"nanogpt shakespeare_char", "mingpt chargpt"}, proc.stdout
    for row in rows.values():
        assert not row["errors"] and row["torch_ms"] > 0 and row["paragrad_ms"] > 0, row
        assert 3.5 < row["paragrad_loss"] < 4.5 and 3.5 < row["torch_loss"] < 4.5, row   # near ln 65 = 4.17
