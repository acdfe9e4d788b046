"""paragrad.distributed: torch.distributed's process group and collectives, over MPI (CPU
tensors, mpi4py) and NCCL (CUDA tensors, through CuPy).

    import paragrad.distributed as dist
    dist.init_process_group("mpi")            # ranks from the launcher: paragrad launch -n 4 -- ...
    dist.all_reduce(t, op=dist.ReduceOp.SUM)  # in place, on every rank

No collective waits forever: each one is bounded by the group's timeout and, when it expires,
raises DistTimeoutError naming the ranks that never arrived (process_group.py, control.py).
Ranks that call different collectives, or one with a different src, op, dtype or element
count, raise DistMismatchError on every rank, naming each rank's call (call_header.py).
PARAGRAD_DISTRIBUTED_DEBUG=1 also checks shapes, before each collective sends anything.
bytes_communicated() counts this rank's traffic (traffic.py).
"""
from .collectives import (all_gather, all_gather_into_tensor, all_reduce, barrier, broadcast,
                          reduce_scatter_tensor)
from .errors import DistBackendError, DistError, DistMismatchError, DistTimeoutError
from .initialization import (bytes_communicated, destroy_process_group, get_backend, get_rank,
                             get_world_size, init_process_group, is_available, is_initialized,
                             is_mpi_available, is_nccl_available, reset_bytes_communicated, traffic)
from .launcher_env import get_node_local_rank, launcher_world_size
from .process_group import ProcessGroup, group
from .reduce_op import ReduceOp
from .work import Work
from .local_sgd import LocalSGD  # (data-parallel training above the collectives: local_sgd.py, diloco.py)
from .diloco import DiLoCo

__all__ = ["all_gather", "all_gather_into_tensor", "all_reduce", "barrier", "broadcast",
           "reduce_scatter_tensor", "DistBackendError", "DistError", "DistMismatchError",
           "DistTimeoutError", "bytes_communicated", "destroy_process_group", "get_backend",
           "get_node_local_rank", "get_rank", "launcher_world_size", "get_world_size", "init_process_group", "is_available", "is_initialized",
           "is_mpi_available", "is_nccl_available", "reset_bytes_communicated", "traffic",
           "ProcessGroup", "group", "ReduceOp", "Work", "LocalSGD", "DiLoCo"]
