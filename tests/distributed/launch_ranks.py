"""Running a worker script on K ranks with the MPI launcher, as `paragrad launch` would, with
a wall-clock limit; tests assert on its output, exit status and duration. Also the rank counts
the multi-GPU tests run at (gpu_rank_counts)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paragrad.cli.launch import find_launcher, launcher_command

WORKERS = Path(__file__).parent / "workers"
REPO = Path(__file__).resolve().parents[2]


class Ranks:
    def __init__(self, proc, seconds):
        self.returncode, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr
        self.output = proc.stdout + proc.stderr
        self.seconds = seconds

    def __repr__(self):
        return f"exit {self.returncode} after {self.seconds:.1f} s\n--- output ---\n{self.output[-6000:]}"


def run_ranks(nproc, worker, *args, limit=60, env=None):
    """Run tests/distributed/workers/<worker> on nproc ranks; fails (never skips) without an
    MPI launcher, since the distributed suite is part of the plain `pytest` run."""
    launcher = find_launcher()
    if launcher is None:
        pytest.fail('no MPI launcher (mpirun or mpiexec) found next to python or on PATH: install '
                    'the MPI extra with pip install -e ".[dev,mpi]"')
    argv = launcher_command(nproc, [sys.executable, str(WORKERS / worker), *map(str, args)], launcher)
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    full_env.update(env or {})
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=limit, env=full_env,
                              cwd=REPO)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        pytest.fail(f"{worker} on {nproc} ranks still ran after {limit} s:\n{out[-6000:]}")
    return Ranks(proc, time.monotonic() - start)


def gpu_rank_counts(env=None):
    """The rank counts (one GPU per rank) of the multi-GPU tests: 2, and $PARAGRAD_TEST_NPROC
    when set (scripts/multi-gpu-check sets it to the machine's GPU count, so that NCCL's
    rings and trees over 4 or 8 GPUs are exercised, not only the 2-GPU path). A test skips a
    count the machine has too few GPUs for."""
    value = (os.environ if env is None else env).get("PARAGRAD_TEST_NPROC", "").strip()
    if not value:
        return [2]
    if not value.isdigit() or int(value) < 2:
        raise ValueError(f"PARAGRAD_TEST_NPROC must be an integer >= 2 (ranks, one GPU each), got {value!r}")
    return sorted({2, int(value)})


def need_gpus(n):
    import paragrad as pg
    if pg.cuda.device_count() < n:
        pytest.skip(f"needs {n} GPUs, this machine has {pg.cuda.device_count()}")
