"""The last rank never calls init_process_group: the others' init must end within the timeout
instead of waiting in MPI forever.

`late_init_worker.py`: every rank has started MPI (imported mpi4py.MPI) first, so the others
raise DistTimeoutError from init_process_group's own meeting of the ranks.
`late_init_worker.py before-mpi`: no rank has started MPI, so the others wait inside MPI's
start-up (MPI_Init), where only the start-up watchdog can end them."""
import datetime
import sys
import time

import paragrad.distributed as dist

if sys.argv[1:] == ["before-mpi"]:
    # the rank from the launcher's variables: importing mpi4py.MPI would start MPI here
    last = dist.get_node_local_rank() == dist.launcher_world_size() - 1   # (all ranks on one node)
else:
    from mpi4py import MPI
    last = MPI.COMM_WORLD.Get_rank() == MPI.COMM_WORLD.Get_size() - 1
if last:
    time.sleep(120)
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=2))
print("init_process_group returned, which it must not", flush=True)
