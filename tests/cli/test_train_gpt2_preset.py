"""`--model gpt2` (GPT-2 124M, nanoGPT's config/train_gpt2.py) and `paragrad train random-tokens`:
the preset's values for every flag left out (resolved without building the 124M model), explicit
flags winning, the step kept on several ranks, the vocabulary padded to 50304, the preset kept on
--resume, random ids said plainly and trained on tiny, and what is refused."""
import contextlib
import io
import math

import pytest

from paragrad.cli import build_parser
from paragrad.cli.arguments import UsageError
from paragrad.cli.lm_config import MODEL_FLAGS, gpt_config, resolve_lm
from paragrad.text import load_tokenizer
from tests.cli.helpers import copy_checkpoint, edit_train_state, lm_records, refused, run, train_state
from tests.data_paths import shared_data_file

# nanoGPT's config/train_gpt2.py, in paragrad's flags (grad_accum: its 5 * 8, on one rank)
TRAIN_GPT2 = {"n_layer": 12, "n_head": 12, "n_embd": 768, "block_size": 1024, "bias": False, "dropout": 0.0,
              "batch_size": 12, "lr": 6e-4, "min_lr": 6e-5, "warmup_iters": 2000, "max_iters": 600000,
              "lr_decay_iters": 600000, "weight_decay": 0.1, "beta1": 0.9, "beta2": 0.95, "grad_clip": 1.0,
              "eval_interval": 1000, "eval_iters": 200, "grad_accum": 40}
# the preset cut to a model that trains in a second on the CPU, over 64 random ids (its cosine
# planned for 6 iterations, so that a 3-iteration run resumed to 6 repeats an uninterrupted one)
TINY = ("--model", "gpt2", "--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "16",
        "--batch-size", "2", "--eval-iters", "1", "--eval-interval", "3", "--vocab-size", "64",
        "--grad-accum", "1", "--warmup-iters", "0", "--lr", "1e-2", "--lr-decay-iters", "6")


def resolved(*argv, world=1):
    """The flags of `paragrad train *argv` as resolve_lm fills them (nothing is built)."""
    args = build_parser()[0].parse_args(["train", *map(str, argv)])
    resolve_lm(args, world)
    return args


def test_the_preset_is_nanogpts_train_gpt2_config():
    args = resolved("random-tokens", "--model", "gpt2")
    assert {name: getattr(args, name) for name in TRAIN_GPT2} == TRAIN_GPT2
    assert args.vocab_size == 50304 and args.precision == "fp32"       # (the device's: fp32 on the cpu)
    assert gpt_config(args, args.vocab_size) == {"model": "gpt", "dataset": "random-tokens", "vocab_size": 50304,
                                                 **{name: TRAIN_GPT2[name] for name in MODEL_FLAGS}}


def test_explicit_flags_override_the_preset():
    args = resolved("shakespeare", "--model", "gpt2", "--n-layer", "2", "--lr", "1e-3", "--dropout", "0.1",
                    "--max-iters", "100", "--grad-accum", "1", "--batch-size", "8")
    assert (args.n_layer, args.lr, args.dropout, args.grad_accum, args.batch_size) == (2, 1e-3, 0.1, 1, 8)
    assert args.max_iters == args.lr_decay_iters == 100      # the cosine follows --max-iters
    assert (args.n_head, args.n_embd, args.min_lr, args.beta2, args.eval_interval) == (12, 768, 6e-5, 0.95, 1000)


def test_without_the_preset_the_defaults_are_nanogpts_shakespeare_char():
    args = resolved("shakespeare")
    assert args.model is None
    assert (args.n_layer, args.n_embd, args.block_size, args.batch_size, args.lr, args.beta2, args.grad_accum) == \
        (4, 128, 64, 12, 1e-3, 0.99, 1)


def test_the_model_vocabulary_is_padded_to_50304_and_fits_any_tokenizer():
    args = resolved("tinystories", "--model", "gpt2")
    assert args.vocab_size == 4096                                  # the corpus's BPE, as without the preset
    assert gpt_config(args, 4096)["vocab_size"] == 50304            # the embedding GPT-2's
    assert gpt_config(args, 60000)["vocab_size"] == 60000           # a larger tokenizer's ids still fit
    assert gpt_config(resolved("tinystories"), 4096)["vocab_size"] == 4096
    assert resolved("random-tokens").vocab_size == 50304            # random ids: GPT-2's vocabulary either way


def test_on_several_ranks_each_keeps_nanogpts_micro_batch_and_the_step_its_480_windows():
    """nanoGPT divides gradient_accumulation_steps by the world size; paragrad's --batch-size is
    the global batch, so it grows with the ranks: 12 windows a rank, 480 a step."""
    args = resolved("random-tokens", "--model", "gpt2", world=8)
    assert (args.batch_size, args.grad_accum) == (96, 5)
    assert args.batch_size * args.grad_accum == 12 * 40
    with pytest.raises(UsageError, match="--model gpt2 on 3 ranks.*--grad-accum"):
        resolved("random-tokens", "--model", "gpt2", world=3)
    args = resolved("random-tokens", "--model", "gpt2", "--grad-accum", "4", world=3)
    assert (args.batch_size, args.grad_accum) == (36, 4)


@pytest.fixture(scope="module")
def random_run(tmp_path_factory):
    """(folder, stdout) of a finished 3-iteration run of the tiny preset on random tokens."""
    out, printed = tmp_path_factory.mktemp("random-tokens") / "run", io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert run("train", "random-tokens", *TINY, "--max-iters", "3", "--out", out) == 0
    return out, printed.getvalue()


def test_random_tokens_are_said_plainly_and_train_into_a_checkpoint(random_run):
    out, printed = random_run
    first = printed.splitlines()[0]
    assert first.startswith("random tokens: 10,000,000 train and 1,000,000 val ids drawn uniformly from [0, 64)")
    assert "no tokenizer" in first and "measures speed only" in first
    assert f"cannot go below ln 64 = {math.log(64):.4f}" in first
    assert "vocabulary 50304, the tokenizer's 64 padded" in printed
    records = lm_records(out)
    assert [r["iter"] for r in records] == [0, 3]
    assert records[-1]["train_loss"] < records[0]["train_loss"]         # (from ln 50304 down toward ln 64)
    written = {p.name for p in out.iterdir()} - {".paragrad.lock"}
    assert written == {"ckpt.safetensors", "ckpt.safetensors.train.safetensors", "best.safetensors",
                       "best.safetensors.train.safetensors", "metrics.jsonl", "curves.png"}     # no tokenizer.json
    state = train_state(out / "ckpt.safetensors")
    assert state["step"] == 3 and state["extra"]["tokenizer_sha256"] is None
    assert state["extra"]["config"]["vocab_size"] == 50304
    assert (state["extra"]["run"]["preset"], state["extra"]["run"]["vocab_size"]) == ("gpt2", 64)


def test_resume_keeps_the_preset_and_continues_as_one_run(random_run, tmp_path, capsys):
    out, _ = random_run
    assert resolved("random-tokens", "--resume", out / "ckpt.safetensors").model == "gpt2"
    capsys.readouterr()
    assert run("train", "random-tokens", "--resume", out / "ckpt.safetensors", "--max-iters", "6",
               "--out", tmp_path / "more") == 0
    printed = capsys.readouterr().out
    assert printed.startswith("random tokens: ") and "resumed from" in printed and "at iteration 3" in printed
    resumed = lm_records(tmp_path / "more")
    assert [r["iter"] for r in resumed] == [0, 3, 6] and resumed[:2] == lm_records(out)
    assert train_state(tmp_path / "more" / "ckpt.safetensors")["extra"]["run"]["preset"] == "gpt2"
    # the same ids (drawn again from the seed), windows and optimizer state as an uninterrupted run
    assert run("train", "random-tokens", *TINY, "--max-iters", "6", "--out", tmp_path / "straight") == 0
    assert resumed[-1]["val_loss"] == pytest.approx(lm_records(tmp_path / "straight")[-1]["val_loss"], rel=1e-5)
    refused(capsys, "train", "random-tokens", "--resume", out / "ckpt.safetensors", "--n-layer", "2",
            "--out", tmp_path / "x", naming=["--n-layer 2", "--n-layer 1"])


def test_a_run_recorded_before_the_preset_reads_as_none_and_refuses_it(random_run, tmp_path, capsys):
    out, _ = random_run
    old = copy_checkpoint(out / "ckpt.safetensors", tmp_path)
    edit_train_state(old, lambda state: state["extra"]["run"].pop("preset"))
    args = resolved("random-tokens", "--resume", old)
    assert args.model is None and args.n_layer == 1 and args.lr == 1e-2     # its own flags, no preset's
    refused(capsys, "train", "random-tokens", "--resume", old, "--model", "gpt2", "--out", tmp_path / "x",
            naming=["--model gpt2 differs", str(old), "without --model (no preset)"])
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("command", ["generate", "evaluate"])
def test_a_random_tokens_checkpoint_has_no_text_to_generate_or_evaluate(random_run, command, capsys):
    ckpt = random_run[0] / "ckpt.safetensors"
    refused(capsys, command, ckpt, naming=[str(ckpt), "random tokens", "no tokenizer"])


@pytest.mark.parametrize("argv, naming", [
    (["mnist", "--model", "gpt2"], ["--model gpt2", "mnist", "language models' preset"]),
    (["cifar10", "--model", "gpt2"], ["--model gpt2", "cifar10"]),
    (["shakespeare", "--model", "mlp"], ["--model mlp", "image model", "shakespeare", "--model gpt2"]),
    (["random-tokens", "--model", "resnet18"], ["--model resnet18", "random-tokens"]),
    (["random-tokens", "--data-dir", "."], ["--data-dir", "random-tokens", "--seed"]),
    (["random-tokens", "--epochs", "2"], ["--epochs", "random-tokens"]),
])
def test_models_and_flags_of_the_other_kind_are_refused(argv, naming, tmp_path, capsys):
    refused(capsys, "train", *argv, "--out", tmp_path / "out", naming=naming)
    assert not (tmp_path / "out").exists()


def test_tinystories_with_the_preset_trains_its_bpe_and_samples_only_its_ids(tmp_path, capsys):
    data = shared_data_file("tinystories/tinystories_val_head.txt").parent.parent
    out = tmp_path / "run"
    assert run("train", "tinystories", "--data-dir", data, "--out", out, "--model", "gpt2", "--vocab-size", "300",
               "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "4",
               "--max-iters", "2", "--eval-interval", "2", "--eval-iters", "1", "--grad-accum", "1") == 0
    assert "vocabulary 50304, the tokenizer's 300 padded" in capsys.readouterr().out
    assert load_tokenizer(out / "tokenizer.json").vocab_size == 300
    assert train_state(out / "ckpt.safetensors")["extra"]["config"]["vocab_size"] == 50304
    # nearly uniform over the model's 50304 rows: only the tokenizer's 300 ids may come out
    assert run("generate", out / "ckpt.safetensors", "--max-new-tokens", "40", "--temperature", "5",
               "--top-k", "50304", "--seed", "1") == 0
    assert len(capsys.readouterr().out) > 20
    # evaluate keeps the padded rows: the val loss the run printed, over the model's 50304 logits
    assert run("evaluate", out / "ckpt.safetensors") == 0
    assert f"val loss {lm_records(out)[-1]['val_loss']:.4f}" in capsys.readouterr().out
