"""torch.nn.utils.weight_norm / remove_weight_norm (the forward-pre-hook form): a parameter w
is re-expressed as w = g * v / ||v||, the norm taken over every dim but `dim` (over the whole
tensor for dim=None), with g (`<name>_g`) and v (`<name>_v`) the learned parameters; w is
recomputed from them before each forward (Salimans & Kingma, 2016)."""
from __future__ import annotations

import warnings

from ...autograd import no_grad
from ..parameter import Parameter


def _norm_except_dim(v, dim):
    """||v|| over every dim but `dim`, kept as size-1 dims (dim -1: the whole tensor, 0-d)."""
    if dim == -1:
        return v.norm()
    d = dim % v.ndim
    return (v * v).sum(tuple(i for i in range(v.ndim) if i != d), keepdim=True).sqrt()


class WeightNorm:
    def __init__(self, name, dim):
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module):
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    @staticmethod
    def apply(module, name, dim):
        if find_hook(module, WeightNorm, name) is not None:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if not isinstance(weight, Parameter):
            raise ValueError(f"weight_norm: '{name}' of {type(module).__name__} is not a Parameter")
        del module._parameters[name]
        with no_grad():
            module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, fn.dim).clone()))
            module.register_parameter(name + "_v", Parameter(weight.detach().clone()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        module.register_parameter(self.name, Parameter(weight))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Apply weight normalization to module.<name> in place; returns the module."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo weight_norm: module.<name> is a Parameter again, holding the current g * v / ||v||."""
    return remove_hook(module, WeightNorm, name, "weight_norm")


def find_hook(module, kind, name):
    """The key of module's forward pre-hook of class `kind` for parameter `name`, or None."""
    return next((key for key, hook in module._forward_pre_hooks.items()
                 if isinstance(hook, kind) and hook.name == name), None)


def remove_hook(module, kind, name, what):
    """Undo a reparametrization hook (weight_norm, spectral_norm) of parameter `name`."""
    key = find_hook(module, kind, name)
    if key is None:
        raise ValueError(f"{what} of '{name}' not found in {module}")
    module._forward_pre_hooks.pop(key).remove(module)
    return module
