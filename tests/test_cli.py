"""The command line end to end on a 2,000-image slice of the real MNIST."""
import json
import subprocess
import sys

import numpy as np

from paragrad import checkpoint
from paragrad.cli import main
from tests.data_paths import mnist_root


def _train(out, *extra):
    return main(["train", "mnist", "--data-dir", str(mnist_root()), "--out", str(out), "--limit", "2000",
                 "--hidden", "64", "--batch-size", "50", *extra])


def test_train_writes_metrics_plot_checkpoints(tmp_path, capsys):
    assert _train(tmp_path / "run", "--epochs", "2") == 0
    out = capsys.readouterr().out
    assert "epoch 2: train loss" in out and "done: 2 epochs" in out
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in lines] == [1, 2]
    assert {"epoch", "train_loss", "test_accuracy", "seconds"} <= set(lines[0])
    assert lines[1]["train_loss"] < lines[0]["train_loss"] and lines[1]["test_accuracy"] > 0.8
    assert (tmp_path / "run" / "curves.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "run" / "epoch2.safetensors").exists()
    assert main(["evaluate", str(tmp_path / "run" / "epoch2.safetensors"),
                 "--data-dir", str(mnist_root())]) == 0
    acc = float(capsys.readouterr().out.split("test accuracy ")[1].split("%")[0])
    assert acc > 80.0


def test_resume_equals_uninterrupted(tmp_path):
    # a run interrupted after epoch 1 and resumed from its checkpoint == the uninterrupted run
    assert _train(tmp_path / "full", "--epochs", "2") == 0
    assert _train(tmp_path / "part", "--epochs", "2", "--resume", str(tmp_path / "full" / "epoch1.safetensors")) == 0
    full = [json.loads(x) for x in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    part = [json.loads(x) for x in (tmp_path / "part" / "metrics.jsonl").read_text().splitlines()]
    assert [r["train_loss"] for r in full] == [r["train_loss"] for r in part]
    assert [r["test_accuracy"] for r in full] == [r["test_accuracy"] for r in part]
    a, _ = checkpoint.load_weights(tmp_path / "full" / "epoch2.safetensors")
    b, _ = checkpoint.load_weights(tmp_path / "part" / "epoch2.safetensors")
    for k in a:
        assert np.array_equal(a[k].numpy(), b[k].numpy()), k


def _run(*args):
    return subprocess.run([sys.executable, "-m", "paragrad", *args], capture_output=True, text=True)


def test_bad_arguments_one_line_error_no_traceback(tmp_path):
    for args in (["train", "mnist", "--epochz", "3"], ["train", "mnist", "--epochs", "-1"],
                 ["train", "mnist", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o")],
                 ["evaluate", str(tmp_path / "missing.safetensors")], ["train", "cifar"]):
        r = _run(*args)
        assert r.returncode != 0, args
        assert "Traceback" not in r.stderr and r.stderr.strip().count("\n") == 0, r.stderr
        assert r.stderr.startswith("paragrad: error:"), r.stderr


def test_corrupt_checkpoint_evaluate_error(tmp_path):
    assert _train(tmp_path / "run", "--epochs", "1") == 0
    ck = tmp_path / "run" / "epoch1.safetensors"
    ck.write_bytes(ck.read_bytes()[:100])
    r = _run("evaluate", str(ck), "--data-dir", str(mnist_root()))
    assert r.returncode == 1 and "epoch1.safetensors" in r.stderr and "Traceback" not in r.stderr


def test_info_lists_backends():
    r = _run("info")
    assert r.returncode == 0 and "paragrad" in r.stdout and "cpu    usable" in r.stdout
    assert "cuda" in r.stdout
