"""More of PyTorch's F: instance_norm, local_response_norm, bilinear, gumbel_softmax, pdist.
Each composes differentiable paragrad ops (so gradients come from autograd and every backend
runs them unchanged)."""
from __future__ import annotations

from ..autograd import no_grad
from ..ops import argmax, cat, softmax, triu_indices
from ..ops.creation import rand_like, zeros, zeros_like
from ..ops.linalg.vector_norm import distance

__all__ = ["instance_norm", "local_response_norm", "bilinear", "gumbel_softmax", "pdist"]


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
    return out


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


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] (+ bias[o])."""
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out, in1, in2), got {tuple(weight.shape)}")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1 or input2.shape[-1] != in2 or tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(f"bilinear(): input1 {tuple(input1.shape)} and input2 {tuple(input2.shape)} "
                           f"do not match weight {tuple(weight.shape)} (expected (*, {in1}) and (*, {in2}))")
    lead = tuple(input1.shape[:-1])
    u = input1.reshape(-1, in1) @ weight.permute(1, 0, 2).reshape(in1, out_f * in2)   # (B, out*in2)
    y = (u.reshape(-1, out_f, in2) * input2.reshape(-1, 1, in2)).sum(-1)               # (B, out)
    if bias is not None:
        y = y + bias
    return y.reshape(lead + (out_f,))


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1); hard=True returns the one-hot of its
    argmax in the forward pass with the soft sample's gradient (straight-through)."""
    u = rand_like(logits)
    # g = -log(E), E = -log(1 - U) ~ Exp(1); E is clamped so U = 0 cannot give an infinite g
    gumbels = -((-(-u).log1p()).clamp(min=1e-30)).log()
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = argmax(y_soft, dim, keepdim=True)
    y_hard = zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def pdist(input, p=2):
    """The p-norm distances between the rows of an (N, M) input, for each pair i < j in row
    order: N * (N - 1) / 2 values."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    if n < 2:
        return zeros((0,), dtype=input.dtype, device=input.device)
    idx = triu_indices(n, n, 1, device=input.device)                           # (2, N(N-1)/2)
    return distance(input[idx[0]] - input[idx[1]], p)
