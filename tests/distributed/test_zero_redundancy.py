"""pg.distributed.optim.ZeroRedundancyOptimizer on 2 and 3 MPI ranks against the unsharded
optimizer (workers/zero_worker.py: parameters bit for bit, sharded state, consolidated and
loaded state dicts, the refused options)."""
import pytest

from tests.distributed.launch_ranks import run_ranks


@pytest.mark.parametrize("nproc", [2, 3])
def test_sharded_optimizer_state_trains_as_the_unsharded_optimizer(nproc):
    ranks = run_ranks(nproc, "zero_worker.py", limit=120)
    assert ranks.returncode == 0, ranks
    assert ranks.stdout.count("zero checks ok") == nproc, ranks
