"""Running the command line in-process on small slices of the real MNIST."""
import contextlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

from paragrad.cli import main
from paragrad.io import checkpoint
from paragrad.io.safetensors import load_file, save_file
from tests.data_paths import mnist_root, shared_data_file


def run(*argv):
    """main's exit code (refusals by the parser leave through SystemExit)."""
    try:
        return main([str(a) for a in argv])
    except SystemExit as e:
        return e.code


def refused(capsys, *argv, naming=()):
    """Run argv, which must be refused: exit code 2 and one line `paragrad <command>: error: ...`
    naming each of `naming`. Returns that line."""
    capsys.readouterr()         # what ran before
    rc = run(*argv)
    err = capsys.readouterr().err
    assert rc == 2, (argv, rc, err)
    assert err.startswith(f"paragrad {argv[0]}: error: ") and err.count("\n") == 1, err
    for word in naming:
        assert str(word) in err, (word, err)
    return err


def train_mnist(out, *extra):
    """A 500-image MLP run (10 steps an epoch); `out` None leaves --out to its default."""
    where = [] if out is None else ["--out", out]
    return run("train", "mnist", "--data-dir", mnist_root(), *where, "--limit", "500", "--hidden", "32",
               "--batch-size", "50", *extra)


def train_state(ckpt):
    """The training state saved beside checkpoint `ckpt`, as a dict."""
    _, meta = load_file(checkpoint.train_state_path(ckpt))
    return json.loads(meta["paragrad_train_state"])


def copy_checkpoint(ckpt, folder):
    """A copy of checkpoint `ckpt` and its training state, as folder/c.safetensors."""
    dst = folder / "c.safetensors"
    dst.write_bytes(ckpt.read_bytes())
    Path(checkpoint.train_state_path(dst)).write_bytes(Path(checkpoint.train_state_path(ckpt)).read_bytes())
    return dst


def edit_train_state(ckpt, edit):
    """Rewrite the training state of checkpoint `ckpt` with edit(state) applied to it."""
    tpath = checkpoint.train_state_path(ckpt)
    arrays, meta = load_file(tpath)
    state = json.loads(meta["paragrad_train_state"])
    edit(state)
    save_file(arrays, tpath, {"paragrad_train_state": json.dumps(state)})


# a GPT small enough to train 50 iterations in about a second on the CPU
TINY_GPT = ("--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16",
            "--batch-size", "4", "--eval-interval", "10", "--eval-iters", "2", "--warmup-iters", "5")


def train_shakespeare(out, *extra):
    """A tiny character-level GPT run on the real Tiny Shakespeare."""
    where = [] if out is None else ["--out", out]
    data = shared_data_file("tinyshakespeare/input.txt").parent.parent
    return run("train", "shakespeare", "--data-dir", data, *where, *TINY_GPT, *extra)


def lm_records(folder):
    """The rows of a language-model run's metrics.jsonl."""
    return [json.loads(x) for x in (Path(folder) / "metrics.jsonl").read_text().splitlines()]


@contextlib.contextmanager
def run_lock_held(out):
    """Another process holding the run lock of folder `out`, as a run in progress does; yields
    its pid."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from paragrad.cli import "
         "out_folder; out_folder.lock(Path(sys.argv[1])); print('locked', flush=True); time.sleep(60)",
         str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()


def copy_lm_checkpoint(run_folder, folder):
    """A language-model run's ckpt.safetensors, its training state and tokenizer.json, copied
    into the new `folder` (no token files, to be damaged there); returns the checkpoint's path."""
    folder.mkdir()
    for name in ("ckpt.safetensors", "ckpt.safetensors.train.safetensors", "tokenizer.json"):
        shutil.copy(run_folder / name, folder / name)
    return folder / "ckpt.safetensors"
