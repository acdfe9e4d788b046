"""DistributedDataParallel, LocalSGD and DiLoCo on 1, 2 and 3 ranks (CPU, MPI).

The checks themselves are ddp_checks.py and local_sgd_checks.py; one launch per module and
world size runs all of them (workers/data_parallel_worker.py) and each test here reads its
check's result on every rank. A world of one runs under plain python (MPI's singleton mode):
no launcher needed. Larger worlds need mpirun and fail without it, never skip."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.distributed import ddp_checks, local_sgd_checks
from tests.distributed.launch_ranks import REPO, WORKERS, run_ranks

MODULES = {"ddp_checks": ddp_checks, "local_sgd_checks": local_sgd_checks}
_results = {}       # (module, world size) -> [per-rank {check: None or traceback}]


def results(module, nproc, tmp_path_factory):
    key = (module, nproc)
    if key not in _results:
        out = tmp_path_factory.mktemp(f"{module}-{nproc}")
        if nproc == 1:
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
            proc = subprocess.run([sys.executable, str(WORKERS / "data_parallel_worker.py"), module, str(out)],
                                  capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
            output = proc.stdout + proc.stderr
        else:
            output = run_ranks(nproc, "data_parallel_worker.py", module, out, limit=120).output
        files = [out / f"rank{r}.json" for r in range(nproc)]
        missing = [f.name for f in files if not f.exists()]
        assert not missing, f"{module} on {nproc} ranks wrote no {missing}:\n{output[-6000:]}"
        _results[key] = [json.loads(f.read_text()) for f in files]
    return _results[key]


CASES = [pytest.param(module, nproc, check.__name__, id=f"{nproc}-{check.__name__[len('check_'):]}")
         for module, mod in MODULES.items() for nproc in (1, 2, 3) for check in mod.CHECKS]


@pytest.mark.parametrize("module, nproc, check", CASES)
def test_data_parallel(module, nproc, check, tmp_path_factory):
    ranks = results(module, nproc, tmp_path_factory)
    failures = [f"rank {r}:\n{res[check]}" for r, res in enumerate(ranks) if res.get(check, "not run")]
    assert not failures, "\n".join(failures)
