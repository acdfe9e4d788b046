"""The command line end to end on a 2,000-image slice of the real MNIST, and on tiny fake CIFAR-10
batches written in the official pickle format (the real CIFAR-10 is not in the checkout)."""
import json
import pickle
import subprocess
import sys

import numpy as np

from paragrad.io import checkpoint
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
    # (--no-jit changes nothing on the CPU, where pg.jit runs the step eagerly anyway)
    assert _train(tmp_path / "full", "--epochs", "2") == 0
    assert _train(tmp_path / "part", "--epochs", "2", "--no-jit",
                  "--resume", str(tmp_path / "full" / "epoch1.safetensors")) == 0
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
        assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
        assert r.stderr.startswith(f"paragrad {args[0]}: error:"), r.stderr


def test_corrupt_checkpoint_evaluate_error(tmp_path):
    assert _train(tmp_path / "run", "--epochs", "1") == 0
    ck = tmp_path / "run" / "epoch1.safetensors"
    ck.write_bytes(ck.read_bytes()[:100])
    r = _run("evaluate", str(ck), "--data-dir", str(mnist_root()))
    assert r.returncode == 2 and "epoch1.safetensors" in r.stderr and "Traceback" not in r.stderr


def test_train_mnist_cnn_and_evaluate(tmp_path, capsys):
    out = tmp_path / "cnn"
    assert main(["train", "mnist", "--model", "cnn", "--data-dir", str(mnist_root()), "--out", str(out),
                 "--limit", "600", "--test-limit", "100", "--epochs", "1"]) == 0
    text = capsys.readouterr().out
    assert "training cnn (" in text and "done: 1 epochs" in text
    rec = json.loads((out / "metrics.jsonl").read_text())
    assert rec["epoch"] == 1 and np.isfinite(rec["train_loss"])
    assert main(["evaluate", str(out / "epoch1.safetensors"), "--data-dir", str(mnist_root()),
                 "--limit", "200"]) == 0
    assert "on 200 MNIST test images" in capsys.readouterr().out


def _fake_cifar(root, n=20):
    d = root / "cifar10" / "cifar-10-batches-py"
    d.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {b"batch_label": name.encode(), b"labels": rng.integers(0, 10, n).tolist(),
                 b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                 b"filenames": [b"img_%d.png" % i for i in range(n)]}
        with open(d / name, "wb") as f:
            pickle.dump(batch, f, protocol=2)
    return root


def _train_cifar(root, out, *extra):
    return main(["train", "cifar10", "--data-dir", str(root), "--out", str(out), "--limit", "16",
                 "--batch-size", "8", "--epochs", "1", *extra])


def test_train_cifar10_resnet18_and_evaluate(tmp_path, capsys):
    root = _fake_cifar(tmp_path / "data")
    assert _train_cifar(root, tmp_path / "run") == 0
    text = capsys.readouterr().out
    assert "training resnet18 (11,173,962 parameters) on 16 CIFAR-10 images" in text
    ck = tmp_path / "run" / "epoch1.safetensors"
    weights, _ = checkpoint.load_weights(ck)
    assert tuple(weights["conv1.weight"].shape) == (64, 3, 3, 3) and tuple(weights["fc.weight"].shape) == (10, 512)
    assert main(["evaluate", str(ck), "--data-dir", str(root)]) == 0
    assert "on 20 CIFAR-10 test images" in capsys.readouterr().out


def test_cifar10_augmentation_is_seeded_and_resumable(tmp_path):
    # same seed: same augmentations, so the same loss; the generator state is in the checkpoint
    root = _fake_cifar(tmp_path / "data")
    assert _train_cifar(root, tmp_path / "a", "--epochs", "2", "--limit", "8") == 0
    assert _train_cifar(root, tmp_path / "b", "--epochs", "2", "--limit", "8",
                        "--resume", str(tmp_path / "a" / "epoch1.safetensors")) == 0
    a = [json.loads(x)["train_loss"] for x in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    b = [json.loads(x)["train_loss"] for x in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert a == b


def test_bad_model_dataset_combinations_one_line_error(tmp_path):
    for args in (["train", "mnist", "--model", "resnet18"], ["train", "cifar10", "--model", "cnn"],
                 ["train", "cifar10", "--model", "mlp"], ["train", "mnist", "--model", "vgg"],
                 ["train", "cifar10", "--weight-decay", "-1", "--data-dir", str(tmp_path)]):
        r = _run(*args, "--out", str(tmp_path / "o"))
        assert r.returncode != 0, args
        assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
        assert r.stderr.startswith(f"paragrad {args[0]}: error:"), r.stderr
    r = _run("train", "mnist", "--model", "resnet18")
    assert "mnist models: mlp, cnn" in r.stderr
    r = _run("train", "cifar10", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "cifar10" in r.stderr and "Traceback" not in r.stderr


def test_info_lists_backends():
    r = _run("info")
    assert r.returncode == 0 and "paragrad" in r.stdout and "cpu    usable" in r.stdout
    assert "cuda" in r.stdout and "distributed launcher: " in r.stdout
