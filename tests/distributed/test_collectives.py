"""Every collective on 2 and 3 MPI ranks against NumPy, and the debug-mode mismatch check."""
import pytest

from tests.distributed.launch_ranks import run_ranks


@pytest.mark.parametrize("nproc", [2, 3])
def test_collectives_match_numpy(nproc):
    ranks = run_ranks(nproc, "collectives_worker.py")
    assert ranks.returncode == 0, ranks
    assert all(f"rank {r}: " in ranks.stdout for r in range(nproc)), ranks
    assert ranks.stdout.count("checks ok") == nproc, ranks


def test_debug_mode_names_the_ranks_that_differ():
    ranks = run_ranks(3, "debug_worker.py", env={"PARAGRAD_DISTRIBUTED_DEBUG": "1"})
    assert ranks.returncode == 0, ranks
    assert ranks.stdout.count("debug checks ok") == 3, ranks
    assert ("ranks 0, 2 called all_reduce(shape=(3,), dtype=float32, op=SUM); "
            "rank 1 called all_reduce(shape=(4,), dtype=float32, op=SUM)") in ranks.stdout, ranks
