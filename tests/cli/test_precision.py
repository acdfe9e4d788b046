"""`paragrad train --precision bf16|fp16|fp32`: the forward pass and the loss under pg.autocast,
float32 weights in the checkpoints, fp16's GradScaler state saved and restored, the precision
kept on --resume and used by evaluation."""
import json
from contextlib import redirect_stdout
from io import StringIO

import numpy as np
import pytest

import paragrad as pg
from paragrad.cli.precision import default_precision
from paragrad.cli.train import build_model
from paragrad.io.safetensors import load_file
from tests.cli.helpers import copy_checkpoint, edit_train_state, refused, run, train_mnist, train_state
from tests.data_paths import mnist_root


@pytest.mark.parametrize("where,model,expected", [
    ("cpu", "mlp", "fp32"), ("cpu", "cnn", "fp32"), ("cpu", "resnet18", "fp32"),
    ("cuda", "mlp", "fp32"), ("cuda", "cnn", "bf16"), ("cuda:1", "resnet18", "bf16"),
])
def test_default_precision(where, model, expected):
    assert default_precision(where, model) == expected


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One-epoch runs of the same seed: {precision: (folder, what the run printed)}; the fp32
    run leaves --precision out."""
    done = {}
    for precision in ("fp32", "bf16", "fp16"):
        out, printed = tmp_path_factory.mktemp(precision), StringIO()
        flags = [] if precision == "fp32" else ["--precision", precision]
        with redirect_stdout(printed):
            assert train_mnist(out, "--epochs", "1", "--test-limit", "200", *flags) == 0
        done[precision] = out, printed.getvalue()
    return done


def _weights(folder):
    arrays, _ = load_file(folder / "epoch1.safetensors")
    return {name: a for name, (a, _) in arrays.items()}


def _records(folder):
    return [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("precision,said", [("fp32", "device cpu, fp32\n"), ("bf16", "device cpu, bf16 autocast\n"),
                                            ("fp16", "device cpu, fp16 autocast with loss scaling\n")])
def test_the_run_records_and_names_its_precision(runs, precision, said):
    out, printed = runs[precision]
    assert said in printed.splitlines(keepends=True)[0], printed
    assert train_state(out / "epoch1.safetensors")["extra"]["run"]["precision"] == precision


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_autocast_trains_float32_weights_that_differ_from_fp32(runs, precision):
    ours, fp32 = _weights(runs[precision][0]), _weights(runs["fp32"][0])
    assert {a.dtype for a in ours.values()} == {np.dtype(np.float32)}
    # the same seed and data: only the forward's precision can make them differ, by little
    diff = max(float(np.abs(ours[k] - fp32[k]).max()) for k in fp32)
    assert 0 < diff < 0.05, diff
    accuracy = _records(runs[precision][0])[0]["test_accuracy"]
    assert accuracy > 0.3 and accuracy == pytest.approx(_records(runs["fp32"][0])[0]["test_accuracy"], abs=0.05)


def test_fp16_saves_its_scaler_state_and_records_the_unscaled_loss(runs):
    out, _ = runs["fp16"]
    scaler = train_state(out / "epoch1.safetensors")["extra"]["grad_scaler"]
    # GradScaler's initial scale, and 10 steps without an overflow counted towards its growth
    assert scaler["scale"] == 2.0**16 and scaler["_growth_tracker"] == 10
    assert _records(out)[0]["train_loss"] == pytest.approx(_records(runs["fp32"][0])[0]["train_loss"], rel=0.01)
    for precision in ("fp32", "bf16"):       # no scaler, nothing saved
        assert train_state(runs[precision][0] / "epoch1.safetensors")["extra"]["grad_scaler"] == {}


def test_resume_restores_the_scaler_state(runs, tmp_path):
    ckpt = copy_checkpoint(runs["fp16"][0] / "epoch1.safetensors", tmp_path)
    edit_train_state(ckpt, lambda s: s["extra"]["grad_scaler"].update(scale=1024.0, _growth_tracker=7))
    assert train_mnist(None, "--resume", ckpt, "--epochs", "2") == 0
    # 10 more steps from the restored scale and count (a fresh scaler would save 65536 and 10)
    scaler = train_state(tmp_path / "epoch2.safetensors")["extra"]["grad_scaler"]
    assert (scaler["scale"], scaler["_growth_tracker"]) == (1024.0, 17)


def test_resume_of_fp16_without_scaler_state_is_refused(runs, tmp_path, capsys):
    ckpt = copy_checkpoint(runs["fp16"][0] / "epoch1.safetensors", tmp_path)
    edit_train_state(ckpt, lambda s: s["extra"].pop("grad_scaler"))
    refused(capsys, "train", "mnist", "--resume", ckpt, "--epochs", "2", naming=["--resume", "c.safetensors"])


def _logits_dtypes(monkeypatch, *argv):
    """The dtypes of the model's outputs while `paragrad evaluate` runs argv."""
    seen = set()

    def recording(config):
        model = build_model(config)
        model.register_forward_hook(lambda module, args, out: seen.add(out.dtype))
        return model
    monkeypatch.setattr("paragrad.cli.evaluate.build_model", recording)
    assert run("evaluate", *argv, "--limit", "100") == 0
    return seen


def test_evaluate_runs_in_the_precision_of_the_run(runs, monkeypatch):
    for precision, dtype in (("fp32", pg.float32), ("bf16", pg.bfloat16), ("fp16", pg.float16)):
        assert _logits_dtypes(monkeypatch, runs[precision][0] / "epoch1.safetensors") == {dtype}


def test_a_run_recorded_before_precision_existed_is_fp32(runs, tmp_path, capsys, monkeypatch):
    ckpt = copy_checkpoint(runs["bf16"][0] / "epoch1.safetensors", tmp_path)
    edit_train_state(ckpt, lambda s: s["extra"]["run"].pop("precision"))
    assert _logits_dtypes(monkeypatch, ckpt) == {pg.float32}
    refused(capsys, "train", "mnist", "--resume", ckpt, "--epochs", "2", "--precision", "bf16",
            naming=["--precision bf16", "--precision fp32"])


def test_bf16_trains_a_batchnorm_cnn(tmp_path):
    """The cnn's CUDA default: BatchNorm takes the bfloat16 convolution output with its float32
    weights (torch's mixed type); the checkpoint keeps float32 weights."""
    assert run("train", "mnist", "--model", "cnn", "--precision", "bf16", "--limit", "128", "--test-limit", "100",
               "--epochs", "1", "--data-dir", mnist_root(), "--out", tmp_path) == 0
    assert {a.dtype for a in _weights(tmp_path).values() if a.dtype.kind == "f"} == {np.dtype(np.float32)}
