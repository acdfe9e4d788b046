"""PARAGRAD_DISTRIBUTED_DEBUG=1: ranks that disagree about a collective's shape, or about which
collective comes next, all raise DistMismatchError naming the ranks and what each called; the
group stays usable afterwards (nothing was sent). Prints "rank R: debug checks ok"."""
import datetime

import paragrad as pg
import paragrad.distributed as dist

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
dist.all_reduce(pg.ones(3))

try:
    dist.all_reduce(pg.ones(4 if rank == 1 else 3))
    raise AssertionError("shapes differ across ranks, yet all_reduce ran")
except dist.DistMismatchError as e:
    msg = str(e)
    assert "all_reduce" in msg and "rank 1 called all_reduce(shape=(4,)" in msg, msg
    assert "shape=(3,)" in msg and "collective #2" in msg, msg
    if rank == 0:
        print("mismatch message:", msg, flush=True)

try:
    if rank == 0:
        dist.broadcast(pg.ones(3), src=0)
    else:
        dist.all_reduce(pg.ones(3))
    raise AssertionError("ranks called different collectives, yet one ran")
except dist.DistMismatchError as e:
    assert "rank 0 called broadcast(shape=(3,), dtype=float32, src=0)" in str(e), str(e)

t = pg.full((3,), float(rank))
dist.all_reduce(t)
assert t.tolist() == [float(sum(range(world)))] * 3
dist.destroy_process_group()
print(f"rank {rank}: debug checks ok", flush=True)
