"""DistributedDataParallel with nccl, the training step captured by pg.jit: one rank per GPU
(two where the machine has them, else one, started without a launcher). Marked `gpu`
(scripts/gpu-check); the worker is workers/ddp_cuda_worker.py."""
import os
import subprocess
import sys

import pytest

import paragrad as pg
from tests.distributed.launch_ranks import REPO, WORKERS, run_ranks

pytestmark = pytest.mark.gpu


def test_jitted_ddp_step_captures_the_all_reduces():
    nproc = min(2, pg.cuda.device_count())
    if nproc > 1:
        ranks = run_ranks(nproc, "ddp_cuda_worker.py", limit=300)
        returncode, output = ranks.returncode, ranks.output
    else:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run([sys.executable, str(WORKERS / "ddp_cuda_worker.py")], capture_output=True,
                              text=True, timeout=300, env=env, cwd=REPO)
        returncode, output = proc.returncode, proc.stdout + proc.stderr
    assert returncode == 0, output[-6000:]
    assert output.count("ddp cuda ok") == nproc, output[-6000:]
    print(output)
