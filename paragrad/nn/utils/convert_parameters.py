"""torch.nn.utils.parameters_to_vector / vector_to_parameters: all parameters as one flat
vector, and back (the parameters' values are replaced in place, as PyTorch's `.data` swap)."""
from __future__ import annotations

from ...autograd import no_grad
from ...ops import cat
from ...tensor import Tensor


def _check_devices(params):
    devices = {p.device for p in params}
    if len(devices) > 1:
        raise TypeError(f"Found two parameters on different devices, this is currently not supported "
                        f"({', '.join(sorted(str(d) for d in devices))})")


def parameters_to_vector(parameters):
    """One 1-D tensor: every parameter flattened, in order (differentiable, like torch's)."""
    params = list(parameters)
    _check_devices(params)
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D vec into the parameters, in order."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    _check_devices(params)
    need = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() < need:
        raise RuntimeError(f"vector_to_parameters: vec of shape {list(vec.shape)} can't fill "
                           f"{need} parameter values")
    offset = 0
    with no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[offset:offset + n].reshape(p.shape))
            offset += n
