"""Every collective, blocking and async, for float32/float64/int64 (and bfloat16, bool) and
each ReduceOp, against NumPy; argument errors; traffic counting. Prints "rank R: N checks ok".
Run by tests/distributed/test_collectives.py on 2 and 3 ranks (`collectives_worker.py`, the
mpi backend on CPU tensors) and by tests/distributed/test_nccl_cuda.py on two GPUs
(`collectives_worker.py nccl`: CUDA tensors, one GPU per rank)."""
import datetime
import sys

import numpy as np

import paragrad as pg
import paragrad.distributed as dist
from paragrad.distributed import ReduceOp

BACKEND = sys.argv[1] if len(sys.argv) > 1 else "mpi"
dist.init_process_group(BACKEND, timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
DEVICE = "cpu" if BACKEND == "mpi" else f"cuda:{dist.get_rank() % pg.cuda.device_count()}"
checks = 0


def on_device(x, dtype=None):
    return pg.tensor(x, dtype=dtype, device=DEVICE)


def zeros(*shape, dtype=None):
    return pg.zeros(*shape, dtype=dtype, device=DEVICE)


def check(got, want, what):
    global checks
    got = got.cpu()
    got = got.float().numpy() if got.dtype is pg.bfloat16 else got.numpy()
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError(f"rank {rank}: {what}: got {got!r}, want {want!r}")
    checks += 1


def value(r, dtype, op, shape=(3, 4)):
    """Rank r's input: small integers, so sums and products are exact in every dtype."""
    base = np.arange(int(np.prod(shape))).reshape(shape) % 3 + 1
    x = (base + r) if op is ReduceOp.PRODUCT else (base * (r + 1) - 2 * r)
    return x.astype(dtype)


def expect(inputs, op):
    stacked = np.stack(inputs)
    if op is ReduceOp.SUM:
        return stacked.sum(0).astype(stacked.dtype)
    if op is ReduceOp.PRODUCT:
        return stacked.prod(0).astype(stacked.dtype)
    if op is ReduceOp.MIN:
        return stacked.min(0)
    if op is ReduceOp.MAX:
        return stacked.max(0)
    total = stacked.sum(0)
    if stacked.dtype.kind == "i":
        return (np.sign(total) * (np.abs(total) // world)).astype(stacked.dtype)
    return (total / world).astype(stacked.dtype)


def launch(fn, async_op, *args, **kwargs):
    work = fn(*args, async_op=async_op, **kwargs)
    if async_op:
        assert isinstance(work, dist.Work), work
        assert work.wait() is True
        if BACKEND == "nccl":       # wait() orders the current stream; the GPU may still run
            pg.cuda.synchronize()
        assert work.is_completed()
    else:
        assert work is None


for async_op in (False, True):
    for dtype in (np.float32, np.float64, np.int64):
        for op in ReduceOp:
            inputs = [value(r, dtype, op) for r in range(world)]
            t = on_device(inputs[rank])
            launch(dist.all_reduce, async_op, t, op=op)
            check(t, expect(inputs, op), f"all_reduce {np.dtype(dtype).name} {op} async={async_op}")

            out = zeros(4, dtype=t.dtype)
            big = [value(r, dtype, op, (world * 4,)) for r in range(world)]
            launch(dist.reduce_scatter_tensor, async_op, out, on_device(big[rank]), op=op)
            check(out, expect(big, op)[rank * 4:(rank + 1) * 4], f"reduce_scatter_tensor {op}")

        for src in range(world):
            t = on_device(value(rank, dtype, ReduceOp.SUM))
            launch(dist.broadcast, async_op, t, src)
            check(t, value(src, dtype, ReduceOp.SUM), f"broadcast src={src}")

        mine = on_device(value(rank, dtype, ReduceOp.SUM, (2, 3)))
        flat = zeros(world * 2, 3, dtype=mine.dtype)
        launch(dist.all_gather_into_tensor, async_op, flat, mine)
        check(flat, np.concatenate([value(r, dtype, ReduceOp.SUM, (2, 3)) for r in range(world)]),
              "all_gather_into_tensor (world*2, 3)")
        stacked = zeros(world, 2, 3, dtype=mine.dtype)
        launch(dist.all_gather_into_tensor, async_op, stacked, mine)
        check(stacked, np.stack([value(r, dtype, ReduceOp.SUM, (2, 3)) for r in range(world)]),
              "all_gather_into_tensor (world, 2, 3)")
        outs = [zeros(2, 3, dtype=mine.dtype) for _ in range(world)]
        launch(dist.all_gather, async_op, outs, mine)
        for r in range(world):
            check(outs[r], value(r, dtype, ReduceOp.SUM, (2, 3)), f"all_gather [{r}]")
    launch(dist.barrier, async_op)

# several async collectives in flight at once, waited in reverse order
works, tensors = [], []
for i in range(4):
    tensors.append(pg.full((5,), float(rank + i), device=DEVICE))
    works.append(dist.all_reduce(tensors[-1], async_op=True))
for w in reversed(works):
    w.wait()
for i, t in enumerate(tensors):
    check(t, np.full(5, sum(r + i for r in range(world)), np.float32), f"in-flight all_reduce {i}")

# bfloat16 reduces in float32 and rounds once; bool SUM is a logical or
b = on_device([1.5, -2.0, 3.0], dtype=pg.bfloat16) * (rank + 1)
dist.all_reduce(b, op=ReduceOp.AVG)
check(b, np.array([1.5, -2.0, 3.0], np.float32) * (world + 1) / 2, "bfloat16 AVG")
flags = on_device([rank == 0, False, True])
dist.all_reduce(flags)
check(flags, np.array([True, False, True]), "bool SUM")

# 0-d tensors and tensors that require grad (written in place, version moves)
s = pg.tensor(float(rank), requires_grad=True, device=DEVICE)
version = s._version
dist.all_reduce(s)
check(s.detach(), np.array(float(sum(range(world))), np.float32), "0-d all_reduce")
assert s._version > version

# bad arguments raise the same error on every rank, before anything is sent
def raises(kind, words, fn, *args, **kwargs):
    global checks
    try:
        fn(*args, **kwargs)
    except kind as e:
        assert all(w in str(e) for w in words), f"rank {rank}: {e!r} lacks {words}"
        checks += 1
        return
    raise AssertionError(f"rank {rank}: {fn.__name__}{args} did not raise {kind.__name__}")


raises(ValueError, ["all_gather_into_tensor", "output_tensor", f"world_size ({world})", "(7,)"],
       dist.all_gather_into_tensor, zeros(7), zeros(2))
raises(ValueError, ["reduce_scatter_tensor", "input", "(3,)"],
       dist.reduce_scatter_tensor, zeros(2), zeros(3))
raises(TypeError, ["all_gather_into_tensor", "float32", "int64"],
       dist.all_gather_into_tensor, zeros(2 * world), zeros(2, dtype=pg.int64))
raises(ValueError, ["all_gather", f"world_size ({world})", f"{world + 1} tensors"],
       dist.all_gather, [zeros(2)] * (world + 1), zeros(2))
raises(ValueError, ["all_gather", "tensor_list[0]", "(3,)", "(2,)"],
       dist.all_gather, [zeros(3)] * world, zeros(2))
raises(ValueError, ["all_reduce", "contiguous", "(3, 2)"], dist.all_reduce, zeros(2, 3).t())
raises(ValueError, ["broadcast", "src", f"[0, {world - 1}]"], dist.broadcast, zeros(2), world)
raises(TypeError, ["all_reduce", "ReduceOp"], dist.all_reduce, zeros(2), op="sum")
raises(TypeError, ["all_reduce", "paragrad.Tensor", "ndarray"], dist.all_reduce, np.zeros(2))
raises(TypeError, ["AVG", "bool"], dist.all_reduce, zeros(2, dtype=pg.bool), op=ReduceOp.AVG)
raises(ValueError, ["twice"], dist.init_process_group, "mpi")

# traffic: the bytes this rank handed to collectives (traffic.py's model)
dist.reset_bytes_communicated()
dist.all_reduce(zeros(10, dtype=pg.float64))                 # 80
dist.broadcast(zeros(4, dtype=pg.int64), src=0)              # 32 on rank 0 only
dist.all_gather_into_tensor(zeros(3 * world), zeros(3))   # 12
dist.barrier()
assert dist.bytes_communicated() == 80 + (32 if rank == 0 else 0) + 12, dist.traffic().bytes
assert dist.traffic().calls == {"all_reduce": 1, "broadcast": 1, "all_gather_into_tensor": 1, "barrier": 1}
checks += 1

# the launcher numbers the ranks of a node (one node here; not always in rank order)
local = zeros(world, dtype=pg.int64)
dist.all_gather_into_tensor(local, on_device([dist.get_node_local_rank()]))
assert sorted(local.tolist()) == list(range(world)), local
checks += 1

# group.WORLD is the default group, accepted as `group`
assert dist.group.WORLD is not None and dist.get_rank(dist.group.WORLD) == rank
dist.all_reduce(zeros(1), group=dist.group.WORLD)
raises(ValueError, ["only the default process group"], dist.all_reduce, zeros(1), group=object())

# DistributedSampler takes its replicas and rank from the group
sampler = pg.data.DistributedSampler(range(10), shuffle=False)
assert (sampler.num_replicas, sampler.rank) == (world, rank) and list(sampler)[0] == rank
checks += 1

dist.destroy_process_group()
assert not dist.is_initialized()
print(f"rank {rank}: {checks} checks ok", flush=True)
