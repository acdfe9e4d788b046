"""The header each collective sends ahead of itself to every other rank (control.py), so that
ranks calling different collectives raise instead of letting the transport pair the calls up.

MPI and NCCL match collectives by order alone: an all_reduce on one rank and a broadcast on
another complete with bytes of one read as the other (or hang), and two roots of one
broadcast both "succeed". Five integers catch that: which collective, its root (broadcast's
src), its reduce op, and the dtype and element count of the tensor it sends (-1 where a field
doesn't apply). PARAGRAD_DISTRIBUTED_DEBUG's full description (shapes included, checked before
anything is sent) is the stronger, slower check; this one always runs.
"""
from __future__ import annotations

from ..dtypes import ALL as _ALL_DTYPES
from .reduce_op import ReduceOp

COLLECTIVES = ("all_reduce", "broadcast", "all_gather_into_tensor", "all_gather",
               "reduce_scatter_tensor", "barrier")
FIELDS = 5
NONE = -1
_KIND = {name: i for i, name in enumerate(COLLECTIVES)}
_DTYPES = tuple(d.name for d in _ALL_DTYPES)
_DTYPE = {d: i for i, d in enumerate(_ALL_DTYPES)}     # keyed by the dtype singletons: fast


def make(collective, tensor=None, op=None, root=NONE):
    """The header of `collective` sending `tensor` (a tuple of FIELDS ints). It runs in every
    collective, so it reads plain attributes (an enum's .value is a slow property)."""
    op_code = NONE if op is None else op._value_
    if tensor is None:
        return (_KIND[collective], root, op_code, NONE, NONE)
    return (_KIND[collective], root, op_code, _DTYPE[tensor.dtype], tensor.numel())


def describe(header):
    """A header as the call it stands for, e.g. broadcast(src=0, 4 float32 elements)."""
    kind, root, op, dtype, numel = header
    if not 0 <= kind < len(COLLECTIVES):
        return f"an unknown collective (header {list(header)})"
    args = [f"src={root}"] if root != NONE else []
    if op != NONE:
        args.append(f"op={ReduceOp(op).name}")
    if dtype != NONE:
        args.append(f"{numel} {_DTYPES[dtype]} element{'s' if numel != 1 else ''}")
    return f"{COLLECTIVES[kind]}({', '.join(args)})"
