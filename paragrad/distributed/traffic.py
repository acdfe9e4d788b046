"""Counting the bytes this rank hands to the transport, per collective, for reports of
communication per training step (DDP, LocalSGD, DiLoCo).

The model: each call counts the size of the buffer this rank contributes, once —
  all_reduce                       the tensor's bytes
  broadcast                        the tensor's bytes on the source rank, 0 on the others
  all_gather, all_gather_into_tensor   the input tensor's bytes
  reduce_scatter_tensor            the input tensor's bytes
  barrier                          0
How the transport moves it is not counted: a ring all-reduce sends 2(n-1)/n times the buffer
per rank, a tree broadcast forwards through inner ranks; those factors belong to the algorithm
MPI or NCCL picks. The small control messages of timeout tracking and debug checks are not
counted either. A bfloat16/float16 reduction over MPI counts the float32 buffer MPI reduces
(twice the tensor's bytes). Inside a pg.jit-captured step the count happens when the step is
captured, not at each replay (no Python runs then): multiply by the replays yourself.
"""
from __future__ import annotations


class Traffic:
    """Calls and bytes per collective name, since init_process_group or the last reset."""

    def __init__(self):
        self.calls, self.bytes = {}, {}

    def count(self, collective, nbytes):
        self.calls[collective] = self.calls.get(collective, 0) + 1
        self.bytes[collective] = self.bytes.get(collective, 0) + int(nbytes)

    def total(self):
        return sum(self.bytes.values())

    def reset(self):
        self.calls.clear()
        self.bytes.clear()
