"""--resume continues the same run: --epochs is the run's total (as in a PyTorch loop), the
cosine schedule follows the new total, flags left out come from the checkpoint and flags that
contradict it are refused."""
import json
import math

import pytest

from tests.cli.helpers import refused, train_mnist, train_state


def _records(folder):
    return [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]


def _lr(ckpt):
    return train_state(ckpt)["optimizer"]["param_groups"][0]["lr"]


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    """A finished 2-epoch run (10 steps an epoch)."""
    out = tmp_path_factory.mktemp("done")
    assert train_mnist(out, "--epochs", "2") == 0
    return out


def _listing(folder):
    return sorted((p.name, p.stat().st_mtime_ns) for p in folder.iterdir())


def test_resume_of_the_last_epoch_has_nothing_to_train(done, tmp_path, capsys):
    before = _listing(done)
    capsys.readouterr()
    for extra in ([], ["--epochs", "2"], ["--out", tmp_path / "elsewhere"]):
        assert train_mnist(None, "--resume", done / "epoch2.safetensors", *extra) == 0, extra
        assert "nothing left to train" in capsys.readouterr().out
    assert _listing(done) == before and not (tmp_path / "elsewhere").exists()


def test_resume_with_fewer_epochs_than_trained_is_refused(done, capsys):
    refused(capsys, "train", "mnist", "--resume", done / "epoch2.safetensors", "--epochs", "1",
            naming=["--epochs 1", "2 epochs"])


def test_resume_trains_up_to_the_new_total_with_the_flags_of_the_run(done, tmp_path, capsys):
    # no --hidden, --batch-size, --limit: they come from the checkpoint (hidden 32, not 256,128)
    out = tmp_path / "more"
    assert train_mnist(None, "--resume", done / "epoch2.safetensors", "--epochs", "4",
                       "--out", out) == 0
    assert "training mlp 784-32-10 (25,450 parameters) on 500 MNIST images" in capsys.readouterr().out
    assert [r["epoch"] for r in _records(out)] == [1, 2, 3, 4]
    assert _records(out)[:2] == _records(done)
    # the cosine over the new total of 40 steps, continued from step 20: not its old 20-step
    # period climbing back up (which would put epoch 3 at 0.5e-3 and epoch 4 at 1e-3)
    assert _lr(out / "epoch3.safetensors") == pytest.approx(1e-3 * (1 + math.cos(math.pi * 30 / 40)) / 2)
    assert _lr(out / "epoch4.safetensors") == pytest.approx(0.0, abs=1e-12)


def test_resume_continues_in_the_checkpoint_folder(tmp_path, capsys):
    run = tmp_path / "run"
    assert train_mnist(run, "--epochs", "1") == 0
    assert train_mnist(None, "--resume", run / "epoch1.safetensors", "--epochs", "2") == 0
    assert [r["epoch"] for r in _records(run)] == [1, 2]


@pytest.mark.parametrize("flag,value,recorded", [
    ("--optimizer", "sgd", "adam"), ("--model", "cnn", "mlp"), ("--hidden", "16", "32"),
    ("--batch-size", "25", "50"), ("--lr", "0.01", "0.001"), ("--weight-decay", "0.1", "0.0"),
    ("--schedule", "none", "cosine"), ("--seed", "3", "0"), ("--limit", "400", "500"),
    ("--test-limit", "100", "all"), ("--precision", "bf16", "fp32"),
])
def test_resume_with_a_contradicting_flag_is_refused(done, tmp_path, capsys, flag, value, recorded):
    out = tmp_path / "o"
    refused(capsys, "train", "mnist", "--resume", done / "epoch1.safetensors", "--epochs", "3",
            "--out", out, flag, value, naming=[f"{flag} {value}", f"{flag} {recorded}", "--resume"])
    assert not out.exists()


def test_resume_checks(done, tmp_path, capsys):
    refused(capsys, "train", "mnist", "--resume", tmp_path / "nope.safetensors",
            naming=["--resume", "nope.safetensors", "no such checkpoint file"])
    refused(capsys, "train", "cifar10", "--resume", done / "epoch1.safetensors", "--epochs", "3",
            naming=["--resume", "mnist checkpoint"])
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes((done / "epoch1.safetensors").read_bytes()[:50])
    (tmp_path / "bad.safetensors.train.safetensors").write_bytes(
        (done / "epoch1.safetensors.train.safetensors").read_bytes())
    refused(capsys, "train", "mnist", "--resume", bad, "--epochs", "3", "--out", tmp_path / "o",
            naming=["--resume", "bad.safetensors"])
    assert not (tmp_path / "o").exists()
