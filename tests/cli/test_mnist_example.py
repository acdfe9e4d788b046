"""pytorch/examples' mnist/main.py (bench/third_party/mnist/, unmodified: a small CNN, Adadelta,
StepLR, torchvision's MNIST) under `paragrad run` on the CPU. On MNIST cut to 2,000 training and
1,000 test digits it trains beside real PyTorch through tests/cli/scripts/mnist_same_draws.py
(same weights, dropout off, and for torch, which has no torchvision here, a torch-written
stand-in): the printed losses agree. On the full files its own --dry-run runs as written, its
--help prints and its --save-model writes a state dict that paragrad loads."""
import math
import re
import subprocess
import sys

import pytest

import paragrad as pg
from paragrad.data.idx import read_idx, write_idx
from tests.data_paths import mnist_root

from . import script_runs
from .test_public_scripts import REPO

MAIN = REPO / "bench" / "third_party" / "mnist" / "main.py"
SAME_DRAWS = REPO / "tests" / "cli" / "scripts" / "mnist_same_draws.py"
FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
         "t10k-labels-idx1-ubyte.gz")
TEST_LINE = r"Test set: Average loss: ([\d.]+|nan|inf), Accuracy: (\d+)/(\d+) \((\d+)%\)"


def _layout(tmp_path, train=None, test=None):
    """tmp/data/MNIST/raw (the script's root is ../data) and tmp/work to run it from; the files
    are the real ones, or cut to their first `train` / `test` digits with their headers rewritten."""
    raw, work = tmp_path / "data" / "MNIST" / "raw", tmp_path / "work"
    raw.mkdir(parents=True)
    work.mkdir()
    for name in FILES:
        src, keep = mnist_root() / "mnist" / name, train if name.startswith("train") else test
        if keep is None:
            (raw / name).symlink_to(src)
        else:
            write_idx(raw / name, read_idx(src)[:keep])
    return work


def test_mnist_example_trains_like_pytorch(tmp_path):
    work = _layout(tmp_path, train=2000, test=1000)
    # --no-accel: on a GPU machine the script would shuffle its batches (its accelerator
    # settings), each framework with its own random stream
    args = [SAME_DRAWS, MAIN, "--epochs", "1", "--log-interval", "5", "--no-accel"]
    procs = {fw: script_runs.start(fw, args, work) for fw in ("paragrad", "torch")}     # side by side: two cores
    outs = {fw: script_runs.finish(fw, proc) for fw, proc in procs.items()}
    losses = {fw: [float(v) for v in re.findall(r"\tLoss: ([\d.]+)", out)] for fw, out in outs.items()}
    tests = {fw: re.findall(TEST_LINE, out) for fw, out in outs.items()}
    assert len(losses["paragrad"]) == 7 and len(tests["paragrad"]) == 1, outs["paragrad"]  # 32 batches
    assert losses["paragrad"] == pytest.approx(losses["torch"], abs=1e-3), losses
    (ours, ok, n, _), (theirs, their_ok, _, _) = tests["paragrad"][0], tests["torch"][0]
    assert n == "1000" and float(ours) == pytest.approx(float(theirs), abs=2e-3), tests
    assert abs(int(ok) - int(their_ok)) <= 5, tests
    assert int(ok) > 800, outs["paragrad"]          # 32 steps: far above chance (100)


def test_mnist_example_dry_run_as_written_saves_a_model_paragrad_loads(tmp_path):
    work = _layout(tmp_path)
    out = script_runs.run("paragrad", [MAIN, "--dry-run", "--epochs", "1", "--save-model"], work)
    assert re.search(r"Train Epoch: 1 \[0/60000 \(0%\)\]\tLoss: ([\d.]+)", out), out
    (loss, _, n, _), = re.findall(TEST_LINE, out)
    assert n == "10000" and math.isfinite(float(loss)), out
    state = pg.load(work / "mnist_cnn.pt")
    assert {k: tuple(v.shape) for k, v in state.items()} == {
        "conv1.weight": (32, 1, 3, 3), "conv1.bias": (32,), "conv2.weight": (64, 32, 3, 3), "conv2.bias": (64,),
        "fc1.weight": (128, 9216), "fc1.bias": (128,), "fc2.weight": (10, 128), "fc2.bias": (10,)}


def test_mnist_example_help(tmp_path):
    out = script_runs.run("paragrad", [MAIN, "--help"], tmp_path)
    assert out.startswith("usage: main.py") and "PyTorch MNIST Example" in out
    for flag in ("--batch-size", "--epochs", "--lr", "--gamma", "--no-accel", "--dry-run", "--save-model"):
        assert flag in out, flag


def test_torchvision_names_paragrad_lacks_fail_naming_them(tmp_path):
    script = tmp_path / "models.py"
    script.write_text("import torchvision\nfrom torchvision import datasets, transforms\n"
                      "print(repr(torchvision), transforms.ToTensor())\nfrom torchvision import ops\n")
    proc = subprocess.run([sys.executable, "-m", "paragrad", "run", script], capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout == "<module 'torchvision' (paragrad run: paragrad.vision)> ToTensor()\n", proc.stdout
    assert proc.returncode == 1
    assert "ModuleNotFoundError: paragrad has no torchvision.ops (paragrad run maps torch" in proc.stderr
