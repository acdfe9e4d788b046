"""`paragrad generate CKPT`: text from a trained checkpoint in a fresh process, of the length asked,
in the run's vocabulary, the same for the same seed, exactly the decoding of the sampled ids, at a
cost linear in their number; missing or damaged files and foreign prompts refused in one line."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from paragrad.cli import generate as generate_command
from paragrad.models.gpt import GPT
from paragrad.text import load_tokenizer
from tests.cli.helpers import TINY_GPT, copy_lm_checkpoint, refused, run, train_mnist
from tests.data_paths import shared_data_file

REPO = Path(__file__).resolve().parents[2]


def _command(ckpt, *args):
    return [sys.executable, "-m", "paragrad", "generate", str(ckpt), *map(str, args)]


ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def generate(ckpt, *args):
    """stdout of `python -m paragrad generate` in a fresh process (its exit code checked)."""
    done = subprocess.run(_command(ckpt, *args), capture_output=True, text=True, env=ENV, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("\n")
    return done.stdout[:-1]


def test_generate_streams_seeded_text_of_the_vocabulary(shakespeare_run):
    ckpt = shakespeare_run / "ckpt.safetensors"
    chars = set(load_tokenizer(shakespeare_run / "tokenizer.json").chars)
    text = generate(ckpt, "--max-new-tokens", 60, "--seed", 7)
    assert len(text) == 60 and set(text) <= chars, repr(text)
    assert generate(ckpt, "--max-new-tokens", 60, "--seed", 7) == text
    assert generate(ckpt, "--max-new-tokens", 60, "--seed", 8) != text
    prompted = generate(ckpt, "--prompt", "ROMEO:", "--max-new-tokens", 25, "--top-k", 5, "--seed", 7)
    assert prompted.startswith("ROMEO:") and len(prompted) == len("ROMEO:") + 25


def test_generate_refuses_what_it_cannot_use(shakespeare_run, tmp_path, capsys):
    ckpt = shakespeare_run / "ckpt.safetensors"
    refused(capsys, "generate", tmp_path / "none.safetensors", naming=["none.safetensors", "no such"])
    alone = tmp_path / "alone"
    alone.mkdir()
    for name in ("ckpt.safetensors", "ckpt.safetensors.train.safetensors"):
        shutil.copy(shakespeare_run / name, alone / name)
    refused(capsys, "generate", alone / "ckpt.safetensors", naming=["tokenizer.json", "missing"])
    refused(capsys, "generate", ckpt, "--prompt", "naïve", naming=["--prompt", "'ï'"])
    refused(capsys, "generate", ckpt, "--temperature", "-1", naming=["--temperature"])
    refused(capsys, "generate", ckpt, "--top-k", "0", naming=["--top-k"])
    refused(capsys, "generate", ckpt, "--top-p", "1.5", naming=["--top-p", "(0, 1]"])


def test_a_reader_that_leaves_early_ends_generation_quietly(shakespeare_run):
    """`paragrad generate ... | head -c 5`: exit code 0 and nothing on stderr."""
    proc = subprocess.Popen(_command(shakespeare_run / "ckpt.safetensors", "--max-new-tokens", 2000),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    assert len(proc.stdout.read(5)) == 5
    proc.stdout.close()
    assert proc.wait(timeout=120) == 0
    assert proc.stderr.read() == b""


def test_generate_refuses_an_image_checkpoint(tmp_path, capsys):
    assert train_mnist(tmp_path, "--epochs", "1") == 0
    refused(capsys, "generate", tmp_path / "epoch1.safetensors", naming=["epoch1.safetensors",
                                                                          "not a language model"])


@pytest.fixture(scope="module")
def bpe_run(tmp_path_factory):
    """A 1-iteration TinyStories run on a 300-token BPE of the corpus's first 30,000 characters:
    an untrained model, whose samples split UTF-8 characters across tokens often."""
    root = tmp_path_factory.mktemp("bpe")
    (root / "data" / "tinystories").mkdir(parents=True)
    text = shared_data_file("tinystories/tinystories_val_head.txt").read_text(encoding="utf-8")
    (root / "data" / "tinystories" / "tinystories_val_head.txt").write_text(text[:30_000], encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PARAGRAD_CACHE", str(root / "cache"))
        assert run("train", "tinystories", "--data-dir", root / "data", "--out", root / "run",
                   "--vocab-size", "300", *TINY_GPT, "--max-iters", "1") == 0
    return root / "run"


def test_streamed_text_is_the_decoding_of_the_sampled_ids(bpe_run, monkeypatch, capsys):
    sampled, real = [], GPT.generate_tokens

    def recording(self, *args, **kwargs):
        for token in real(self, *args, **kwargs):
            sampled.append(int(token[0, 0]))
            yield token
    monkeypatch.setattr(GPT, "generate_tokens", recording)
    capsys.readouterr()
    assert run("generate", bpe_run / "ckpt.safetensors", "--max-new-tokens", 400, "--temperature", 1,
               "--top-k", 300, "--prompt", "日本") == 0
    tokenizer = load_tokenizer(bpe_run / "tokenizer.json")
    assert len(sampled) == 400
    assert capsys.readouterr().out == "日本" + tokenizer.decode(sampled) + "\n"
    table = tokenizer.token_bytes()      # (the test means something: characters were split)
    assert any(b"".join(table[i] for i in sampled[:k]).decode("utf-8", "replace").endswith("\ufffd")
               and not tokenizer.decode(sampled).startswith(tokenizer.decode(sampled[:k]))
               for k in range(1, 400))


class _ReplayModel:
    """Stands in for the GPT: yields the ids it was given, at no cost of its own."""

    def __init__(self, ids):
        self.ids = ids

    def generate_tokens(self, idx, max_new_tokens, *args):
        for i in self.ids[:max_new_tokens]:
            yield np.array([[i]])


def test_generation_costs_linear_in_max_new_tokens(bpe_run, monkeypatch, capsys):
    """8,000 tokens took 8.9 s and 32,000 took 66 s: each token decoded the whole continuation."""
    tokenizer = load_tokenizer(bpe_run / "tokenizer.json")
    decoded, decode = [], tokenizer.decode
    monkeypatch.setattr(tokenizer, "decode", lambda ids: decoded.append(len(ids)) or decode(ids))
    ids = [i % tokenizer.vocab_size for i in range(32_000)]
    monkeypatch.setattr(generate_command, "load_language_model",
                        lambda path, device: (_ReplayModel(ids), tokenizer, None))

    def seconds(n):
        capsys.readouterr()
        start = time.perf_counter()
        assert run("generate", "replayed.safetensors", "--max-new-tokens", n) == 0
        took = time.perf_counter() - start
        assert capsys.readouterr().out == decode(ids[:n]) + "\n"     # (no prompt given)
        return took
    small = seconds(4_000)
    assert sum(decoded) <= 4_000, sum(decoded)      # no id decoded more than once
    assert seconds(32_000) < 32 * max(small, 1e-3)  # linear: 8x the time; quadratic: 64x


def test_damaged_tokenizers_are_refused_naming_the_file(shakespeare_run, bpe_run, tmp_path, capfd):
    ckpt = copy_lm_checkpoint(shakespeare_run, tmp_path / "cut")
    tokenizer = ckpt.parent / "tokenizer.json"
    tokenizer.write_bytes(tokenizer.read_bytes()[:30])
    refused(capfd, "generate", ckpt, naming=[tokenizer, "not valid JSON"])
    ckpt = copy_lm_checkpoint(bpe_run, tmp_path / "panics")
    tokenizer = ckpt.parent / "tokenizer.json"
    data = json.loads(tokenizer.read_text(encoding="utf-8"))
    data["normalizer"] = {"type": "Replace", "pattern": {"Regex": "\\G"}, "content": "x"}
    tokenizer.write_text(json.dumps(data), encoding="utf-8")
    # (capfd: the library's own panic report would go straight to file descriptor 2)
    refused(capfd, "generate", ckpt, naming=[tokenizer, "panicked"])


def test_a_prompt_that_is_not_utf8_is_refused(shakespeare_run, bpe_run, capsys):
    # `--prompt $'\xff'`: Python passes the byte that isn't UTF-8 on as the surrogate U+DCFF
    for folder in (bpe_run, shakespeare_run):
        refused(capsys, "generate", folder / "ckpt.safetensors", "--prompt", "ok\udcff",
                naming=["--prompt", "byte 0xff at position 2 is not valid UTF-8"])
