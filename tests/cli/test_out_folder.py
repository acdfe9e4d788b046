"""Output and data folders: a new run never mixes its files with another run's, and a bad
--out or --data-dir is refused before anything is created."""
import urllib.request

import pytest

from tests.cli.helpers import refused, run, run_lock_held, train_mnist
from tests.data_paths import mnist_root


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_new_run_into_a_used_folder_is_refused_then_overwritten(tmp_path, capsys):
    out = tmp_path / "run"
    assert train_mnist(out, "--epochs", "2") == 0
    before = _snapshot(out)
    refused(capsys, "train", "mnist", "--data-dir", mnist_root(), "--out", out, "--model", "cnn",
            "--limit", "100", "--epochs", "1",
            naming=["--out", "already holds another run", f"--resume {out / 'epoch2.safetensors'}",
                    "--overwrite"])
    assert _snapshot(out) == before
    assert train_mnist(out, "--epochs", "1", "--hidden", "16", "--overwrite") == 0
    names = sorted(p.name for p in out.iterdir())
    assert "epoch2.safetensors" not in names and "epoch1.safetensors" in names
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 1


def test_resuming_an_early_checkpoint_of_the_folder_needs_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    assert train_mnist(out, "--epochs", "2") == 0
    # (a plain run's later epochs, not "an earlier continuation": the message says what is there)
    err = refused(capsys, "train", "mnist", "--resume", out / "epoch1.safetensors", "--epochs", "3",
                  naming=["--out", "later checkpoints of this run (epoch2.safetensors)", "from epoch 1",
                          f"--resume {out / 'epoch2.safetensors'}", "--overwrite"])
    assert "continuation" not in err
    assert train_mnist(None, "--resume", out / "epoch1.safetensors", "--epochs", "3", "--overwrite") == 0
    assert (out / "epoch3.safetensors").exists()


def test_default_out_depends_on_the_model(tmp_path, monkeypatch):
    # the README's order: the default model, then --model cnn, each with the default --out
    monkeypatch.chdir(tmp_path)
    base = ["train", "mnist", "--data-dir", mnist_root(), "--limit", "100", "--epochs", "1"]
    assert run(*base, "--hidden", "16") == 0
    assert run(*base, "--model", "cnn", "--test-limit", "100") == 0
    assert (tmp_path / "runs" / "mnist-mlp" / "epoch1.safetensors").exists()
    assert (tmp_path / "runs" / "mnist-cnn" / "epoch1.safetensors").exists()


def test_out_naming_a_file_is_refused(tmp_path, capsys):
    f = tmp_path / "notes.txt"
    f.write_text("mine")
    for out in (f, f / "run"):
        refused(capsys, "train", "mnist", "--data-dir", mnist_root(), "--out", out, "--limit", "100",
                "--epochs", "1", naming=["--out", "notes.txt", "is a file"])
    assert f.read_text() == "mine"


def test_mistyped_data_dir_creates_nothing(tmp_path, capsys):
    refused(capsys, "train", "mnist", "--data-dir", tmp_path / "dtaa", "--out", tmp_path / "o",
            naming=["--data-dir", "dtaa", "no such folder"])
    assert sorted(tmp_path.iterdir()) == []


def test_data_dir_without_the_dataset_creates_nothing(tmp_path, capsys, monkeypatch):
    # offline (no mirror answers): the error says where the files go, and no folder is made
    def offline(*args, **kwargs):
        raise OSError("network unreachable")
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    data = tmp_path / "data"
    data.mkdir()
    refused(capsys, "train", "mnist", "--data-dir", data, "--out", tmp_path / "o",
            naming=["MNIST: missing", str(data / "mnist")])
    assert sorted(tmp_path.iterdir()) == [data] and list(data.iterdir()) == []


def test_a_run_into_a_folder_another_run_is_writing_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    with run_lock_held(out) as pid:
        refused(capsys, "train", "mnist", "--data-dir", mnist_root(), "--out", out, "--limit", "100",
                "--epochs", "1", naming=[f"--out {out}", f"pid {pid}"])
    assert sorted(p.name for p in out.iterdir()) == [".paragrad.lock"]
    assert train_mnist(out, "--epochs", "1") == 0
