"""`paragrad evaluate CKPT` of a language model: its val loss over seeded windows, the same the
run printed last when --eval-iters is the run's; its token files cached under $PARAGRAD_CACHE,
never beside the checkpoint, and a full disk or a corpus its tokenizer can't encode named in one
line."""
import errno
import json
import re
from pathlib import Path

import pytest

from paragrad.data import token_files
from tests.cli.helpers import copy_lm_checkpoint, edit_train_state, lm_records, refused, run
from tests.data_paths import shared_data_file


def _val_loss(out):
    return float(out.split("val loss ")[1].split()[0])


def test_evaluate_prints_the_val_loss_of_the_run(shakespeare_run, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PARAGRAD_CACHE", str(tmp_path / "cache"))
    ckpt = shakespeare_run / "ckpt.safetensors"
    capsys.readouterr()
    assert run("evaluate", ckpt) == 0
    out = capsys.readouterr().out
    assert "over 2 batches of 4x16 shakespeare tokens" in out
    assert _val_loss(out) == round(lm_records(shakespeare_run)[-1]["val_loss"], 4)
    assert run("evaluate", ckpt, "--eval-iters", "5") == 0
    assert "over 5 batches" in capsys.readouterr().out


def test_evaluate_refuses_a_language_model_without_its_tokenizer(shakespeare_run, tmp_path, capsys):
    for name in ("ckpt.safetensors", "ckpt.safetensors.train.safetensors"):
        (tmp_path / name).write_bytes((shakespeare_run / name).read_bytes())
    capsys.readouterr()
    assert run("evaluate", tmp_path / "ckpt.safetensors") == 2
    assert "tokenizer.json" in capsys.readouterr().err


def test_evaluate_refuses_the_flags_of_the_other_kind_of_checkpoint(shakespeare_run, capsys):
    refused(capsys, "evaluate", shakespeare_run / "ckpt.safetensors", "--limit", "10",
            naming=["--limit", "language model"])


def _listing(folder):
    return sorted((p.name, p.stat().st_mtime_ns) for p in folder.iterdir())


def test_evaluate_writes_nothing_beside_the_checkpoint(shakespeare_run, tmp_path, monkeypatch, capsys):
    """Its token files go to $PARAGRAD_CACHE/tokens: the checkpoint's folder may be read-only."""
    monkeypatch.setenv("PARAGRAD_CACHE", str(tmp_path / "cache"))
    ckpt = copy_lm_checkpoint(shakespeare_run, tmp_path / "given")
    before = _listing(ckpt.parent)
    capsys.readouterr()
    assert run("evaluate", ckpt) == 0
    assert _val_loss(capsys.readouterr().out) == round(lm_records(shakespeare_run)[-1]["val_loss"], 4)
    assert _listing(ckpt.parent) == before
    assert [p.name for p in (tmp_path / "cache" / "tokens").iterdir()][0].startswith("input-")
    assert run("evaluate", ckpt) == 0           # the cache reused
    assert _listing(ckpt.parent) == before


def test_evaluate_with_a_full_disk_names_the_file_and_leaves_nothing(shakespeare_run, tmp_path,
                                                                      monkeypatch, capsys):
    monkeypatch.setenv("PARAGRAD_CACHE", str(tmp_path / "cache"))
    ckpt = copy_lm_checkpoint(shakespeare_run, tmp_path / "given")
    real = token_files.atomic_write

    def disk_full_at_train_bin(path, chunks):
        if Path(path).name == "train.bin":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, chunks)
    monkeypatch.setattr(token_files, "atomic_write", disk_full_at_train_bin)
    capsys.readouterr()
    assert run("evaluate", ckpt) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err, err
    assert re.search(rf"can't write the token cache file {tmp_path}/cache/tokens/input-\w+/train\.bin", err), err
    assert not (tmp_path / "cache").exists()
    assert _listing(ckpt.parent) == _listing(tmp_path / "given")


def test_evaluate_refuses_a_corpus_character_outside_the_vocabulary(shakespeare_run, tmp_path,
                                                                    monkeypatch, capsys):
    monkeypatch.setenv("PARAGRAD_CACHE", str(tmp_path / "cache"))
    ckpt = copy_lm_checkpoint(shakespeare_run, tmp_path / "other")
    tokenizer = ckpt.parent / "tokenizer.json"
    data = json.loads(tokenizer.read_text(encoding="utf-8"))
    data["chars"] = data["chars"].replace("z", "é")         # as many characters, one the corpus lacks
    tokenizer.write_text(json.dumps(data), encoding="utf-8")
    # (a checkpoint that records its tokenizer refuses another at once: see the test below; one
    # saved before it recorded it reaches the corpus)
    edit_train_state(ckpt, lambda state: state["extra"].pop("tokenizer_sha256"))
    corpus = shared_data_file("tinyshakespeare/input.txt")
    refused(capsys, "evaluate", ckpt, naming=[corpus, "line 1", "'z'", "vocabulary of 65 characters"])
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("command", [["evaluate"], ["generate", "--max-new-tokens", "5"],
                                     ["train", "shakespeare", "--max-iters", "60", "--resume"]])
def test_a_tokenizer_that_is_not_the_checkpoints_is_refused(shakespeare_run, tmp_path, capsys, command):
    """A permuted vocabulary has as many tokens and loads fine: only the fingerprint the
    checkpoint recorded tells it from the run's own (its val loss would be silently wrong)."""
    ckpt = copy_lm_checkpoint(shakespeare_run, tmp_path / "other")
    tokenizer = ckpt.parent / "tokenizer.json"
    data = json.loads(tokenizer.read_text(encoding="utf-8"))
    data["chars"] = data["chars"][::-1]
    tokenizer.write_text(json.dumps(data), encoding="utf-8")
    before = sorted(p.name for p in ckpt.parent.iterdir())
    refused(capsys, *command, ckpt, naming=[str(tokenizer), "not the tokenizer this checkpoint was trained with"])
    assert sorted(p.name for p in ckpt.parent.iterdir()) == before
