"""The last rank never calls init_process_group: the others' init raises DistTimeoutError
within the timeout instead of waiting in MPI forever."""
import datetime
import time

from mpi4py import MPI

import paragrad.distributed as dist

if MPI.COMM_WORLD.Get_rank() == MPI.COMM_WORLD.Get_size() - 1:
    time.sleep(120)
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=2))
print("init_process_group returned, which it must not", flush=True)
