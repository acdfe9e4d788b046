"""pytorch/examples' mnist_rnn/main.py (bench/third_party/mnist_rnn/, unmodified: an LSTM reading
each digit's 28 rows, batch norm, Dropout2d, Adadelta, StepLR) under `paragrad run` on the CPU,
beside real PyTorch on MNIST cut to 2,000 training and 1,000 test digits, through
tests/cli/scripts/mnist_same_draws.py (the same weights and batch order, dropout off): the
printed losses and the test line agree."""
import re

import pytest

from . import script_runs
from .test_mnist_example import SAME_DRAWS, TEST_LINE, _layout
from .test_public_scripts import REPO

MAIN = REPO / "bench" / "third_party" / "mnist_rnn" / "main.py"


def test_mnist_rnn_example_trains_like_pytorch(tmp_path):
    work = _layout(tmp_path, train=2000, test=1000)
    args = [SAME_DRAWS, MAIN, "--epochs", "1", "--log-interval", "5"]        # (the CPU unless --accel)
    procs = {fw: script_runs.start(fw, args, work) for fw in ("paragrad", "torch")}     # side by side: two cores
    outs = {fw: script_runs.finish(fw, proc) for fw, proc in procs.items()}
    losses = {fw: [float(v) for v in re.findall(r"\tLoss: ([\d.]+)", out)] for fw, out in outs.items()}
    assert len(losses["paragrad"]) == 7, outs["paragrad"]        # 32 batches of 64, every 5th
    assert losses["paragrad"] == pytest.approx(losses["torch"], abs=1e-4), losses
    assert losses["paragrad"][-1] < losses["paragrad"][0] - 0.1, losses
    (ours, ok, n, _), = re.findall(TEST_LINE, outs["paragrad"])
    (theirs, their_ok, _, _), = re.findall(TEST_LINE, outs["torch"])
    assert n == "1000" and float(ours) == pytest.approx(float(theirs), abs=2e-3), (ours, theirs)
    assert abs(int(ok) - int(their_ok)) <= 5, (ok, their_ok)
