"""Lazy modules' machinery (PyTorch's torch/nn/modules/lazy.py): LazyModuleMixin. A lazy module
(LazyLinear in linear.py, LazyConv1d / LazyConv2d in conv.py) leaves the input size out of the
constructor and reads it from the first input. Until then the weight and bias are
UninitializedParameters (nn/parameter.py); the first forward materializes them in place (the
same Parameter objects, so an optimizer built before it keeps working), initializes them as the
regular module would, and turns the module into that module (LazyLinear -> Linear). Loading a
state_dict into a lazy module materializes its parameters at the loaded shapes."""
from __future__ import annotations

from ..parameter import UninitializedParameter


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
