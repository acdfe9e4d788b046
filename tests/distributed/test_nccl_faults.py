"""The nccl backend when a rank hangs or dies (workers/fault_worker.py with `nccl`, one GPU per
rank, the last rank failing): the others end well within the limit, the job's exit status is
non-zero and the output names the failed rank. At 2 ranks and at $PARAGRAD_TEST_NPROC
(scripts/multi-gpu-check). Marked `gpu`.

A hang is found by the nccl watchdog (nccl_watchdog.py): DistTimeoutError naming the collective
and the rank after the group's timeout. A killed rank is found by the launcher: Open MPI's mpirun
ends the job at once, and its notice names the rank (the survivors are blocked in a CUDA
synchronization, so their SIGTERM handler can't speak first)."""
import pytest

from tests.distributed.launch_ranks import gpu_rank_counts, need_gpus, run_ranks

pytestmark = pytest.mark.gpu

TIMEOUT = 10.0      # seconds: NCCL's first collective sets up its connections, slower on 8 GPUs


@pytest.mark.parametrize("nproc", gpu_rank_counts())
def test_hanging_rank_makes_the_watchdog_name_it(nproc):
    need_gpus(nproc)
    ranks = run_ranks(nproc, "fault_worker.py", "hang", TIMEOUT, "nccl", limit=120)
    assert ranks.returncode != 0, ranks
    assert f"all_reduce timed out after {TIMEOUT:.1f} s waiting for rank {nproc - 1} (nccl" in ranks.output, ranks
    assert "the second all_reduce completed" not in ranks.output, ranks
    assert ranks.seconds < TIMEOUT + 40, ranks      # launch, CUDA and NCCL start-up included


@pytest.mark.parametrize("nproc", gpu_rank_counts())
def test_killed_rank_makes_the_others_exit(nproc):
    need_gpus(nproc)
    ranks = run_ranks(nproc, "fault_worker.py", "kill", 60.0, "nccl", limit=120)
    assert ranks.returncode != 0, ranks
    dead = nproc - 1
    # Open MPI 4.1 says "mpirun noticed that process rank N ...", 5 "prterun noticed ..."; where a
    # survivor's handler did run, paragrad's own message names the rank
    assert f"noticed that process rank {dead} " in ranks.output or \
        f"waiting for rank {dead} (collective #2)" in ranks.output, ranks
    assert "the second all_reduce completed" not in ranks.output, ranks
    assert ranks.seconds < 45, ranks        # well before the 60 s timeout: the launcher ended it
