"""examples/: each script runs on the CPU with small settings, as a reader would start it, and
prints what it promises (accuracy that beats chance, a falling loss, the same weights on every
rank)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.data_paths import mnist_root, shared_data_file
from paragrad.cli.launch import find_launcher

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _run(argv, tmp_path, timeout=300):
    env = dict(os.environ, PARAGRAD_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def _accuracies(text):
    return [float(a) for a in re.findall(r"test accuracy ([\d.]+)%", text)]


def test_mnist_loop(tmp_path):
    text = _run([sys.executable, str(EXAMPLES / "mnist.py"), "--data-dir", str(mnist_root()), "--epochs", "2",
                 "--limit", "2000", "--device", "cpu"], tmp_path)
    accuracies = _accuracies(text)
    assert len(accuracies) == 2 and accuracies[-1] > 70, text


def test_mnist_under_jit_runs_eagerly_on_the_cpu(tmp_path):
    text = _run([sys.executable, str(EXAMPLES / "mnist_jit.py"), "--data-dir", str(mnist_root()), "--epochs", "2",
                 "--limit", "2000", "--device", "cpu"], tmp_path)
    accuracies = _accuracies(text)
    assert len(accuracies) == 2 and accuracies[-1] > 70, text


def test_gpt_trains_and_samples(tmp_path):
    data = shared_data_file("tinyshakespeare/input.txt").parent.parent
    text = _run([sys.executable, str(EXAMPLES / "gpt.py"), "--data-dir", str(data), "--steps", "60",
                 "--device", "cpu"], tmp_path)
    loss = float(re.search(r"step 60: loss ([\d.]+)", text).group(1))
    assert loss < 3.3, text                     # (from ln 65 = 4.17 at the start)
    assert "val loss" in text and "ROMEO:" in text, text


def test_ddp_on_two_ranks(tmp_path):
    assert find_launcher() is not None, 'no MPI launcher: install the MPI extra, pip install -e ".[dev,mpi]"'
    text = _run([sys.executable, "-m", "paragrad", "launch", "-n", "2", "--", sys.executable,
                 str(EXAMPLES / "ddp.py"), "--data-dir", str(mnist_root()), "--limit", "2000"], tmp_path)
    assert "2 ranks" in text and "the same on every rank" in text, text
    assert _accuracies(text)[-1] > 60, text
