"""One rank of the data-parallel checks: `data_parallel_worker.py MODULE OUT_DIR` (the
repository on PYTHONPATH), started by mpirun, or by plain python for a world of one. Runs every
check_* of tests/distributed/MODULE.py (ddp_checks or local_sgd_checks) in order and writes
{check name: None or its traceback} to OUT_DIR/rank<r>.json, so one launch per world size
serves all the tests of test_data_parallel.py (a launch costs more than the checks).

A check that fails on one rank may leave the others waiting in a collective: the group's short
timeout turns that into an error, and the later checks then fail at once."""
from __future__ import annotations

import importlib
import json
import sys
import traceback
from datetime import timedelta
from pathlib import Path

import paragrad.distributed as dist


def main(module, out_dir):
    dist.init_process_group("mpi", timeout=timedelta(seconds=30))
    checks = importlib.import_module(f"tests.distributed.{module}").CHECKS
    results = {}
    for check in checks:
        try:
            check()
            results[check.__name__] = None
        except Exception:  # noqa: BLE001 — reported per check
            results[check.__name__] = traceback.format_exc()
    Path(out_dir, f"rank{dist.get_rank()}.json").write_text(json.dumps(results))
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
