"""DistributedDataParallel with nccl, the training step captured by pg.jit: one rank per GPU
(one, started without a launcher; 2; and $PARAGRAD_TEST_NPROC where set, each where the
machine has the GPUs). Each rank's parameters must match one process trained on the whole
(concatenated) batch. Marked `gpu` (scripts/gpu-check, scripts/multi-gpu-check); the worker is
workers/ddp_cuda_worker.py."""
import os
import subprocess
import sys

import pytest

from tests.distributed.launch_ranks import REPO, WORKERS, gpu_rank_counts, need_gpus, run_ranks

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("nproc", [1] + gpu_rank_counts())
def test_jitted_ddp_step_captures_the_all_reduces(nproc):
    need_gpus(nproc)
    if nproc > 1:
        ranks = run_ranks(nproc, "ddp_cuda_worker.py", limit=300)
        returncode, output = ranks.returncode, ranks.output
    else:   # one rank, started without a launcher
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run([sys.executable, str(WORKERS / "ddp_cuda_worker.py")], capture_output=True,
                              text=True, timeout=300, env=env, cwd=REPO)
        returncode, output = proc.returncode, proc.stdout + proc.stderr
    assert returncode == 0, output[-6000:]
    assert output.count("ddp cuda ok") == nproc, output[-6000:]
    print(output)
