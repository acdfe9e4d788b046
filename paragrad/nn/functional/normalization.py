"""F's normalizations (PyTorch's torch.nn.functional norms): batch_norm and layer_norm (the ops),
and group_norm, instance_norm, local_response_norm, rms_norm and normalize, each composed from
differentiable paragrad ops (so gradients come from autograd and every backend runs them
unchanged)."""
from __future__ import annotations

from ... import dtypes as dt
from ...autograd import no_grad, rename
from ...ops import cat, layer_norm, zeros  # noqa: F401  (F.layer_norm)
from ...ops.neural.layer_norm import layer_norm_cast  # noqa: F401  (F.layer_norm_cast)
from ...ops.neural.batch_norm import batch_norm, batch_norm_relu  # noqa: F401  (F.batch_norm_relu)
from ...ops.linalg.vector_norm import vector_norm
from ...tensor import Tensor
from ...ops.autocast_policy import policy


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps); written into `out` if given (out's old value
    must not be needed by a recorded graph, as for torch's out=)."""
    result = input / vector_norm(input, p, dim, True).clamp(min=eps)
    return result if out is None else out.copy_(result)


@policy("rms_norm")
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2 over the trailing normalized_shape dims) + eps) * weight; eps None:
    the dtype's machine epsilon (PyTorch's default)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    n = len(normalized_shape)
    if tuple(input.shape[input.ndim - n:]) != tuple(normalized_shape):
        raise RuntimeError(f"rms_norm: Given normalized_shape={list(normalized_shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, normalized_shape))}], but got input "
                           f"of size {list(input.shape)}")
    if eps is None:
        eps = dt.finfo(input.dtype).eps
    dims = tuple(range(input.ndim - n, input.ndim))
    y = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return y if weight is None else y * weight


@policy("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize each of num_groups channel groups of an (N, C, *) input over its channels and
    positions (biased variance), then scale and shift per channel."""
    if not isinstance(input, Tensor) or input.ndim < 2:
        raise RuntimeError(f"group_norm: Expected at least 2 dimensions for input tensor but "
                           f"received {getattr(input, 'ndim', type(input).__name__)}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and num_groups={num_groups}")
    x = input.reshape(n, num_groups, -1)                            # (N, G, C/G * positions)
    mean = x.mean(2, keepdim=True)
    xc = x - mean
    y = (xc * ((xc * xc).mean(2, keepdim=True) + eps).rsqrt()).reshape(tuple(input.shape))
    shape = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return rename(y, "NativeGroupNormBackward0", input, weight, bias)     # (torch's is one node)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) of an (N, C, *) input over its spatial dims (biased
    variance), then weight/bias per channel. With use_input_stats and running stats given,
    these move toward the batch mean of the per-instance means and unbiased variances, as in
    PyTorch; without use_input_stats the running stats normalize instead."""
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected input of at least 3 dimensions (N, C, *), got "
                         f"{tuple(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    dims = tuple(range(2, input.ndim))
    spatial = input.numel() // max(n * c, 1)
    if use_input_stats and spatial <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{list(input.shape)}")
    stat_shape = (1, c) + (1,) * len(dims)
    if use_input_stats:
        mean = input.mean(dims, keepdim=True)                                   # (N, C, 1..)
        var = ((input - mean) ** 2).mean(dims, keepdim=True)                   # biased
        if running_mean is not None or running_var is not None:
            with no_grad():
                m = float(momentum)
                if running_mean is not None:
                    running_mean.mul_(1 - m).add_(mean.detach().reshape(n, c).mean(0).to(running_mean.dtype) * m)
                if running_var is not None:
                    unbiased = var.detach().reshape(n, c).mean(0) * (spatial / (spatial - 1))
                    running_var.mul_(1 - m).add_(unbiased.to(running_var.dtype) * m)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("instance_norm: Expected running_mean and running_var to be defined "
                               "when use_input_stats is false")
        mean, var = running_mean.reshape(stat_shape), running_var.reshape(stat_shape)
    out = (input - mean) / (var + eps).sqrt()
    if weight is not None:
        out = out * weight.reshape(stat_shape)
    if bias is not None:
        out = out + bias.reshape(stat_shape)
    # torch runs it as a batch norm of a (1, N*C, *) view and views the result back
    return rename(out, "ViewBackward0", input, weight, bias)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha * mean of input^2 over `size` neighbouring channels) ** beta, the
    window being zero-padded by size // 2 before and (size - 1) // 2 after each channel."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    sq = input * input
    c = input.shape[1]
    before, after = size // 2, (size - 1) // 2
    rest = tuple(input.shape[2:])
    padded = cat([zeros((input.shape[0], before) + rest, dtype=input.dtype, device=input.device), sq,
                  zeros((input.shape[0], after) + rest, dtype=input.dtype, device=input.device)], 1)
    # a sum over `size` shifted slices (size is a small window length, not a data dimension)
    total = padded[:, 0:c]
    for s in range(1, size):
        total = total + padded[:, s:s + c]
    div = (total * (alpha / size) + k) ** beta
    return input / div
