"""torch.nn.utils.spectral_norm / remove_spectral_norm (the forward-pre-hook form): a weight W
is used as W / sigma(W), sigma its largest singular value, estimated by power iteration on
persistent vectors u, v (Miyato et al., 2018). The module keeps `<name>_orig` (the learned
parameter) and the buffers `<name>_u`, `<name>_v`; in training mode each forward first runs
n_power_iterations steps, updating u and v in place."""
from __future__ import annotations

from ...autograd import no_grad
from ...ops import empty
from ..functional.normalization import normalize
from ..parameter import Parameter
from .weight_norm import find_hook, remove_hook


class SpectralNorm:
    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.n_power_iterations, self.eps = name, dim, n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight):
        """W as a matrix: `dim` first, the rest flattened (rows: the output units)."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)                   # (h, w)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    normalize(weight_mat.mT @ u, dim=0, eps=self.eps, out=v)
                    normalize(weight_mat @ v, dim=0, eps=self.eps, out=u)
                u, v = u.clone(), v.clone()      # (the graph keeps these, not the buffers)
        sigma = u.dot(weight_mat @ v)
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        if find_hook(module, SpectralNorm, name) is not None:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = normalize(empty(h, dtype=weight.dtype, device=weight.device).normal_(0, 1), dim=0, eps=fn.eps)
            v = normalize(empty(w, dtype=weight.dtype, device=weight.device).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())       # (until the first forward, as torch's)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Apply spectral normalization to module.<name> in place; returns the module. dim defaults
    to 0, or 1 for the transposed convolutions (their output units are dim 1)."""
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo spectral_norm: module.<name> is a Parameter again, holding the current W / sigma."""
    return remove_hook(module, SpectralNorm, name, "spectral_norm")
