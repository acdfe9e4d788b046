"""Bad flag values are refused by the parser: one line naming the flag, exit code 2, nothing
created (not even the output folder)."""
import pytest

import paragrad as pg
from tests.cli.helpers import refused, run
from tests.data_paths import mnist_root

BAD_TRAIN_VALUES = [
    ("--lr", "nan"), ("--lr", "inf"), ("--lr", "-inf"), ("--lr", "0"), ("--lr", "-1e-3"), ("--lr", "fast"),
    ("--weight-decay", "nan"), ("--weight-decay", "inf"), ("--weight-decay", "-1"),
    ("--batch-size", "0"), ("--batch-size", "-5"), ("--batch-size", "1.5"),
    ("--epochs", "0"), ("--epochs", "-1"),
    ("--limit", "0"), ("--limit", "-100"), ("--test-limit", "0"), ("--test-limit", "-1"),
    ("--hidden", "abc"), ("--hidden", "0"), ("--hidden", ""), ("--hidden", "64,,32"), ("--hidden", "64,-1"),
    ("--device", "tpu"), ("--device", "cuda:x"), ("--device", "cuda:99"), ("--precision", "fp8"),
]


@pytest.mark.parametrize("flag,value", BAD_TRAIN_VALUES)
def test_train_refuses_bad_value(tmp_path, capsys, flag, value):
    out = tmp_path / "run"
    # a tiny run, so that a value wrongly accepted finishes quickly (and the test fails)
    refused(capsys, "train", "mnist", "--data-dir", mnist_root(), "--out", out, "--epochs", "1",
            "--limit", "100", f"{flag}={value}", naming=[flag, repr(value)])
    assert not out.exists()


@pytest.mark.parametrize("argv,naming", [
    (["evaluate", "x.safetensors", "--limit", "0"], ["--limit"]),
    (["evaluate", "x.safetensors", "--limit", "-3"], ["--limit"]),
    (["train", "cifar"], ["dataset", "cifar"]),
    (["train", "mnist", "--model", "vgg"], ["--model", "vgg"]),
    (["train", "mnist", "--model", "resnet18"], ["--model resnet18", "mnist models: mlp, cnn"]),
    (["train", "cifar10", "--model", "mlp"], ["--model mlp"]),
    (["train", "mnist", "--model", "cnn", "--hidden", "32"], ["--hidden", "cnn"]),
    (["train", "mnist", "--epochz", "3"], ["--epochz"]),
])
def test_refusals_name_the_flag(tmp_path, capsys, argv, naming):
    refused(capsys, *argv, "--out" if argv[0] == "train" else "--device", tmp_path / "o"
            if argv[0] == "train" else "cpu", naming=naming)
    assert not (tmp_path / "o").exists()


def test_device_cuda_without_cuda(tmp_path, capsys):
    if pg.cuda.is_available():
        pytest.skip("CUDA is available here")
    refused(capsys, "train", "mnist", "--device", "cuda", "--out", tmp_path / "o",
            naming=["--device", "'cuda' is not usable here"])
    assert not (tmp_path / "o").exists()


def test_version(capsys):
    assert run("--version") == 0
    assert capsys.readouterr().out == f"paragrad {pg.__version__}\n"


def test_help_documents_the_limits(capsys):
    assert run("train", "--help") == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--limit LIMIT train on the first N training images only (default: all)" in text
    assert "--test-limit TEST_LIMIT test each epoch on the first N test images only (default: all)" in text
