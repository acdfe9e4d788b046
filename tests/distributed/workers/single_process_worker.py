"""World size 1 without a launcher (MPI's singleton start): init, every collective, the
launcher-variable checks, re-initialization. Prints "single process ok"."""
import datetime
import os
import sys

import numpy as np

import paragrad as pg
import paragrad.distributed as dist

try:
    dist.init_process_group("gloo")
    raise AssertionError("gloo accepted")
except ValueError as e:
    assert "'mpi'" in str(e) and "gloo" in str(e), e
try:
    dist.init_process_group("mpi", timeout=5)
    raise AssertionError("a number accepted as timeout")
except TypeError as e:
    assert "datetime.timedelta" in str(e), e

os.environ["WORLD_SIZE"], os.environ["RANK"] = "4", "1"
try:
    dist.init_process_group("mpi")
    raise AssertionError("WORLD_SIZE=4 accepted in a single process")
except ValueError as e:
    assert "WORLD_SIZE environment variable says 4, but MPI says this is rank 0 of 1" in str(e), e
    assert "paragrad launch -n N" in str(e), e
del os.environ["WORLD_SIZE"], os.environ["RANK"]
assert not dist.is_initialized()

dist.init_process_group("mpi", rank=0, world_size=1, timeout=datetime.timedelta(seconds=5))
assert dist.is_initialized() and (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "mpi")
t = pg.tensor([[1.0, -2.0], [3.0, 4.0]])
for op in dist.ReduceOp:
    dist.all_reduce(t, op=op)
    assert t.tolist() == [[1.0, -2.0], [3.0, 4.0]], (op, t)
out = pg.zeros(2, 2)
dist.reduce_scatter_tensor(out, t)
assert out.tolist() == t.tolist()
dist.all_gather_into_tensor(out, t * 2)
assert out.tolist() == (t * 2).tolist()
gathered = [pg.zeros(2, 2, dtype=pg.bfloat16)]
dist.all_gather(gathered, t.to(pg.bfloat16))
assert gathered[0].float().tolist() == t.tolist()
dist.broadcast(t, src=0)
assert dist.barrier(async_op=True).wait() is True
dist.destroy_process_group()
dist.init_process_group()                 # again, after destroy (backend None: mpi)
assert dist.get_backend() == "mpi" and dist.get_world_size() == 1
dist.destroy_process_group()
print("single process ok", flush=True)
