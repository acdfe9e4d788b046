"""A rank that fails in the middle of a job:
`fault_worker.py hang|hang-caught|kill|raise SECONDS [mpi|nccl]`.

Every rank runs one all_reduce, then the last rank (hang) sleeps instead of joining the second
all_reduce, (kill) SIGKILLs itself, or (raise) raises; the others call the second all_reduce
(async in hang mode) with a timeout of SECONDS and must end with an error naming the
collective and that rank.

With nccl (one GPU per rank; hang and kill only) a collective returns once enqueued, so the
survivors read the result back to the host, where they block: a hang is ended by the nccl
watchdog's DistTimeoutError, a kill by the launcher (the blocked main thread can't run the
SIGTERM handler; mpirun's notice names the dead rank)."""
import datetime
import os
import signal
import sys
import time

from mpi4py import MPI

import paragrad as pg
import paragrad.distributed as dist

mode, seconds = sys.argv[1], float(sys.argv[2])
backend = sys.argv[3] if len(sys.argv) > 3 else "mpi"
# all ranks first meet without a deadline: on a loaded machine the ranks' imports can finish
# seconds apart, which init_process_group's short timeout would take for a missing rank
MPI.COMM_WORLD.Barrier()
dist.init_process_group(backend, timeout=datetime.timedelta(seconds=seconds))
rank, world = dist.get_rank(), dist.get_world_size()
device = "cpu" if backend == "mpi" else f"cuda:{dist.get_node_local_rank(fallback_rank=rank) % pg.cuda.device_count()}"
first = pg.ones(4, device=device)
dist.all_reduce(first)
first.cpu()     # every rank is through the first all_reduce (nccl: not only enqueued)
if rank == world - 1:
    if mode in ("hang", "hang-caught"):
        time.sleep(120)
    elif mode == "kill":
        time.sleep(1.0)     # the others are waiting in the second all_reduce by then
        os.kill(os.getpid(), signal.SIGKILL)
    else:
        time.sleep(1.0)
        raise RuntimeError("this rank fails before the second all_reduce")
print(f"rank {rank}: entering the second all_reduce", flush=True)
if backend == "nccl":
    second = pg.ones(4, device=device)
    dist.all_reduce(second)
    second.cpu()        # blocks until the watchdog or the launcher ends this rank
    print(f"rank {rank}: the second all_reduce completed, which it must not", flush=True)
    raise SystemExit(0)
if mode == "hang-caught":   # the error is caught and the script ends "normally"
    try:
        dist.all_reduce(pg.ones(4))
    except dist.DistTimeoutError as e:
        print(f"rank {rank} caught: {e}", flush=True)
    try:
        dist.broadcast(pg.ones(4), src=0)
    except dist.DistBackendError as e:
        print(f"rank {rank} then: {e}", flush=True)
    raise SystemExit(0)     # yet the process exits 1, skipping MPI_Finalize
if mode == "hang":      # through an async handle: not completed, then wait() times out
    work = dist.all_reduce(pg.ones(4), async_op=True)
    assert not work.is_completed()
    work.wait()
dist.all_reduce(pg.ones(4))
print(f"rank {rank}: the second all_reduce completed, which it must not", flush=True)
