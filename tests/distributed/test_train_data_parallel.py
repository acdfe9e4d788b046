"""`paragrad train` under the MPI launcher: data parallel with DistributedDataParallel,
--sync-every (LocalSGD) and --diloco (DiLoCo) on two ranks; rank 0 alone writes the run's
files; --resume continues on every rank; a global batch the ranks can't share is refused.
Needs mpirun (fails without it, never skips)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.cli.helpers import TINY_GPT, refused, train_mnist, train_state
from tests.data_paths import mnist_root, shared_data_file
from tests.distributed.launch_ranks import REPO, WORKERS, run_ranks

MNIST = ("mnist", "--data-dir", None, "--limit", "500", "--hidden", "32", "--batch-size", "50",
         "--test-limit", "500")
RUN_FILES = {"epoch1.safetensors", "epoch1.safetensors.train.safetensors", "metrics.jsonl"}


def mnist_flags(out, *extra):
    flags = list(MNIST)
    flags[2] = mnist_root()
    return [*flags, "--out", out, *extra]


def train_on(nproc, *argv):
    ranks = run_ranks(nproc, "train_worker.py", "train", *argv, limit=90)
    assert ranks.returncode == 0, ranks
    return ranks


def records(folder):
    return [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]


def without_time(rows):
    return [{k: v for k, v in r.items() if "second" not in k} for r in rows]


def written(folder):
    # (matplotlib may be absent; the run folder's lock file stays: paragrad/cli/out_folder.py)
    return {p.name for p in folder.iterdir()} - {"curves.png", ".paragrad.lock"}


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp") / "run"
    ranks = train_on(2, *mnist_flags(out, "--epochs", "1"))
    return out, ranks


def test_ddp_on_two_ranks_trains_as_one_process_on_the_global_batch(ddp_run, tmp_path):
    out, ranks = ddp_run
    assert "2 rank(s) of batch 25, DistributedDataParallel" in ranks.stdout, ranks
    # rank 0 alone reports and writes (a second writer would print twice or clash)
    assert ranks.stdout.count("epoch 1: train loss") == 1, ranks
    assert written(out) == RUN_FILES
    # DistributedSampler's first epoch visits the permutation a single process's loader draws:
    # each global batch holds the same samples, so the averaged gradients match
    single = tmp_path / "single"
    assert train_mnist(single, "--epochs", "1", "--test-limit", "500") == 0
    (mine,), (theirs,) = records(out), records(single)
    assert mine["train_loss"] == pytest.approx(theirs["train_loss"], rel=1e-5)
    assert mine["test_accuracy"] == theirs["test_accuracy"]
    run = train_state(out / "epoch1.safetensors")["extra"]["run"]
    assert (run["world_size"], run["sync_every"], run["diloco"]) == (2, None, False)


def test_ddp_resume_on_two_ranks_continues_the_run(ddp_run):
    out, _ = ddp_run
    ranks = train_on(2, "mnist", "--resume", out / "epoch1.safetensors", "--epochs", "2")
    assert "resumed from" in ranks.stdout, ranks
    rows = records(out)
    assert [r["epoch"] for r in rows] == [1, 2] and rows[1]["train_loss"] < rows[0]["train_loss"]


def test_resume_on_another_world_size_or_scheme_is_refused(ddp_run, capsys):
    out, _ = ddp_run
    refused(capsys, "train", "mnist", "--resume", out / "epoch1.safetensors", "--epochs", "3",
            naming=["trained on 2 process(es)", "this is 1", "-n 2"])


@pytest.mark.parametrize("scheme", [["--sync-every", "3"], ["--diloco", "--sync-every", "4"]],
                         ids=["local_sgd", "diloco"])
def test_local_sgd_and_diloco_on_two_ranks_train_and_resume(scheme, tmp_path):
    out = tmp_path / "run"
    name = "DiLoCo every 4 steps" if "--diloco" in scheme else "LocalSGD every 3 steps"
    ranks = train_on(2, *mnist_flags(out, "--epochs", "1", *scheme))
    assert name in ranks.stdout and written(out) == RUN_FILES, ranks
    state = train_state(out / "epoch1.safetensors")
    run = state["extra"]["run"]
    assert (run["world_size"], run["sync_every"], run["diloco"]) == (2, int(scheme[-1]), "--diloco" in scheme)
    assert state["extra"]["scheme_step_count"] == 10     # 250 samples a rank in batches of 25
    if "--diloco" in scheme:    # the outer optimizer's state rides with the inner one's
        assert [g["lr"] for g in state["optimizer"]["param_groups"]][1:] == [0.7]
    # the scheme comes from the checkpoint; the run continues on both ranks
    train_on(2, "mnist", "--resume", out / "epoch1.safetensors", "--epochs", "2")
    rows = records(out)
    assert [r["epoch"] for r in rows] == [1, 2] and rows[1]["train_loss"] < rows[0]["train_loss"]
    assert rows[1]["test_accuracy"] > 0.3      # (chance: 0.1)


def test_a_language_model_trains_on_two_ranks(tmp_path):
    out = tmp_path / "lm"
    data = shared_data_file("tinyshakespeare/input.txt").parent.parent
    ranks = train_on(2, "shakespeare", "--data-dir", data, "--out", out, *TINY_GPT, "--max-iters", "20")
    assert "2 rank(s) of batch 2, DistributedDataParallel" in ranks.stdout, ranks
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in rows] == [0, 10, 20] and rows[-1]["val_loss"] < rows[0]["val_loss"]
    assert ranks.stdout.count("iter 20:") == 1
    assert {"ckpt.safetensors", "best.safetensors", "tokenizer.json"} <= {p.name for p in out.iterdir()}


def test_gradient_accumulation_on_two_ranks_trains(tmp_path):
    """--grad-accum 2 under DistributedDataParallel: the first micro-batch's backward inside
    no_sync (no all-reduce), the second's averages the accumulated gradients."""
    out = tmp_path / "lm"
    data = shared_data_file("tinyshakespeare/input.txt").parent.parent
    ranks = train_on(2, "shakespeare", "--data-dir", data, "--out", out, *TINY_GPT, "--max-iters", "20",
                     "--grad-accum", "2")
    assert "2 micro-batches a step, 2 rank(s) of batch 2, DistributedDataParallel" in ranks.stdout, ranks
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["iter"] for r in rows] == [0, 10, 20] and rows[-1]["val_loss"] < rows[0]["val_loss"]


def test_zero_shards_the_optimizer_state_and_trains_and_resumes_as_without_it(tmp_path, capsys):
    """--zero: ZeroRedundancyOptimizer over the two ranks gives the unsharded AdamW's weights; its
    checkpoints hold the whole optimizer state (gathered on rank 0), and a resume shards it again."""
    data = shared_data_file("tinyshakespeare/input.txt").parent.parent
    flags = ("shakespeare", "--data-dir", data, *TINY_GPT)
    plain, zero = tmp_path / "plain", tmp_path / "zero"
    train_on(2, *flags, "--out", plain, "--max-iters", "20")
    ranks = train_on(2, *flags, "--out", zero, "--max-iters", "20", "--zero")
    assert "DistributedDataParallel, ZeRO-1 optimizer state" in ranks.stdout, ranks
    _same_weights(plain, zero)
    saved = train_state(zero / "ckpt.safetensors")
    assert saved["step"] == 20
    train_on(2, *flags, "--out", plain, "--resume", plain / "ckpt.safetensors", "--max-iters", "30")
    train_on(2, *flags, "--out", zero, "--resume", zero / "ckpt.safetensors", "--max-iters", "30", "--zero")
    _same_weights(plain, zero)
    # with --grad-accum: no_sync on the first micro-batch, then the sharded step
    train_on(2, *flags, "--out", tmp_path / "plain2", "--max-iters", "10", "--grad-accum", "2")
    train_on(2, *flags, "--out", tmp_path / "zero2", "--max-iters", "10", "--grad-accum", "2", "--zero")
    _same_weights(tmp_path / "plain2", tmp_path / "zero2")
    refused(capsys, "train", *flags, "--zero", "--out", tmp_path / "x", naming=["--zero", "launch several ranks"])


def test_zero_on_an_image_run_trains_as_without_it(ddp_run, tmp_path):
    out, _ = ddp_run
    ranks = train_on(2, *mnist_flags(tmp_path / "zero", "--epochs", "1", "--zero"))
    assert "ZeRO-1 optimizer state" in ranks.stdout, ranks
    # (its first epoch: another test may have resumed the fixture's run for a second)
    assert without_time(records(tmp_path / "zero")) == without_time(records(out)[:1])


def _same_weights(a, b):
    from paragrad.io.checkpoint import load_weights
    (wa, _), (wb, _) = load_weights(a / "ckpt.safetensors"), load_weights(b / "ckpt.safetensors")
    assert wa.keys() == wb.keys()
    for name in wa:
        assert wa[name].numpy().tobytes() == wb[name].numpy().tobytes(), name


def test_a_batch_the_ranks_cannot_share_is_refused(tmp_path):
    ranks = run_ranks(2, "train_worker.py", "train", *mnist_flags(tmp_path / "o", "--batch-size", "51"),
                      limit=60)
    assert ranks.returncode != 0
    assert "--batch-size 51 is the global batch" in ranks.stderr and "world size 2" in ranks.stderr, ranks
    assert not (tmp_path / "o").exists()


def test_sync_every_in_one_process_averages_nothing(tmp_path):
    """A world of one (MPI's singleton start, no launcher): LocalSGD's averages are the
    identity, so the run is the plain one's."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    argv = [sys.executable, str(WORKERS / "train_worker.py"), "train",
            *map(str, mnist_flags(tmp_path / "lsgd", "--epochs", "1", "--sync-every", "2"))]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=90, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 rank(s) of batch 50, LocalSGD every 2 steps" in proc.stdout
    assert train_mnist(tmp_path / "plain", "--epochs", "1", "--test-limit", "500") == 0
    assert without_time(records(tmp_path / "lsgd")) == without_time(records(tmp_path / "plain"))


def test_launcher_world_size_reads_the_launchers_variables(monkeypatch):
    from paragrad.distributed import launcher_world_size
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert launcher_world_size() == 1
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "8")
    assert launcher_world_size() == 8
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")     # the MPI launcher's own count first
    assert launcher_world_size() == 4


def test_diloco_in_one_process_trains_and_resumes(tmp_path):
    """DiLoCo on a world of one: its outer step still acts; --resume without the flag takes
    the scheme from the checkpoint and joins the one-rank group again."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    out = tmp_path / "diloco"
    for argv in (mnist_flags(out, "--epochs", "1", "--diloco"),
                 ["mnist", "--resume", out / "epoch1.safetensors", "--epochs", "2"]):
        proc = subprocess.run([sys.executable, str(WORKERS / "train_worker.py"), "train", *map(str, argv)],
                              capture_output=True, text=True, timeout=90, env=env, cwd=REPO)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "1 rank(s) of batch 50, DiLoCo every 50 steps" in proc.stdout, proc.stdout
    rows = records(out)
    assert [r["epoch"] for r in rows] == [1, 2] and rows[1]["train_loss"] < rows[0]["train_loss"]
