"""The nccl backend on one GPU, world size 1 without a launcher: every collective against
NumPy, async handles, argument errors, and an all_reduce inside a pg.jit step, captured and
replayed; and, on a machine with several GPUs, every collective on 2 ranks and on
$PARAGRAD_TEST_NPROC ranks (the CPU suite's workers with CUDA tensors: the collectives and
ZeroRedundancyOptimizer). Marked `gpu`
(scripts/gpu-check, scripts/multi-gpu-check)."""
import numpy as np
import pytest

import paragrad as pg
import paragrad.distributed as dist
from paragrad.distributed import ReduceOp
from tests.distributed.launch_ranks import gpu_rank_counts, need_gpus, run_ranks

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float64", "int64", "int32", "bfloat16", "float16"]


@pytest.fixture(scope="module")
def group():
    dist.init_process_group("nccl", device_id=0)
    yield
    dist.destroy_process_group()


def _cuda(values, dtype):
    return pg.tensor(np.asarray(values), device="cuda").to(getattr(pg, dtype))


def _host(t):
    return t.float().cpu().numpy() if t.dtype in (pg.bfloat16, pg.float16) else t.cpu().numpy()


def test_group(group):
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "nccl")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(ReduceOp))
def test_all_reduce_and_reduce_scatter(group, dtype, op):
    values = np.arange(-3, 9).reshape(3, 4)
    t = _cuda(values, dtype)
    dist.all_reduce(t, op=op)
    np.testing.assert_array_equal(_host(t), values)     # one rank: every op is the identity
    out = _cuda(np.zeros(12), dtype)
    work = dist.reduce_scatter_tensor(out, _cuda(values.reshape(-1), dtype), op=op, async_op=True)
    assert work.wait() is True
    pg.cuda.synchronize()
    assert work.is_completed()
    np.testing.assert_array_equal(_host(out), values.reshape(-1))


def test_bool_all_reduce(group):
    t = pg.tensor([True, False], device="cuda")
    dist.all_reduce(t)
    assert t.cpu().tolist() == [True, False]


@pytest.mark.parametrize("dtype", DTYPES + ["bool", "int16"])
def test_data_movement(group, dtype):
    values = np.arange(6).reshape(2, 3) % 2 if dtype == "bool" else np.arange(6).reshape(2, 3)
    t = _cuda(values, dtype)
    dist.broadcast(t, src=0)
    np.testing.assert_array_equal(_host(t), values.astype(_host(t).dtype))
    flat = _cuda(np.zeros(6), dtype)
    dist.all_gather_into_tensor(flat, t)
    np.testing.assert_array_equal(_host(flat), values.reshape(-1).astype(_host(flat).dtype))
    outs = [_cuda(np.zeros((2, 3)), dtype)]
    dist.all_gather(outs, t)
    np.testing.assert_array_equal(_host(outs[0]), _host(t))
    dist.barrier()


def test_argument_errors(group):
    with pytest.raises(ValueError, match=r"nccl backend of rank 0 takes tensors on cuda:0, but tensor is on cpu"):
        dist.all_reduce(pg.ones(3))
    with pytest.raises(ValueError, match="world_size"):
        dist.all_gather_into_tensor(pg.zeros(5, device="cuda"), pg.zeros(2, device="cuda"))
    with pytest.raises(TypeError, match="all_reduce: the nccl backend can't reduce int16"):
        dist.all_reduce(pg.zeros(2, device="cuda", dtype=pg.int16))


def test_all_reduce_inside_a_captured_step(group):
    @pg.jit
    def step(x):
        y = x * 2
        dist.all_reduce(y, op=ReduceOp.SUM)
        dist.all_reduce(y, op=ReduceOp.AVG)
        return y + 1

    dist.reset_bytes_communicated()
    for i in range(4):          # warm-up, capture, two replays
        x = pg.tensor(np.full(8, float(i), np.float32), device="cuda")
        out = step(x)
        np.testing.assert_array_equal(out.cpu().numpy(), np.full(8, 2.0 * i + 1, np.float32))
    assert step.graph_nodes() >= 3
    # counted when Python ran them (warm-up and capture), not at replays: 2 calls x 2 runs
    assert dist.traffic().calls["all_reduce"] == 4 and dist.bytes_communicated() == 4 * 32


def test_barrier_inside_a_capture_is_refused(group):
    from paragrad.capture import CaptureSyncError

    @pg.jit
    def step(x):
        dist.barrier()
        return x + 1

    x = pg.ones(2, device="cuda")
    step(x)
    with pytest.raises(CaptureSyncError, match="barrier"):
        step(x)


@pytest.mark.parametrize("nproc", gpu_rank_counts())
def test_every_collective_on_several_gpus(nproc):
    """nproc ranks, one GPU each, through the MPI launcher (a separate job: this process's own
    world-size-1 group is not involved): 2, and the machine's GPU count under
    scripts/multi-gpu-check (PARAGRAD_TEST_NPROC)."""
    need_gpus(nproc)
    ranks = run_ranks(nproc, "collectives_worker.py", "nccl", limit=180 + 20 * nproc)
    assert ranks.returncode == 0 and ranks.stdout.count("checks ok") == nproc, ranks


@pytest.mark.parametrize("nproc", gpu_rank_counts())
def test_zero_redundancy_optimizer_on_several_gpus(nproc):
    """workers/zero_worker.py over nccl: sharded AdamW and SGD equal the unsharded ones."""
    need_gpus(nproc)
    ranks = run_ranks(nproc, "zero_worker.py", "nccl", limit=180 + 20 * nproc)
    assert ranks.returncode == 0 and ranks.stdout.count("zero checks ok") == nproc, ranks
