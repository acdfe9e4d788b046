"""More of PyTorch's F, composed from differentiable Tensor ops: the Huber-type and KL losses,
similarities and distances, and RMS / group normalization."""
from __future__ import annotations

import math
import warnings

from .. import dtypes as dt
from ..ops import where
from ..ops.neural.regression_loss import regression_loss
from ..ops.linalg.vector_norm import vector_norm
from ..tensor import Tensor

_norm = vector_norm     # (the name functional_losses imports)


def _legacy_reduction(size_average, reduce, reduction):
    """PyTorch's deprecated size_average / reduce flags override reduction when either is given
    (its _Reduction.legacy_get_string)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def _reduce(loss, reduction, op):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: {reduction} is not a valid value for reduction")


def _warn_target_size(input, target):
    """torch's warning for the pointwise regression losses, whose target broadcasts silently:
    a (N, 1) prediction against an (N,) target averages an N x N grid."""
    if input.shape != target.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
                      f"Please ensure they have the same size.", stacklevel=3)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta = 0: the L1 loss)."""
    _warn_target_size(input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    out = regression_loss("smooth_l1", input, target, _legacy_reduction(size_average, reduce, reduction), beta)
    if out is not None:
        return out
    d = (input - target).abs()
    loss = d if beta == 0 else where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction), "smooth_l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    _warn_target_size(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is None:
        out = regression_loss("huber", input, target, reduction, delta)
        if out is not None:
            return out
    d = (input - target).abs()
    loss = where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _reduce(loss if weight is None else loss * weight, reduction, "huber_loss")


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) pointwise: target (log target - input), 0 where target is 0;
    reduction 'batchmean' divides the sum by the batch size (the true KL divergence)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        pos = target > 0
        safe = where(pos, target, target * 0 + 1)       # log(1) = 0 off the support: no NaN
        loss = target * safe.log() - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction, "kl_div")


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps); written into `out` if given (out's old value
    must not be needed by a recorded graph, as for torch's out=)."""
    result = input / vector_norm(input, p, dim, True).clamp(min=eps)
    return result if out is None else out.copy_(result)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1 . x2 / max(||x1|| ||x2||, eps) along dim (inputs broadcast)."""
    n1 = (x1 * x1).sum(dim)
    n2 = (x2 * x2).sum(dim)
    return (x1 * x2).sum(dim) / (n1 * n2).clamp(min=eps * eps).sqrt()


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim."""
    return vector_norm(x1 - x2 + eps, p, -1, keepdim)


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
    return y


_INTERP_MODES = {"nearest": 0, "nearest-exact": 0, "area": 0, "linear": 1, "bilinear": 2, "trilinear": 3}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of an (N, C, *spatial) input: nearest / nearest-exact (any
    rank), area (1-D, 2-D), linear (1-D), bilinear (2-D), trilinear (3-D; bicubic is not
    implemented), separably, one dim at a time, with
    PyTorch's source-index rules (align_corners; a given scale_factor is used as given unless
    recompute_scale_factor). Each dim is gathers plus a weighted sum, so gradients follow."""
    from ..ops.creation import tensor as make
    if mode not in _INTERP_MODES:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported by paragrad (modes: "
                                  f"{', '.join(_INTERP_MODES)})")
    spatial = input.ndim - 2
    linear = _INTERP_MODES[mode]
    if linear and linear != spatial:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {linear + 2}D input")
    if not linear and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by paragrad")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    ins = tuple(input.shape[2:])
    if size is not None:
        outs = tuple(size) if isinstance(size, (tuple, list)) else (size,) * spatial
        if len(outs) != spatial:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but "
                             f"got input with spatial dimensions of {list(ins)} and output size of {list(outs)}.")
        scales = [None] * spatial
    else:
        sf = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * spatial
        if len(sf) != spatial:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, "
                             f"but got input with spatial dimensions of {list(ins)} and scale_factor of "
                             f"shape {list(sf)}.")
        outs = tuple(int(math.floor(n * s)) for n, s in zip(ins, sf))
        scales = [None] * spatial if recompute_scale_factor else list(sf)
    if mode == "area":      # window averages: adaptive average pooling to the output size
        from ..ops.neural.pool import adaptive_avg_pool1d, adaptive_avg_pool2d
        if spatial not in (1, 2):
            raise NotImplementedError("interpolate: mode 'area' supports 3-D and 4-D inputs here")
        return adaptive_avg_pool1d(input, outs[0]) if spatial == 1 else adaptive_avg_pool2d(input, outs)
    x = input
    for d, (n_in, n_out, sf) in enumerate(zip(ins, outs, scales)):
        dim = 2 + d
        dst = [float(i) for i in range(n_out)]
        if not linear:
            scale = (1.0 / sf) if sf else n_in / n_out
            shift = 0.5 if mode == "nearest-exact" else 0.0
            idx = [min(int(math.floor((i + shift) * scale)), n_in - 1) for i in dst]
            x = x.index_select(dim, make(idx, dtype=dt.int64, device=x.device))
            continue
        if align_corners:
            scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
            src = [scale * i for i in dst]
        else:
            scale = (1.0 / sf) if sf else n_in / n_out
            src = [max(scale * (i + 0.5) - 0.5, 0.0) for i in dst]
        i0 = [min(int(math.floor(s)), n_in - 1) for s in src]
        i1 = [min(i + 1, n_in - 1) for i in i0]
        w1 = [s - i for s, i in zip(src, i0)]
        wshape = (n_out,) + (1,) * (x.ndim - dim - 1)
        w1t = make(w1, dtype=x.dtype, device=x.device).reshape(wshape)
        a = x.index_select(dim, make(i0, dtype=dt.int64, device=x.device))
        b = x.index_select(dim, make(i1, dtype=dt.int64, device=x.device))
        x = a + (b - a) * w1t
    return x
