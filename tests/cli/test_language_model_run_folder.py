"""A language-model run's folder loses nothing: a refused --overwrite deletes nothing, resuming
an earlier checkpoint of the folder needs --overwrite, two runs can't write into one folder at
once, and a diverging run stops before it saves non-finite weights."""
import json
import math

import numpy as np

from paragrad.io import checkpoint
from tests.cli.helpers import lm_records, refused, run_lock_held, train_shakespeare, train_state


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def _copy_run(run, folder):
    folder.mkdir()
    for name, data in _snapshot(run).items():
        (folder / name).write_bytes(data)
    return folder


def test_a_refused_overwrite_deletes_nothing(shakespeare_run, tmp_path, capsys):
    out = _copy_run(shakespeare_run, tmp_path / "x")
    before = _snapshot(out)
    refused(capsys, "train", "shakespeare", "--data-dir", _data(), "--out", out, "--overwrite",
            "--block-size", "200000", "--n-layer", "1", "--n-head", "1", "--n-embd", "8",
            naming=["--block-size 200000", "111,540"])
    assert _snapshot(out) == before


def _data():
    from tests.data_paths import shared_data_file
    return shared_data_file("tinyshakespeare/input.txt").parent.parent


def test_resuming_an_earlier_checkpoint_of_the_folder_needs_overwrite(shakespeare_run, tmp_path, capsys):
    out = _copy_run(shakespeare_run, tmp_path / "x")          # ckpt at 50, best at its best
    # a checkpoint of iteration 20 of the same run, kept in its folder
    twin = tmp_path / "twin"
    assert train_shakespeare(twin, "--max-iters", "20", "--lr-decay-iters", "70") == 0
    keep = out / "keep20.safetensors"
    for suffix in ("", ".train.safetensors"):
        keep.with_name(keep.name + suffix).write_bytes((twin / ("ckpt.safetensors" + suffix)).read_bytes())
    before = _snapshot(out)
    capsys.readouterr()
    refused(capsys, "train", "shakespeare", "--resume", keep, "--max-iters", "30",
            naming=["later checkpoints", "ckpt.safetensors at iteration 50", "--overwrite",
                    f"--resume {out / 'ckpt.safetensors'}"])
    assert _snapshot(out) == before
    assert train_shakespeare(None, "--resume", keep, "--max-iters", "30", "--overwrite") == 0
    assert train_state(out / "ckpt.safetensors")["step"] == 30
    assert [r["iter"] for r in lm_records(out)] == [0, 10, 20, 30]      # one history, not two mixed
    # the later best went with --overwrite: best is the best checkpoint there is again
    assert train_state(out / "best.safetensors")["step"] == 30


def test_a_second_run_into_a_folder_being_written_is_refused_naming_the_first(tmp_path, capsys):
    out = tmp_path / "x"
    out.mkdir()
    with run_lock_held(out) as pid:
        refused(capsys, "train", "shakespeare", "--data-dir", _data(), "--out", out, "--max-iters", "10",
                "--n-layer", "1", "--n-head", "1", "--n-embd", "8", "--block-size", "8",
                naming=[f"--out {out}", f"pid {pid}", "another run"])
    assert sorted(p.name for p in out.iterdir()) == [".paragrad.lock"]
    assert train_shakespeare(out, "--max-iters", "10") == 0       # the lock died with its process


def test_a_diverging_language_model_stops_naming_the_iteration(tmp_path, capsys, device):
    # (on cuda the step is one captured graph: the watch runs inside it)
    out = tmp_path / "x"
    assert train_shakespeare(out, "--max-iters", "30", "--lr", "1e30", "--min-lr", "1e29", "--device", device) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("paragrad train: error: the loss became nan at iteration "), err
    assert "a lower --lr may help" in err
    lines = (out / "metrics.jsonl").read_text().splitlines()
    records = [json.loads(x, parse_constant=lambda c: math.nan) for x in lines]
    assert records and all(math.isfinite(r["val_loss"]) and math.isfinite(r["train_loss"]) for r in records)
    weights, _ = checkpoint.load_weights(out / "ckpt.safetensors")
    assert all(np.isfinite(w.numpy()).all() for w in weights.values())
    assert f"the last good checkpoint is {out / 'ckpt.safetensors'}" in err
