"""What every collective checks before it starts, on every rank, so bad input fails with a
message naming the collective, the argument, shapes, dtypes and devices, and nothing was sent."""
from __future__ import annotations

from ..tensor import Tensor
from .reduce_op import ReduceOp

_REDUCIBLE = {
    "mpi": ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"),
    "nccl": ("float16", "bfloat16", "float32", "float64", "int8", "int32", "int64", "uint8", "bool"),
}


def check_tensor(pg, collective, name, t):
    """t is a contiguous tensor on the device the group's backend serves."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{collective}: {name} must be a paragrad.Tensor, got {type(t).__name__}")
    if pg.backend_name == "mpi" and t.device.type != "cpu":
        raise ValueError(f"{collective}: the mpi backend takes CPU tensors, but {name} is on {t.device} "
                         f"(init_process_group('nccl') serves CUDA tensors)")
    if pg.backend_name == "nccl" and (t.device.type != "cuda" or t.device.index != pg.device_index):
        raise ValueError(f"{collective}: the nccl backend of rank {pg.rank} takes tensors on "
                         f"cuda:{pg.device_index}, but {name} is on {t.device}")
    if not t.is_contiguous():
        raise ValueError(f"{collective}: tensors must be contiguous, but {name} (shape "
                         f"{tuple(t.shape)}, stride {t.stride()}) is not; pass {name}.contiguous() "
                         f"and copy the result back")


def check_reducible(pg, collective, t, op):
    reducible = _REDUCIBLE[pg.backend_name]
    if t.dtype.name not in reducible:
        raise TypeError(f"{collective}: the {pg.backend_name} backend can't reduce {t.dtype.name} "
                        f"tensors (it reduces {', '.join(reducible)})")
    if op is ReduceOp.AVG and t.dtype.name == "bool":
        raise TypeError(f"{collective}: ReduceOp.AVG is not defined for bool tensors")


def check_same_dtype(collective, out_name, out, in_name, inp):
    if out.dtype is not inp.dtype:
        raise TypeError(f"{collective}: {out_name} and {in_name} must have the same dtype, got "
                        f"{out.dtype.name} and {inp.dtype.name}")


def check_numel_ratio(collective, big_name, big, small_name, small, world_size):
    """big holds world_size times the elements of small (the all-gather / reduce-scatter rule)."""
    if big.numel() != world_size * small.numel():
        raise ValueError(f"{collective}: {big_name} must have world_size ({world_size}) times the "
                         f"elements of {small_name}: {small_name} has shape {tuple(small.shape)} "
                         f"({small.numel()} elements), so {big_name} needs {world_size * small.numel()}, "
                         f"but its shape is {tuple(big.shape)} ({big.numel()} elements)")


def check_src(collective, src, world_size):
    if isinstance(src, bool) or not isinstance(src, int) or not 0 <= src < world_size:
        raise ValueError(f"{collective}: src must be a rank in [0, {world_size - 1}], got {src!r}")


def check_no_overlap(collective, out, inp):
    """MPI forbids a send buffer overlapping the receive buffer (outside MPI_IN_PLACE)."""
    if out.device.type == "cpu":
        import numpy as np
        if np.may_share_memory(out._data, inp._data):
            raise ValueError(f"{collective}: output and input share memory; pass separate tensors")


def describe(t):
    return f"shape={tuple(t.shape)}, dtype={t.dtype.name}"
