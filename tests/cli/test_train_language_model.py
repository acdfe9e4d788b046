"""`paragrad train shakespeare`: a tiny GPT learns, writes its records, checkpoint and tokenizer,
resumes where it stopped, and bad flags are refused before anything is written."""
import math

import numpy as np
import pytest

from paragrad.io.checkpoint import load_weights

from paragrad.text import load_tokenizer
from tests.cli.helpers import lm_records, refused, train_shakespeare, train_state
from tests.data_paths import shared_data_file


def test_training_lowers_the_loss_and_writes_its_files(shakespeare_run, capsys):
    records = lm_records(shakespeare_run)
    assert [r["iter"] for r in records] == [0, 10, 20, 30, 40, 50]
    assert set(records[0]) == {"iter", "train_loss", "val_loss", "lr", "seconds"}
    assert records[-1]["val_loss"] < records[0]["val_loss"] - 0.05, records
    assert records[-1]["train_loss"] < records[0]["train_loss"] - 0.05, records
    assert (shakespeare_run / "curves.png").stat().st_size > 1000
    assert train_state(shakespeare_run / "ckpt.safetensors")["step"] == 50
    best = min(records, key=lambda r: r["val_loss"])        # kept apart, as nanoGPT keeps its best
    assert train_state(shakespeare_run / "best.safetensors")["step"] == best["iter"]
    assert load_tokenizer(shakespeare_run / "tokenizer.json").vocab_size == 65


def test_the_learning_rate_warms_up_then_follows_the_cosine(shakespeare_run):
    lrs = {r["iter"]: r["lr"] for r in lm_records(shakespeare_run)}
    assert lrs[0] == pytest.approx(1e-3 / 6)                 # warm-up: (0 + 1) / (5 + 1)
    # then from 1e-3 down to 1e-4 over iterations 5..70 (--lr-decay-iters 70)
    assert lrs[40] == pytest.approx(1e-4 + 0.5 * (1 + math.cos(math.pi * 35 / 65)) * 9e-4)


def test_resume_continues_the_run_where_it_stopped(shakespeare_run, tmp_path, capsys):
    straight = tmp_path / "straight"
    assert train_shakespeare(straight, "--max-iters", "70") == 0
    capsys.readouterr()
    more = tmp_path / "more"
    assert train_shakespeare(more, "--resume", shakespeare_run / "ckpt.safetensors",
                             "--max-iters", "70") == 0
    out = capsys.readouterr().out
    assert "resumed from" in out and "at iteration 50" in out
    # iterations 1-50 are not trained again: only 60 and 70 are evaluated
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("iter ")] == ["iter 60", "iter 70"]
    resumed = lm_records(more)
    assert [r["iter"] for r in resumed] == [0, 10, 20, 30, 40, 50, 60, 70]
    assert resumed[:6] == lm_records(shakespeare_run)
    # the same windows, schedule and optimizer state as the uninterrupted run
    assert resumed[-1]["val_loss"] == pytest.approx(lm_records(straight)[-1]["val_loss"], rel=1e-5)


def test_resume_refuses_a_flag_that_contradicts_the_run(shakespeare_run, tmp_path, capsys):
    refused(capsys, "train", "shakespeare", "--resume", shakespeare_run / "ckpt.safetensors",
            "--n-embd", "32", "--out", tmp_path / "x", naming=["--n-embd 32", "--n-embd 16"])
    assert not (tmp_path / "x").exists()
    # a switch reads on / off
    refused(capsys, "train", "shakespeare", "--resume", shakespeare_run / "ckpt.safetensors",
            "--bias", "--out", tmp_path / "x", naming=["--bias on differs", "--bias off"])


def test_an_out_folder_holding_another_run_is_refused(shakespeare_run, capsys):
    refused(capsys, "train", "shakespeare", "--out", shakespeare_run,
            naming=["already holds another run", "--overwrite"])


@pytest.mark.parametrize("argv, naming", [
    (["shakespeare", "--n-head", "0"], ["--n-head", "positive"]),
    (["shakespeare", "--dropout", "1"], ["--dropout", "[0, 1)"]),
    (["shakespeare", "--beta2", "1.5"], ["--beta2"]),
    (["shakespeare", "--warmup-iters", "-1"], ["--warmup-iters"]),
    (["shakespeare", "--lr", "0"], ["--lr"]),
    (["shakespeare", "--n-embd", "30", "--n-head", "4"], ["--n-embd 30", "--n-head 4"]),
    (["shakespeare", "--min-lr", "0.1"], ["--min-lr"]),
    (["shakespeare", "--epochs", "2"], ["--epochs", "mnist"]),
    (["shakespeare", "--vocab-size", "100"], ["--vocab-size", "tinystories"]),
    (["mnist", "--n-layer", "2"], ["--n-layer", "shakespeare"]),
])
def test_bad_flags_are_refused_before_anything_is_written(argv, naming, tmp_path, capsys):
    refused(capsys, "train", *argv, "--out", tmp_path / "out", naming=naming)
    assert not (tmp_path / "out").exists()


def test_a_block_size_longer_than_a_split_is_refused_and_leaves_nothing(tmp_path, capsys):
    """Shakespeare's val split is 111,540 characters: a window of 200,000 can't be drawn. Known
    only after tokenizing, so the refusal removes the out folder that tokenizing wrote."""
    data = shared_data_file("tinyshakespeare/input.txt").parent.parent      # as the README's --data-dir
    refused(capsys, "train", "shakespeare", "--data-dir", data, "--block-size", "200000", "--n-layer", "1",
            "--n-head", "1", "--n-embd", "8", "--out", tmp_path / "runs" / "out",
            naming=["--block-size 200000", "111,540"])
    assert not (tmp_path / "runs").exists()


def test_resuming_a_finished_run_trains_nothing(shakespeare_run, capsys):
    before = sorted((p.name, p.stat().st_mtime_ns) for p in shakespeare_run.iterdir())
    capsys.readouterr()
    assert train_shakespeare(None, "--resume", shakespeare_run / "ckpt.safetensors") == 0
    assert "nothing left to train" in capsys.readouterr().out
    assert sorted((p.name, p.stat().st_mtime_ns) for p in shakespeare_run.iterdir()) == before


def test_resume_without_the_tokenizer_is_refused(shakespeare_run, tmp_path, capsys):
    for name in ("ckpt.safetensors", "ckpt.safetensors.train.safetensors"):
        (tmp_path / name).write_bytes((shakespeare_run / name).read_bytes())
    refused(capsys, "train", "shakespeare", "--resume", tmp_path / "ckpt.safetensors", "--max-iters", "60",
            naming=["tokenizer.json", "missing"])


def test_resuming_with_more_iterations_stretches_the_cosine(tmp_path):
    """--lr-decay-iters left out follows --max-iters: a resume to a larger total decays over the
    new total (as the image runs stretch theirs), instead of sitting at --min-lr."""
    out = tmp_path / "run"
    assert train_shakespeare(out, "--max-iters", "20") == 0
    assert train_shakespeare(None, "--resume", out / "ckpt.safetensors", "--max-iters", "40") == 0
    lrs = {r["iter"]: r["lr"] for r in lm_records(out)}
    assert lrs[30] == pytest.approx(1e-4 + 0.5 * (1 + math.cos(math.pi * 25 / 35)) * 9e-4)
    assert lrs[30] > 1e-4 and lrs[40] == pytest.approx(1e-4)


def test_gradient_accumulation_steps_as_one_batch_of_all_its_micro_batches(tmp_path, capsys):
    """--batch-size 4 --grad-accum 2 draws the same 8 windows a step as --batch-size 8 (one
    generator, drawn in turn) and averages their gradients: the same run, to rounding."""
    whole, accumulated = tmp_path / "whole", tmp_path / "accumulated"
    bars = []
    for out, flags in ((whole, ("--batch-size", "8")), (accumulated, ("--grad-accum", "2"))):
        assert train_shakespeare(out, "--max-iters", "20", *flags) == 0
        bars.append(capsys.readouterr().err.splitlines()[-1])
    # the step's loss is the mean over its micro-batches: the whole batch's
    assert bars[0].split(" loss ")[1].split()[0] == bars[1].split(" loss ")[1].split()[0], bars
    # (the evaluations draw --batch-size windows, 8 and 4: their losses differ; the weights don't)
    (ones, _), (twos, _) = load_weights(whole / "ckpt.safetensors"), load_weights(accumulated / "ckpt.safetensors")
    assert ones.keys() == twos.keys()
    for name in ones:
        np.testing.assert_allclose(twos[name].numpy(), ones[name].numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
    two = lm_records(accumulated)
    assert [r["iter"] for r in two] == [0, 10, 20] and two[-1]["val_loss"] < two[0]["val_loss"]
    assert train_state(accumulated / "ckpt.safetensors")["extra"]["run"]["grad_accum"] == 2
    capsys.readouterr()
    refused(capsys, "train", "shakespeare", "--resume", accumulated / "ckpt.safetensors", "--grad-accum", "4",
            "--max-iters", "30", naming=["--grad-accum 4", "--grad-accum 2"])
    refused(capsys, "train", "mnist", "--grad-accum", "2", naming=["--grad-accum is for language models"])
