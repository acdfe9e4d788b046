"""kill -9 at random moments of a run that saves every iteration: every kill leaves a checkpoint
that --resume takes, and the run, resumed kill after kill, ends bit-exactly where an
uninterrupted run ends. CI runs a short form; `-m slow` the 50-kill one."""
import json
import random
import subprocess
import sys

import numpy as np
import pytest

from paragrad.io import checkpoint
from tests.cli.helpers import TINY_GPT
from tests.data_paths import shared_data_file


def _command(*extra):
    data = shared_data_file("tinyshakespeare/input.txt").parent.parent
    # (a flag given twice: the last wins) a checkpoint every iteration
    return [sys.executable, "-m", "paragrad", "train", "shakespeare", "--data-dir", str(data), *TINY_GPT,
            "--eval-interval", "1", "--eval-iters", "1", *extra]


def _resumable(out):
    return (out / checkpoint.train_state_path("ckpt.safetensors")).exists()


def _state(folder):
    """Everything a resume restores, as arrays: weights, optimizer moments, the val losses."""
    weights, _ = checkpoint.load_weights(folder / "ckpt.safetensors")
    arrays, meta = checkpoint.load_file(checkpoint.train_state_path(folder / "ckpt.safetensors"))
    state = json.loads(meta["paragrad_train_state"])
    return ({k: v.numpy() for k, v in weights.items()}, {k: a for k, (a, _) in arrays.items()},
            [(r["iter"], r["val_loss"], r["train_loss"]) for r in state["extra"]["records"]], state["generators"])


def _kill_loop(tmp_path, kills, seed):
    max_iters = str(40 + 12 * kills)
    reference = tmp_path / "reference"
    subprocess.run(_command("--out", str(reference), "--max-iters", max_iters), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
    out, log = tmp_path / "killed", tmp_path / "log.txt"
    rng, killed, had_checkpoint = random.Random(seed), 0, False
    while True:
        start = ["--resume", str(out / "ckpt.safetensors")] if _resumable(out) else ["--out", str(out), "--overwrite"]
        with open(log, "w") as err:
            proc = subprocess.Popen(_command(*start, "--max-iters", max_iters), stdout=subprocess.DEVNULL, stderr=err)
            try:
                rc = proc.wait(timeout=rng.uniform(0.5, 4.0) if killed < kills else 600)
            except subprocess.TimeoutExpired:
                proc.kill()         # SIGKILL: no handler, no cleanup
                proc.wait()
                killed += 1
                had_checkpoint |= _resumable(out)
                assert _resumable(out) or not had_checkpoint, f"kill {killed} left no checkpoint"
                continue
        assert rc == 0, (start, rc, log.read_text()[-2000:])      # a refused resume fails here
        if killed >= kills:
            break
    assert not list(out.glob("*.tmp")) and not list(out.glob("*.pending"))
    got, want = _state(out), _state(reference)
    for g, w in zip(got[:2], want[:2]):
        assert g.keys() == w.keys()
        for k in w:
            assert np.array_equal(g[k], w[k]), k       # bit-exact, not close
    assert got[2:] == want[2:]


def test_kill_loop_short(tmp_path):
    _kill_loop(tmp_path, kills=3, seed=0)


@pytest.mark.slow
def test_kill_loop_50_kills(tmp_path):
    _kill_loop(tmp_path, kills=50, seed=1)
