"""pytorch/examples' vae/main.py (bench/third_party/vae/, unmodified: a fully connected VAE on
MNIST, Adam, a summed binary cross-entropy plus the KL term, torchvision's save_image) under
`paragrad run` on the CPU. On MNIST cut to 2,000 training and 1,000 test digits it trains beside
real PyTorch through tests/cli/scripts/mnist_same_draws.py (the same weights, batch order and
noise, drawn from NumPy): the printed training, epoch and test losses agree, and the
reconstruction and sample grids it saves are PNGs of torchvision's grid size."""
import re

import numpy as np
import pytest

from paragrad.vision.png import read_png

from . import script_runs
from .test_mnist_example import SAME_DRAWS, _layout
from .test_public_scripts import REPO

MAIN = REPO / "bench" / "third_party" / "vae" / "main.py"


def _numbers(pattern, out):
    return [float(v) for v in re.findall(pattern, out)]


def test_vae_example_trains_like_pytorch_and_saves_its_images(tmp_path):
    work = _layout(tmp_path, train=2000, test=1000)
    (work / "results").mkdir()      # (the example's README makes it; save_image writes into it)
    args = [SAME_DRAWS, MAIN, "--epochs", "1", "--log-interval", "4", "--no-accel"]
    procs = {fw: script_runs.start(fw, args, work) for fw in ("paragrad", "torch")}     # side by side: two cores
    outs = {fw: script_runs.finish(fw, proc) for fw, proc in procs.items()}
    for pattern, count in ((r"\tLoss: ([\d.]+)", 4),                    # 16 batches of 128, every 4th
                           (r"====> Epoch: 1 Average loss: ([\d.]+)", 1),
                           (r"====> Test set loss: ([\d.]+)", 1)):
        ours, theirs = (_numbers(pattern, outs[fw]) for fw in ("paragrad", "torch"))
        assert len(ours) == count, outs["paragrad"]
        assert ours == pytest.approx(theirs, rel=1e-4), (pattern, ours, theirs)
    train = _numbers(r"\tLoss: ([\d.]+)", outs["paragrad"])
    assert train[-1] < train[0] - 200, train        # per digit: ~545 (784 ln 2) at the start
    # 8 digits beside their 8 reconstructions, one row of 16 cells; 64 samples, 8 x 8 cells;
    # each cell 28 + 2 padding, the grid 2 more, single-channel images saved as RGB
    reconstruction = read_png(work / "results" / "reconstruction_1.png")
    sample = read_png(work / "results" / "sample_1.png")
    assert reconstruction.shape == (2 * 30 + 2, 8 * 30 + 2, 3) and sample.shape == (8 * 30 + 2, 8 * 30 + 2, 3)
    assert (reconstruction[:2] == 0).all() and reconstruction[2:30, 2:30].max() == 255     # padding, a digit
    assert np.array_equal(sample[..., 0], sample[..., 2])
