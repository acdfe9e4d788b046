"""Parameter: a leaf Tensor that a Module registers as learnable."""
from __future__ import annotations

from ..tensor import Tensor, _init


class Parameter(Tensor):
    """`Parameter(data)` shares `data`'s buffer and requires grad (unless told otherwise)."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            from ..ops.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor as data, got {type(data).__name__}")
        _init(self, data._data, data.dtype, data._device)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        return (Parameter, (self.detach(), self.requires_grad))
