"""pytorch/examples' mnist_forward_forward/main.py (bench/third_party/mnist_forward_forward/,
unmodified: Hinton's forward-forward algorithm, each of two Linear layers trained on its own
goodness loss with its own Adam, full batch; it overrides Module.train with a method of its own
and indexes with `x_[range(n), y]`) under `paragrad run` on the CPU, beside real PyTorch on
MNIST cut to 2,000 training and 1,000 test digits, through tests/cli/scripts/mnist_same_draws.py
(the same weights and negative labels): every printed loss and both error rates agree."""
import re

import pytest

from . import script_runs
from .test_mnist_example import SAME_DRAWS, _layout
from .test_public_scripts import REPO

MAIN = REPO / "bench" / "third_party" / "mnist_forward_forward" / "main.py"


def test_forward_forward_example_trains_like_pytorch(tmp_path):
    work = _layout(tmp_path, train=2000, test=1000)
    (work / "data").symlink_to(tmp_path / "data")       # (its root is ./data/, not ../data)
    args = [SAME_DRAWS, MAIN, "--epochs", "30", "--train_size", "2000", "--test_size", "1000", "--no_accel",
            "--log-interval", "5"]
    procs = {fw: script_runs.start(fw, args, work) for fw in ("paragrad", "torch")}     # side by side: two cores
    outs = {fw: script_runs.finish(fw, proc) for fw, proc in procs.items()}
    numbers = {fw: {what: [float(v) for v in re.findall(rf"{what}:? +([\d.]+)", out)]
                    for what in ("Loss", "train error", "test error")} for fw, out in outs.items()}
    ours, theirs = numbers["paragrad"], numbers["torch"]
    assert len(ours["Loss"]) == 12 and outs["paragrad"].count("training layer: ") == 2, outs["paragrad"]
    assert ours["Loss"] == pytest.approx(theirs["Loss"], rel=1e-4), (ours, theirs)
    for what in ("train error", "test error"):
        assert len(ours[what]) == 1 and ours[what] == pytest.approx(theirs[what], abs=2e-3), (ours, theirs)
    first_layer = ours["Loss"][:6]
    assert first_layer[-1] < first_layer[0] - 0.3, first_layer      # the goodness loss falls
