"""A rank that hangs, dies or fails: the others end within the timeout, with an error naming
the collective and the rank they waited for, and the job's exit status is non-zero.

With Open MPI's mpirun, a rank that dies or exits non-zero makes mpirun SIGTERM the others
(then SIGKILL): they report from their SIGTERM handler. A rank that hangs is found by the
others' own timeout."""
import pytest

from tests.distributed.launch_ranks import run_ranks

TIMEOUT = 3.0


def test_hanging_rank_makes_the_others_time_out_naming_it():
    ranks = run_ranks(3, "fault_worker.py", "hang", TIMEOUT, limit=60)
    assert ranks.returncode != 0, ranks
    assert "DistTimeoutError: all_reduce timed out after 3.0 s waiting for rank 2" in ranks.output, ranks
    assert "the second all_reduce completed" not in ranks.output, ranks
    assert ranks.seconds < TIMEOUT + 15, ranks     # launch and imports take a few seconds on 2 cores


def test_a_caught_timeout_still_ends_the_process_with_status_1():
    ranks = run_ranks(3, "fault_worker.py", "hang-caught", TIMEOUT, limit=60)
    assert ranks.returncode != 0, ranks
    assert "caught: all_reduce timed out after 3.0 s waiting for rank 2" in ranks.stdout, ranks
    assert "then: broadcast: the process group is unusable after an earlier error" in ranks.stdout, ranks
    assert ranks.seconds < TIMEOUT + 15, ranks


@pytest.mark.parametrize("mode", ["kill", "raise"])
def test_dead_rank_makes_the_others_exit_naming_it(mode):
    ranks = run_ranks(3, "fault_worker.py", mode, 30.0, limit=60)
    assert ranks.returncode != 0, ranks
    # the survivors say what they were waiting for, well before their 30 s timeout
    assert "all_reduce ended on rank 0 by SIGTERM" in ranks.output or \
        "all_reduce ended on rank 1 by SIGTERM" in ranks.output, ranks
    assert "waiting for rank 2 (collective #2)" in ranks.output, ranks
    assert "the second all_reduce completed" not in ranks.output, ranks
    assert ranks.seconds < 20, ranks


def test_rank_missing_at_init_makes_init_time_out():
    ranks = run_ranks(2, "late_init_worker.py", limit=60)
    assert ranks.returncode != 0, ranks
    assert "init_process_group timed out after 2.0 s on rank 0: not every one of the 2 ranks called it" \
        in ranks.output, ranks
    assert "returned" not in ranks.stdout and ranks.seconds < 15, ranks


def test_rank_missing_at_mpi_start_up_makes_init_time_out():
    # no rank started MPI before init_process_group: the others wait inside MPI_Init
    ranks = run_ranks(2, "late_init_worker.py", "before-mpi", limit=60)
    assert ranks.returncode != 0, ranks
    assert ("DistTimeoutError: init_process_group timed out after 2.0 s on rank 0: MPI's start-up "
            "(MPI_Init) is still waiting for ranks that have not called init_process_group") \
        in ranks.output, ranks
    assert "returned" not in ranks.stdout and ranks.seconds < 15, ranks
