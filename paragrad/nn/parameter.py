"""Parameter (PyTorch's torch/nn/parameter.py): a leaf Tensor that a Module registers as learnable,
and UninitializedParameter, the placeholder of a lazy module's parameters until their shape is
known (nn/modules/lazy.py)."""
from __future__ import annotations

from ..ops import empty
from ..tensor import Tensor, _init


class Parameter(Tensor):
    """`Parameter(data)` shares `data`'s buffer and requires grad (unless told otherwise)."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
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


class UninitializedParameter(Parameter):
    """A Parameter whose shape is not known yet (an empty placeholder of its dtype and device)."""

    def __init__(self, requires_grad=True, device=None, dtype=None):
        super().__init__(empty(0, device=device, dtype=dtype), requires_grad)

    def materialize(self, shape, device=None, dtype=None):
        """Give this parameter `shape` (uninitialized memory), in place; it becomes a Parameter."""
        data = empty(*shape, device=device or self.device, dtype=dtype or self.dtype)
        requires_grad = self.requires_grad
        _init(self, data._data, data.dtype, data._device)
        self.__class__ = Parameter
        self.requires_grad_(requires_grad)

    def __repr__(self):
        return "<UninitializedParameter>"

    def __reduce_ex__(self, proto):
        return (UninitializedParameter, (self.requires_grad,))
