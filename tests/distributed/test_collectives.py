"""Every collective on 2 and 3 MPI ranks against NumPy, the mismatch check every collective
makes (its header: collective, src, op, dtype, element count), and the debug-mode check."""
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


MISMATCH = "differs across ranks, as seen on rank {rank}: rank 0 called {first}; {others} called {second}."
CALLS = {   # (what rank 0 called, what the others called), workers/mismatch_worker.py
    "kind": ("all_reduce(op=SUM, 4 float32 elements)", "broadcast(src=0, 4 float32 elements)"),
    "root": ("broadcast(src=0, 4 float32 elements)", "broadcast(src=1, 4 float32 elements)"),
    "op": ("all_reduce(op=SUM, 4 float32 elements)", "all_reduce(op=AVG, 4 float32 elements)"),
    "async": ("all_reduce(op=SUM, 4 float32 elements)", "broadcast(src=0, 4 float32 elements)"),
    "unwaited": ("all_reduce(op=SUM, 4 float32 elements)", "broadcast(src=0, 4 float32 elements)"),
}


@pytest.mark.parametrize("nproc", [2, 3])
def test_every_rank_raises_when_ranks_call_different_collectives(nproc):
    # without PARAGRAD_DISTRIBUTED_DEBUG: MPI pairs such calls up and returns garbage, or hangs
    scenarios = list(CALLS) if nproc == 2 else ["kind", "root"]
    ranks = run_ranks(nproc, "mismatch_worker.py", *scenarios, limit=90)
    assert ranks.returncode != 0, ranks      # a group broken by a mismatch ends its process with 1
    assert "which it must not" not in ranks.output and "timed out" not in ranks.output, ranks
    for scenario in scenarios:
        first, second = CALLS[scenario]
        for rank in range(nproc):
            prefix = f"rank {rank} {scenario}: "
            line = next((l for l in ranks.stdout.splitlines() if l.startswith(prefix)), "")
            assert "DistMismatchError: " in line and "collective #2 " in line, (rank, scenario, ranks)
            if nproc == 2:
                assert MISMATCH.format(rank=rank, first=first, others="rank 1", second=second) in line, line
            else:   # a rank may not have heard from every other rank yet: "rank 2 not heard from yet"
                assert f"as seen on rank {rank}: rank 0 called {first}; " in line, line
                assert f" called {second}" in line, line
    assert ranks.seconds < 10 + 6 * len(scenarios), ranks    # found at once, not by the 30 s timeout


def test_a_mismatch_nobody_waited_for_makes_the_exit_status_1():
    # async collectives never waited for, no destroy_process_group: the check at Python's exit
    # (or, where a peer's header came first, the collective's own start) raises, and no rank
    # exits 0 (the job's status would be 0 otherwise)
    ranks = run_ranks(2, "mismatch_worker.py", "at-exit", limit=60)
    assert ranks.returncode != 0, ranks
    first, second = CALLS["kind"]
    assert any(MISMATCH.format(rank=r, first=first, others="rank 1", second=second) in ranks.output
               for r in (0, 1)), ranks
    assert "which it must not" not in ranks.output and ranks.seconds < 20, ranks
