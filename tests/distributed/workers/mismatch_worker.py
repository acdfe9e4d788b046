"""Ranks that call different collectives, without PARAGRAD_DISTRIBUTED_DEBUG:
`mismatch_worker.py SCENARIO...`, each scenario on a fresh process group:

  kind      rank 0 calls all_reduce, the others broadcast(src=0)
  root      rank 0 calls broadcast(src=0), the others broadcast(src=1)
  op        rank 0 calls all_reduce(op=SUM), the others all_reduce(op=AVG)
  async     rank 0 waits on an async all_reduce, the others broadcast(src=0)
  unwaited  as async, but rank 0 never waits: its destroy_process_group() raises
  at-exit   every rank starts its mismatched call async and ends without waiting or
            destroy_process_group(): the check at Python's exit reports it (a last scenario)

Every rank must raise DistMismatchError (printed as "rank R SCENARIO: ..."); none may go on
with what the transport left in its tensor. The ranks meet on COMM_WORLD after each scenario,
so that every rank has spoken before the launcher could end the job."""
import datetime
import sys

from mpi4py import MPI

import paragrad as pg
import paragrad.distributed as dist
from paragrad.distributed import ReduceOp


def mismatched_call(scenario, rank):
    t = pg.full((4,), float(rank + 1))
    if scenario == "kind":
        dist.all_reduce(t) if rank == 0 else dist.broadcast(t, src=0)
    elif scenario == "root":
        dist.broadcast(t, src=0 if rank == 0 else 1)
    elif scenario == "op":
        dist.all_reduce(t, op=ReduceOp.SUM if rank == 0 else ReduceOp.AVG)
    elif scenario == "async":
        dist.all_reduce(t, async_op=True).wait() if rank == 0 else dist.broadcast(t, src=0)
    elif scenario == "unwaited":
        dist.all_reduce(t, async_op=True) if rank == 0 else dist.broadcast(t, src=0)
    elif scenario == "at-exit":
        dist.all_reduce(t, async_op=True) if rank == 0 else dist.broadcast(t, src=0, async_op=True)
        raise SystemExit(0)     # the exit check must turn this into status 1
    else:
        raise ValueError(f"unknown scenario {scenario!r}")
    return t


MPI.COMM_WORLD.Barrier()     # imports may finish seconds apart on a loaded machine
for scenario in sys.argv[1:]:
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    dist.all_reduce(pg.ones(2))        # a matched collective first: the mismatch is #2
    try:
        t = mismatched_call(scenario, rank)
        dist.destroy_process_group()
        print(f"rank {rank} {scenario}: completed with {t.tolist()}, which it must not", flush=True)
    except dist.DistMismatchError as e:
        print(f"rank {rank} {scenario}: DistMismatchError: {e}", flush=True)
        if dist.is_initialized():
            dist.destroy_process_group()    # (a broken group frees nothing)
    MPI.COMM_WORLD.Barrier()
