"""The collectives (torch.distributed's names, arguments and semantics): each writes its
result in place into the tensors passed, outside autograd (no graph is recorded; the written
tensors' version counters move, as for any in-place write). With async_op=True a collective
returns a Work whose wait() blocks until the output holds the result; otherwise it returns
None once done. Every rank must call the same collectives in the same order with tensors of
the same shapes and dtypes. Each collective checks, always, that the other ranks called the
same collective with the same src, op, dtype and element count (call_header.py), and raises
DistMismatchError on every rank where they differ; the group is unusable after that, and the
tensors hold whatever the transport left. PARAGRAD_DISTRIBUTED_DEBUG=1 also compares shapes,
before each collective sends anything (the group stays usable after its DistMismatchError).
Over MPI a collective returns only once every rank has entered it (its header has come in):
a broadcast's root waits for the other ranks too, which MPI allows any collective to do.
"""
from __future__ import annotations

from ..tensor import bump_version
from . import call_header
from .argument_checks import (check_no_overlap, check_numel_ratio, check_reducible, check_same_dtype,
                              check_src, check_tensor, describe)
from .process_group import default_group
from .reduce_op import ReduceOp, check_reduce_op


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Every rank's tensor becomes the reduction (op) of all ranks' tensors."""
    pg = default_group(group, "all_reduce")
    op = check_reduce_op(op, "all_reduce")
    check_tensor(pg, "all_reduce", "tensor", tensor)
    check_reducible(pg, "all_reduce", tensor, op)
    return _run(pg, "all_reduce", f"all_reduce({describe(tensor)}, op={op.name})",
                call_header.make("all_reduce", tensor, op), [tensor], async_op,
                lambda: pg.transport.all_reduce(tensor._data, tensor.dtype.name, op))


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Every rank's tensor becomes rank src's. (group_src is the same rank: one group only.)"""
    pg = default_group(group, "broadcast")
    if src is None:
        src = group_src
    check_src("broadcast", src, pg.world_size)
    check_tensor(pg, "broadcast", "tensor", tensor)
    return _run(pg, "broadcast", f"broadcast({describe(tensor)}, src={src})",
                call_header.make("broadcast", tensor, root=src), [tensor], async_op,
                lambda: pg.transport.broadcast(tensor._data, src, pg.rank))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output_tensor, of world_size times input_tensor's elements (shape (world_size * n, ...)
    or (world_size, n, ...)), receives every rank's input_tensor in rank order."""
    pg = default_group(group, "all_gather_into_tensor")
    name = "all_gather_into_tensor"
    check_tensor(pg, name, "output_tensor", output_tensor)
    check_tensor(pg, name, "input_tensor", input_tensor)
    check_same_dtype(name, "output_tensor", output_tensor, "input_tensor", input_tensor)
    check_numel_ratio(name, "output_tensor", output_tensor, "input_tensor", input_tensor, pg.world_size)
    check_no_overlap(name, output_tensor, input_tensor)
    return _run(pg, name, f"{name}(output {describe(output_tensor)}, input {describe(input_tensor)})",
                call_header.make(name, input_tensor), [output_tensor], async_op,
                lambda: pg.transport.all_gather_into(output_tensor._data, input_tensor._data))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[r] receives rank r's tensor (world_size tensors of tensor's shape and dtype)."""
    pg = default_group(group, "all_gather")
    check_tensor(pg, "all_gather", "tensor", tensor)
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != pg.world_size:
        got = f"{len(tensor_list)} tensors" if isinstance(tensor_list, (list, tuple)) else type(tensor_list).__name__
        raise ValueError(f"all_gather: tensor_list must be a list of world_size ({pg.world_size}) "
                         f"tensors, got {got}")
    for r, t in enumerate(tensor_list):
        check_tensor(pg, "all_gather", f"tensor_list[{r}]", t)
        if t.shape != tensor.shape or t.dtype is not tensor.dtype:
            raise ValueError(f"all_gather: tensor_list[{r}] ({describe(t)}) must match tensor "
                             f"({describe(tensor)})")
    from ..ops.creation import empty
    gathered = empty((pg.world_size,) + tuple(tensor.shape), dtype=tensor.dtype, device=tensor.device)

    def start():
        request, finish, nbytes = pg.transport.all_gather_into(gathered._data, tensor._data)
        return request, _then(finish, lambda: _scatter_rows(gathered, tensor_list)), nbytes
    return _run(pg, "all_gather", f"all_gather({describe(tensor)})",
                call_header.make("all_gather", tensor), tensor_list, async_op, start)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """input (world_size times output's elements) is reduced (op) across ranks; rank r keeps
    the r-th block of the result in output."""
    pg = default_group(group, "reduce_scatter_tensor")
    name = "reduce_scatter_tensor"
    op = check_reduce_op(op, name)
    check_tensor(pg, name, "output", output)
    check_tensor(pg, name, "input", input)
    check_same_dtype(name, "output", output, "input", input)
    check_numel_ratio(name, "input", input, "output", output, pg.world_size)
    check_reducible(pg, name, input, op)
    check_no_overlap(name, output, input)
    return _run(pg, name, f"{name}(output {describe(output)}, input {describe(input)}, op={op.name})",
                call_header.make(name, input, op), [output], async_op,
                lambda: pg.transport.reduce_scatter(output._data, input._data, input.dtype.name, op))


def barrier(group=None, async_op=False, device_ids=None):
    """Returns once every rank called barrier (device_ids is accepted for torch's signature:
    the nccl group already knows its device)."""
    pg = default_group(group, "barrier")
    if pg.backend_name == "nccl":   # the host waits for the GPU: impossible while pg.jit captures
        from .. import capture
        capture.forbid_sync("barrier")
    return _run(pg, "barrier", "barrier()", call_header.make("barrier"), [], async_op,
                pg.transport.barrier)


def _run(pg, collective, signature, header, written, async_op, start):
    seq = pg.begin(collective, signature, header)
    request, finish, nbytes = start()
    pg.traffic.count(collective, nbytes)
    for t in written:
        bump_version(t)
    work = pg.transport.make_work(pg, collective, seq, request, finish)
    if async_op:
        return work
    work.wait()
    return None


def _then(first, second):
    if first is None:
        return second
    return lambda: (first(), second())


def _scatter_rows(gathered, tensor_list):
    for r, t in enumerate(tensor_list):
        t._backend.copy_(t._data, gathered._data[r])
