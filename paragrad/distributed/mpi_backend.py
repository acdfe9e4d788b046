"""The `mpi` backend: collectives on CPU tensors through mpi4py.

Each collective hands MPI the tensor's own NumPy buffer (no copy for the contiguous tensors
collectives require) and returns the MPI request plus a `finish` step run once it completed.
Data movement without arithmetic (broadcast, all-gather) sends raw bytes, so every dtype works,
bfloat16 included. Reductions use the MPI type of the dtype; MPI has no float16 or bfloat16
type, so those reduce a float32 copy and round it back into the tensor at the end (one
rounding, like PyTorch's opmath; the float32 copy is what crosses the wire). AVG is SUM then a
division by the world size.
"""
from __future__ import annotations

import numpy as np

from .reduce_op import ReduceOp
from .work import Work

_MPI_TYPE_NAMES = {"float32": "FLOAT", "float64": "DOUBLE", "int64": "INT64_T", "int32": "INT32_T",
                   "int16": "INT16_T", "int8": "INT8_T", "uint8": "UINT8_T", "bool": "C_BOOL"}
_WIDENED = ("float16", "bfloat16")      # no MPI type: reduced as float32


class MPIBackend:
    name = "mpi"

    def __init__(self, world):
        from mpi4py import MPI
        self.MPI = MPI
        self.comm = world.Dup()     # our collectives never match a user's messages on COMM_WORLD
        self.size = world.Get_size()

    def _mpi_op(self, op, dtype_name):
        MPI = self.MPI
        if dtype_name == "bool":
            return MPI.LOR if op in (ReduceOp.SUM, ReduceOp.MAX) else MPI.LAND
        return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
                ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX}[op]

    def _reducible(self, arr, dtype_name):
        """(array MPI reduces, its MPI type, write-back step): the tensor's own buffer, or for
        float16/bfloat16 a float32 copy that finish() rounds back."""
        if dtype_name in _WIDENED:
            wide = arr.astype(np.float32)
            return wide, self.MPI.FLOAT, lambda: np.copyto(arr, wide, casting="unsafe")
        return arr, getattr(self.MPI, _MPI_TYPE_NAMES[dtype_name]), None

    def _bytes(self, arr):
        return [arr.reshape(-1).view(np.uint8), self.MPI.BYTE]

    def all_reduce(self, arr, dtype_name, op):
        buf, mpi_type, write_back = self._reducible(arr, dtype_name)
        request = self.comm.Iallreduce(self.MPI.IN_PLACE, [buf, mpi_type], self._mpi_op(op, dtype_name))
        return request, _finisher(buf, op, self.size, write_back), buf.nbytes

    def broadcast(self, arr, src, rank):
        request = self.comm.Ibcast(self._bytes(arr), root=src)
        return request, None, arr.nbytes if rank == src else 0

    def all_gather_into(self, out, inp):
        request = self.comm.Iallgather(self._bytes(inp), self._bytes(out))
        return request, None, inp.nbytes

    def reduce_scatter(self, out, inp, dtype_name, op):
        send, mpi_type, _ = self._reducible(inp, dtype_name)
        recv, _, write_back = self._reducible(out, dtype_name)
        request = self.comm.Ireduce_scatter_block([send, mpi_type], [recv, mpi_type],
                                                  self._mpi_op(op, dtype_name))
        return request, _finisher(recv, op, self.size, write_back), send.nbytes

    def barrier(self):
        return self.comm.Ibarrier(), None, 0

    def test(self, request):
        return request.Test()

    def make_work(self, pg, collective, seq, request, finish):
        return Work(pg, collective, seq, request, finish)

    def free(self):
        self.comm.Free()


def _finisher(buf, op, world_size, write_back):
    """What runs once a reduction completed: AVG's division, then the float16/bfloat16 write-back."""
    if op is not ReduceOp.AVG and write_back is None:
        return None

    def finish():
        if op is ReduceOp.AVG:
            if buf.dtype.kind in "iu":      # integers: truncation toward zero (NCCL's ncclAvg)
                q = np.abs(buf) // world_size
                np.copyto(buf, np.where(buf < 0, -q, q))
            else:
                np.divide(buf, world_size, out=buf)
        if write_back is not None:
            write_back()
    return finish
