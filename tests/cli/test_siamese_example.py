"""pytorch/examples' siamese_network/main.py (bench/third_party/siamese_network/, unmodified:
torchvision.models.resnet18 with a one-channel stem, rebuilt from list(resnet.children())[:-1],
scoring pairs of MNIST digits that Python's random picks; BCELoss, Adadelta at lr 1) under
`paragrad run` on the CPU, beside real PyTorch through tests/cli/scripts/mnist_same_draws.py (the
same weights, pairs and batches). The first loss agrees to float32 rounding. After it the two
runs part: at lr 1 a ReLU network's gradient jumps wherever rounding flips a unit on or off (a
1e-5 relative change of a block's input moves its input gradient 1e-3 in torch alone), so the
curves are compared as curves: epoch by epoch, and by the test accuracy they reach."""
import re
import statistics

import pytest

from . import script_runs
from .test_mnist_example import SAME_DRAWS, TEST_LINE, _layout
from .test_public_scripts import REPO

MAIN = REPO / "bench" / "third_party" / "siamese_network" / "main.py"


def test_siamese_example_trains_like_pytorch(tmp_path):
    work = _layout(tmp_path, train=1280, test=500)
    args = [SAME_DRAWS, MAIN, "--epochs", "2", "--no-accel", "--log-interval", "2"]
    procs = {fw: script_runs.start(fw, args, work) for fw in ("paragrad", "torch")}     # side by side: two cores
    outs = {fw: script_runs.finish(fw, proc) for fw, proc in procs.items()}
    curves = {fw: [[float(v) for v in re.findall(rf"Train Epoch: {e} .*\tLoss: ([\d.]+)", out)] for e in (1, 2)]
              for fw, out in outs.items()}
    ours, theirs = curves["paragrad"], curves["torch"]
    assert [len(c) for c in ours] == [10, 10], outs["paragrad"]      # 20 batches of 64 an epoch, every 2nd
    assert ours[0][0] == pytest.approx(theirs[0][0], rel=1e-5), (ours, theirs)
    for epoch in (0, 1):
        assert statistics.mean(ours[epoch]) == pytest.approx(statistics.mean(theirs[epoch]), rel=0.15), (ours, theirs)
    assert statistics.mean(ours[1]) < statistics.mean(ours[0]) - 0.1, ours
    accuracy = {fw: [int(ok) for _, ok, _, _ in re.findall(TEST_LINE, out)] for fw, out in outs.items()}
    assert len(accuracy["paragrad"]) == 2, outs["paragrad"]
    assert accuracy["paragrad"][-1] > 300 and abs(accuracy["paragrad"][-1] - accuracy["torch"][-1]) <= 40, accuracy
