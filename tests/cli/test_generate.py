"""`paragrad generate CKPT`: text from a trained checkpoint in a fresh process, of the length asked,
in the run's vocabulary, the same for the same seed; missing files and foreign prompts refused."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from paragrad.text import load_tokenizer
from tests.cli.helpers import refused, train_mnist

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
