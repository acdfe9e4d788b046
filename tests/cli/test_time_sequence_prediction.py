"""pytorch/examples' time_sequence_prediction (bench/third_party/, unmodified) under `paragrad
run`: generate_sine_wave.py writes traindata.pt, and a step of train.py (two LSTMCells in
float64, LBFGS with lr 0.8: 20 closure calls a step) prints the losses torch's run prints.

At full size a step takes 40-45 s on one CPU core in either framework (97 sequences of 999
time steps, each closure a forward and backward through all of them), so the training here runs
on the first 10 sequences' first 51 samples: the same script and code paths, a few seconds a
run. The two frameworks draw different random numbers, so both runs go through
tests/cli/scripts/numpy_draws.py, which draws the initial weights from NumPy in each; the losses
then agree to about 1e-12 relative (at full size too)."""
from pathlib import Path

import numpy as np
import torch

import paragrad as pg

from . import script_runs

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "bench" / "third_party" / "time_sequence_prediction"
NUMPY_DRAWS = Path(__file__).parent / "scripts" / "numpy_draws.py"


def _sine_waves():
    """What generate_sine_wave.py computes (100 sequences of 1000 samples)."""
    np.random.seed(2)
    x = np.arange(1000) + np.random.randint(-80, 80, 100).reshape(100, 1)
    return np.sin(x / 1.0 / 20).astype("float64")


def _losses(out):
    """(the closure's losses, the test losses) a run printed."""
    lines = out.splitlines()
    return ([float(line.split()[1]) for line in lines if line.startswith("loss:")],
            [float(line.split()[2]) for line in lines if line.startswith("test loss:")])


def test_generate_and_train_as_torch(tmp_path):
    ours, theirs = tmp_path / "paragrad", tmp_path / "torch"
    ours.mkdir(), theirs.mkdir()
    script_runs.run("paragrad", [EXAMPLE / "generate_sine_wave.py"], ours)
    data = pg.load(ours / "traindata.pt")              # a NumPy array, as torch.save was given
    np.testing.assert_array_equal(data, _sine_waves())

    small = np.ascontiguousarray(data[:10, :51])
    pg.save(small, ours / "traindata.pt")
    torch.save(small, theirs / "traindata.pt")
    args = [NUMPY_DRAWS, EXAMPLE / "train.py", "--steps", "1"]
    got = _losses(script_runs.run("paragrad", args, ours))
    # torch >= 2.6 loads only tensors by default, not the NumPy array the example saves: its
    # documented switch restores the old default (paragrad's weights_only load admits plain arrays)
    want = _losses(script_runs.run("torch", args, theirs, env={"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}))
    assert len(got[0]) == len(want[0]) == 20 and len(got[1]) == len(want[1]) == 1
    assert want[0][-1] < 0.1 * want[0][0], "the step should train"
    np.testing.assert_allclose(got[0], want[0], rtol=1e-9, err_msg="training losses")
    np.testing.assert_allclose(got[1], want[1], rtol=1e-9, err_msg="test loss")
    assert (ours / "predict0.pdf").stat().st_size > 0
