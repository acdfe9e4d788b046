"""Collectives over many tensors at once: one flat buffer per dtype and device, one collective
each (torch's `_broadcast_coalesced` and `all_reduce_coalesced`). A model of 50 small tensors
then costs one or two calls instead of 50, each with its own latency.

Used by DistributedDataParallel (rank 0's state at construction, buffers before forward),
LocalSGD and DiLoCo (parameter averages). Both return the payload bytes they handed to the
collectives, counted as paragrad.distributed counts them.
"""
from __future__ import annotations

from ..autograd import no_grad
from ..ops import cat
from .collectives import all_reduce, broadcast
from .initialization import get_rank
from .reduce_op import ReduceOp


def _groups(tensors):
    """The tensors by (dtype, device), in first-seen order; each tensor once."""
    groups, seen = {}, set()
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            groups.setdefault((t.dtype, t.device), []).append(t)
    return list(groups.values())


def _flat(group):
    return cat([t.detach().reshape(-1) for t in group])     # (sum of numels,)


def _unflatten_into(flat, group):
    offset = 0
    for t in group:
        n = t.numel()
        t.detach().copy_(flat[offset:offset + n].view(t.shape))
        offset += n


def broadcast_coalesced(tensors, src=0):
    """Overwrite every tensor with rank `src`'s values, in place. -> payload bytes this rank
    sent: all of it on `src`, nothing elsewhere (paragrad.distributed's count)."""
    sent, source = 0, get_rank() == src
    with no_grad():
        for group in _groups(tensors):
            flat = _flat(group)
            broadcast(flat, src)
            _unflatten_into(flat, group)
            sent += flat.numel() * flat.dtype.itemsize if source else 0
    return sent


def all_reduce_coalesced(tensors, op=ReduceOp.AVG):
    """Reduce every tensor across ranks (the average by default), in place. -> payload bytes."""
    sent = 0
    with no_grad():
        for group in _groups(tensors):
            flat = _flat(group)
            all_reduce(flat, op=op)
            _unflatten_into(flat, group)
            sent += flat.numel() * flat.dtype.itemsize
    return sent
