"""ReduceOp: how all_reduce and reduce_scatter_tensor combine the ranks' values (torch's names).

paragrad has SUM, AVG, PRODUCT, MIN and MAX; torch's bitwise BAND/BOR/BXOR and PREMUL_SUM are
not offered. AVG on an integer tensor divides the sum with truncation toward zero (NCCL's
ncclAvg rule); on bool tensors SUM and MAX are a logical or, PRODUCT and MIN a logical and.
"""
from __future__ import annotations

import enum


class ReduceOp(enum.Enum):
    """How all_reduce and reduce_scatter_tensor combine the ranks' values: SUM, AVG, PRODUCT, MIN,
    MAX; as torch.distributed.ReduceOp.
    torch's BAND, BOR, BXOR and PREMUL_SUM are not offered."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4

    def __repr__(self):
        return f"<RedOpType.{self.name}: {self.value}>"     # as torch prints it


def check_reduce_op(op, collective):
    """op as a ReduceOp, or a TypeError naming the collective and what is accepted."""
    if isinstance(op, ReduceOp):
        return op
    raise TypeError(f"{collective}: op must be a paragrad.distributed.ReduceOp (SUM, AVG, PRODUCT, "
                    f"MIN, MAX), got {op!r}")
