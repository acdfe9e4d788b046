"""`--precision bf16|fp16|fp32`: the dtype the forward pass and the loss run in.

bf16 and fp16 run them under pg.autocast; the parameters stay float32 (master weights: the
optimizer updates them in float32 and checkpoints save them so). fp16 also scales the loss with
a GradScaler, since float16 gradients underflow where bfloat16's, with float32's exponent
range, don't; the scaler's state is part of the run's training state.
"""
from __future__ import annotations

from .. import dtypes
from ..amp import GradScaler, autocast
from ..backends import device

PRECISIONS = ("bf16", "fp16", "fp32")
_AUTOCAST_DTYPES = {"bf16": dtypes.bfloat16, "fp16": dtypes.float16}


def default_precision(dev, model):
    """fp32 on the CPU (NumPy has no fast half-precision matmul); on CUDA bf16 for the convnets,
    whose convolutions gain from it, and fp32 for the MLP, too small to gain anything."""
    return "bf16" if device(dev).type == "cuda" and model in ("cnn", "resnet18") else "fp32"


def forward_autocast(precision, dev):
    """The context the forward pass and the loss run in (autocast turned off for fp32)."""
    return autocast(device(dev).type, dtype=_AUTOCAST_DTYPES.get(precision), enabled=precision != "fp32")


def grad_scaler(precision, dev):
    """The run's GradScaler: enabled for fp16 only (a disabled one passes loss and step through)."""
    return GradScaler(device(dev).type, enabled=precision == "fp16")


def describe_precision(precision):
    """How the 'training ...' line names it."""
    return {"bf16": "bf16 autocast", "fp16": "fp16 autocast with loss scaling"}.get(precision, "fp32")
