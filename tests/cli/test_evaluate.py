"""`paragrad evaluate CKPT`: as the README writes it (no --data-dir), reading only the test
split; a missing, corrupt or incomplete checkpoint is refused naming the file."""
import os
import urllib.request

import pytest

from paragrad import checkpoint
from tests.cli.helpers import copy_checkpoint, edit_train_state, refused, run, train_mnist
from tests.data_paths import mnist_root


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    assert train_mnist(out, "--epochs", "1") == 0
    return out / "epoch1.safetensors"


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """No download may hide a wrong folder."""
    def unreachable(*args, **kwargs):
        raise OSError("network unreachable")
    monkeypatch.setattr(urllib.request, "urlopen", unreachable)


def _accuracy(capsys):
    return capsys.readouterr().out.split("test accuracy ")[1]


def test_evaluate_finds_the_data_the_run_was_trained_on(ckpt, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PARAGRAD_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))        # the default folder holds nothing
    assert run("evaluate", ckpt) == 0
    assert "on 10,000 MNIST test images" in _accuracy(capsys)


def test_evaluate_reads_only_the_test_split(ckpt, tmp_path, capsys):
    (tmp_path / "mnist").mkdir()
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        os.symlink(mnist_root() / "mnist" / name, tmp_path / "mnist" / name)
    assert run("evaluate", ckpt, "--data-dir", tmp_path, "--limit", "300") == 0
    assert "on 300 MNIST test images" in _accuracy(capsys)


def test_an_explicit_data_folder_wins(ckpt, tmp_path, capsys, monkeypatch):
    refused(capsys, "evaluate", ckpt, "--data-dir", tmp_path, naming=["MNIST: missing", tmp_path])
    monkeypatch.setenv("PARAGRAD_DATA", str(tmp_path))
    refused(capsys, "evaluate", ckpt, naming=["MNIST: missing", tmp_path])


@pytest.mark.parametrize("damage", ["no config", "no extra", "no epoch", "no train state",
                                    "corrupt train state", "corrupt weights", "wrong weights"])
def test_a_bad_checkpoint_is_refused_naming_the_file(ckpt, tmp_path, capsys, damage):
    ck = copy_checkpoint(ckpt, tmp_path)
    tpath = checkpoint.train_state_path(ck)
    if damage == "no config":
        edit_train_state(ck, lambda s: s["extra"].pop("config"))
    elif damage == "no extra":
        edit_train_state(ck, lambda s: s.pop("extra"))
    elif damage == "no epoch":
        edit_train_state(ck, lambda s: s.pop("epoch"))
    elif damage == "no train state":
        os.remove(tpath)
    elif damage == "corrupt train state":
        with open(tpath, "r+b") as f:
            f.truncate(40)
    elif damage == "corrupt weights":
        ck.write_bytes(ck.read_bytes()[:200])
    else:   # a config that does not describe these weights
        edit_train_state(ck, lambda s: s["extra"]["config"].update(hidden=[16]))
    refused(capsys, "evaluate", ck, "--data-dir", mnist_root(), naming=["c.safetensors"])


def test_a_missing_checkpoint_is_refused(tmp_path, capsys):
    refused(capsys, "evaluate", tmp_path / "nope.safetensors", naming=["nope.safetensors", "no such"])


def test_eval_iters_is_refused_for_an_image_checkpoint(ckpt, capsys):
    refused(capsys, "evaluate", ckpt, "--eval-iters", "3", naming=["--eval-iters", "language-model"])
