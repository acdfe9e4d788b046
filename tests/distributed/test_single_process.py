"""paragrad.distributed in one process: errors before init (as torch's), and world size 1
without any launcher."""
import os
import subprocess
import sys

import pytest

import paragrad.distributed as dist
from tests.distributed.launch_ranks import REPO, WORKERS
from tests.helpers import check_raises

NOT_INITIALIZED = "Default process group has not been initialized"


@pytest.mark.parametrize("call", [
    lambda d: d.get_rank(), lambda d: d.get_world_size(), lambda d: d.barrier()])
def test_calls_before_init_raise_as_torch(call):
    check_raises(lambda lib: call(lib.distributed), match=NOT_INITIALIZED)


def test_destroy_before_init_raises_as_torch():
    check_raises(lambda lib: lib.distributed.destroy_process_group(), match="Process group cannot be None")


def test_collective_before_init_raises_as_torch():
    check_raises(lambda lib, t: lib.distributed.all_reduce(t), [1.0, 2.0], match=NOT_INITIALIZED)
    check_raises(lambda lib, t: lib.distributed.broadcast(t, 0), [1.0], match=NOT_INITIALIZED)
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match=NOT_INITIALIZED):
        dist.bytes_communicated()


def test_reduce_op_names_match_torch():
    import torch.distributed as td
    for op in dist.ReduceOp:
        assert getattr(td.ReduceOp, op.name) is not None
    assert repr(dist.ReduceOp.SUM) == repr(td.ReduceOp.SUM)


def test_every_backend_hands_back_a_dist_work():
    # isinstance(work, dist.Work) holds for any async_op=True handle in torch; the nccl
    # backend's event-backed handle is one too (its module imports CuPy only when a group starts)
    from paragrad.distributed.nccl_backend import NCCLWork
    work = NCCLWork("all_reduce", 3, None)
    assert isinstance(work, dist.Work) and work.wait() is True
    assert repr(work) == "Work(all_reduce #3, nccl)"


def test_world_size_one_without_a_launcher():
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(name, None)
    out = subprocess.run([sys.executable, str(WORKERS / "single_process_worker.py")], env=env,
                         capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode == 0 and "single process ok" in out.stdout, out.stdout + out.stderr


def test_node_local_rank_from_the_launcher_environment(monkeypatch):
    for name in ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"):
        monkeypatch.delenv(name, raising=False)
    assert dist.get_node_local_rank(fallback_rank=3) == 3
    with pytest.raises(RuntimeError, match="LOCAL_RANK"):
        dist.get_node_local_rank()
    monkeypatch.setenv("SLURM_LOCALID", "2")
    assert dist.get_node_local_rank() == 2
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert dist.get_node_local_rank() == 1
