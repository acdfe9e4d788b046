"""A run whose loss or weights become non-finite stops with an error naming the step, keeping
the last good checkpoint; the loop reads the device only at redraws and epoch ends."""
import io
import json
import os
import sys

import numpy as np
import pytest

import paragrad as pg
from paragrad import checkpoint
from tests.cli.helpers import train_mnist


def _nan_loss_at(monkeypatch, call):
    """Make the cross-entropy of training step `call` (1-based, over the whole run) NaN."""
    real, calls = pg.nn.functional.cross_entropy, []

    def poisoned(*args, **kwargs):
        loss = real(*args, **kwargs)
        calls.append(1)
        return loss * float("nan") if len(calls) == call else loss
    monkeypatch.setattr(pg.nn.functional, "cross_entropy", poisoned)


def test_nan_loss_stops_naming_the_step_and_keeps_the_last_checkpoint(tmp_path, capsys, monkeypatch, device):
    _nan_loss_at(monkeypatch, 15)      # epoch 2, batch 5 of 10 (--no-jit: a replayed graph would not call it)
    out = tmp_path / "run"
    assert train_mnist(out, "--epochs", "3", "--device", device, "--no-jit") == 1
    err = capsys.readouterr().err.splitlines()[-1]      # (after the progress bar's lines)
    assert err.startswith("paragrad train: error: the loss became nan at step 15 (epoch 2, batch 5 of 10)"), err
    assert f"the last good checkpoint is {out / 'epoch1.safetensors'}" in err
    assert not (out / "epoch2.safetensors").exists()
    assert [json.loads(x)["epoch"] for x in (out / "metrics.jsonl").read_text().splitlines()] == [1]
    weights, _ = checkpoint.load_weights(out / "epoch1.safetensors")
    assert all(np.isfinite(w.numpy()).all() for w in weights.values())


def test_weights_broken_by_the_last_step_are_not_saved(tmp_path, capsys, monkeypatch, device):
    # the 10th update (the epoch's last) makes a weight NaN while every loss stays finite
    real, calls = pg.optim.Adam.step, []

    def step(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == 10:
            with pg.no_grad():
                self.param_groups[0]["params"][0].fill_(float("nan"))
        return out
    monkeypatch.setattr(pg.optim.Adam, "step", step)
    out = tmp_path / "run"
    assert train_mnist(out, "--epochs", "2", "--device", device, "--no-jit") == 1
    err = capsys.readouterr().err
    assert "the weights became non-finite in epoch 1" in err and "no checkpoint was written" in err, err
    assert not (out / "epoch1.safetensors").exists()


def test_a_diverging_lr_stops_the_run(tmp_path, capsys, device):
    # (on cuda the step runs as one captured graph: the watch works inside it)
    assert train_mnist(tmp_path / "run", "--epochs", "1", "--optimizer", "sgd", "--lr", "1e30",
                       "--device", device) == 1
    err = capsys.readouterr().err
    assert "paragrad train: error: the loss became" in err and "at step" in err, err
    assert not (tmp_path / "run" / "epoch1.safetensors").exists()


def test_the_loop_reads_the_device_only_at_redraws(tmp_path, capsys, monkeypatch):
    # a terminal progress bar (it redraws at most every 0.1 s) over 250 steps an epoch: host
    # reads made by the CLI itself (not the ops' own checks) stay per redraw, not per step
    import paragrad.cli.progress as progress
    from paragrad.tensor import Tensor

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.setattr(progress.sys, "stderr", Terminal())
    cli = os.path.dirname(progress.__file__)
    reads, draws = [0], [0]
    real_host, real_draw = Tensor._host, progress.Progress._draw

    def host(self, op):
        caller = sys._getframe(1)
        while caller.f_code.co_filename.endswith("tensor.py"):      # float(t) -> item -> _host
            caller = caller.f_back
        reads[0] += caller.f_code.co_filename.startswith(cli)
        return real_host(self, op)

    def draw(self, *args):
        draws[0] += 1
        return real_draw(self, *args)
    monkeypatch.setattr(Tensor, "_host", host)
    monkeypatch.setattr(progress.Progress, "_draw", draw)
    assert train_mnist(tmp_path / "run", "--epochs", "2", "--limit", "2000", "--batch-size", "8") == 0
    assert draws[0] < 250, draws
    assert reads[0] <= 2 * draws[0] + 10, (reads, draws)
