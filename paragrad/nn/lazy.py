"""Lazy modules (PyTorch's LazyLinear, LazyConv1d, LazyConv2d): the input size is left out of
the constructor and read from the first input. Until then the weight and bias are
UninitializedParameters; the first forward materializes them in place (the same Parameter
objects, so an optimizer built before it keeps working), initializes them as the regular module
would, and turns the module into that module (LazyLinear -> Linear). Loading a state_dict into a
lazy module materializes its parameters at the loaded shapes."""
from __future__ import annotations

from ..ops.creation import empty
from ..tensor import _init
from .conv import Conv1d, Conv2d
from .layers import Linear
from .parameter import Parameter


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


class LazyModuleMixin:
    """Before the regular module's class in the bases; subclasses give cls_to_become and
    initialize_parameters(*inputs)."""
    cls_to_become = None

    def has_uninitialized_params(self):
        return any(isinstance(p, UninitializedParameter) for p in self.parameters())

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement initialize_parameters")

    def _lazy_parameters(self, bias, device, dtype):
        """Placeholders for weight (and bias), and the hook that fills them on the first forward."""
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        self._lazy_hook = self.register_forward_pre_hook(_infer_parameters)

    def _materialize(self, weight_shape, n_out):
        self.weight.materialize(weight_shape)
        if self.bias is not None:
            self.bias.materialize((n_out,))
        self.reset_parameters()

    def reset_parameters(self):
        # (the regular constructor's call comes before the shapes are known: nothing to fill)
        if not self.has_uninitialized_params() and all(p.numel() for p in self.parameters(recurse=False)):
            super().reset_parameters()


def _infer_parameters(module, args):
    module.initialize_parameters(*args)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {type(module).__name__} has not been fully initialized")
    module._lazy_hook.remove()
    del module.__dict__["_lazy_hook"]
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """Linear with in_features taken from the first input's last dim."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.out_features = out_features
        self._lazy_parameters(bias, device, dtype)

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self._materialize((self.out_features, self.in_features), self.out_features)


class _LazyConvMixin(LazyModuleMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self.out_channels = out_channels
        self._lazy_parameters(bias, device, dtype)

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            # the channels are dim 1 of a batched input, dim 0 of an unbatched one
            self.in_channels = input.shape[0] if input.ndim == self.n + 1 else input.shape[1]
            if self.in_channels % self.groups:
                raise ValueError("in_channels must be divisible by groups")
            self._materialize(self._weight_shape(self.in_channels, self.out_channels, self.groups,
                                                 self.kernel_size), self.out_channels)


class LazyConv1d(_LazyConvMixin, Conv1d):
    """Conv1d with in_channels taken from the first input."""
    cls_to_become = Conv1d


class LazyConv2d(_LazyConvMixin, Conv2d):
    """Conv2d with in_channels taken from the first input."""
    cls_to_become = Conv2d
