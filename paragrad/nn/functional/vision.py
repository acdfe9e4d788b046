"""F's vision forms (PyTorch's torch.nn.functional vision functions): pad (the op), interpolate,
pixel_shuffle / pixel_unshuffle and channel_shuffle, composed from differentiable paragrad ops.
interpolate resizes separably, one spatial dim at a time (gathers plus a weighted sum, so
gradients follow); the shuffles are reshapes and permutations."""
from __future__ import annotations

import math

from ... import dtypes as dt
from ...autograd import rename
from ...ops import pad  # noqa: F401  (F.pad)
from ...ops import tensor as make
from ...ops._common import as_int
from .conv import _check_tensor
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d
from ...ops.autocast_policy import policy
from ...ops.neural.pool import keeps_channels_last


_INTERP_MODES = {"nearest": 0, "nearest-exact": 0, "area": 0, "linear": 1, "bilinear": 2, "trilinear": 3}
# torch's upsampling kernels (one node each), by mode; the number is the spatial rank
_INTERP_NODES = {"nearest": "UpsampleNearest{}DBackward0", "nearest-exact": "UpsampleNearestExact{}DBackward0",
                 "linear": "UpsampleLinear1DBackward0", "bilinear": "UpsampleBilinear2DBackward0",
                 "trilinear": "UpsampleTrilinear3DBackward0"}


@policy("interpolate")
@keeps_channels_last          # torch's upsampling kernels keep a channels-last input's layout
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of an (N, C, *spatial) input: nearest / nearest-exact (any
    rank), area (1-D, 2-D), linear (1-D), bilinear (2-D), trilinear (3-D; bicubic is not
    implemented), separably, one dim at a time, with
    PyTorch's source-index rules (align_corners; a given scale_factor is used as given unless
    recompute_scale_factor). Each dim is gathers plus a weighted sum, so gradients follow."""
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
    return rename(x, _INTERP_NODES[mode].format(spatial), input)


# ---- pixel and channel shuffles -----------------------------------------------------------------
def _shuffle_factor(input, v, name, op):
    """The pixel (un)shuffle preamble: input a Tensor of at least 3 dims, v a positive int."""
    _check_tensor(input, "input", op)
    if as_int(v) is None:
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(v).__name__}")
    if v <= 0:
        raise RuntimeError(f"{op} expects {name} to be greater than zero, but got {v}")
    if input.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    return as_int(v)


def pixel_shuffle(input, upscale_factor):
    """torch.nn.functional.pixel_shuffle: (*, C*r^2, H, W) -> (*, C, H*r, W*r)."""
    op = "pixel_shuffle"
    r = _shuffle_factor(input, upscale_factor, "upscale_factor", op)
    *lead, cr, h, w = input.shape
    if cr % (r * r):
        raise RuntimeError(f"{op} expects its input's 'channel' dimension to be divisible by the "
                           f"square of upscale_factor, but input.size(-3)={cr} is not divisible by "
                           f"{r * r}")
    m = len(lead)
    x = input.reshape(*lead, cr // (r * r), r, r, h, w)
    x = x.permute(*range(m), m, m + 3, m + 1, m + 4, m + 2)        # (*, C, H, r, W, r)
    # (torch's is one node)
    return rename(x.reshape(*lead, cr // (r * r), h * r, w * r), "PixelShuffleBackward0", input)


def pixel_unshuffle(input, downscale_factor):
    """torch.nn.functional.pixel_unshuffle: (*, C, H*r, W*r) -> (*, C*r^2, H, W)."""
    op = "pixel_unshuffle"
    r = _shuffle_factor(input, downscale_factor, "downscale_factor", op)
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"{op} expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"{op} expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    m = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(m), m, m + 2, m + 4, m + 1, m + 3)        # (*, C, r, r, H/r, W/r)
    return rename(x.reshape(*lead, c * r * r, h // r, w // r), "PixelUnshuffleBackward0", input)


def channel_shuffle(input, groups):
    """torch.nn.functional.channel_shuffle: (N, C, *) with C = g*k: channel g_i*k + k_i moves
    to k_i*g + g_i (a (g, k) -> (k, g) transpose of the channel axis)."""
    op = "channel_shuffle"
    _check_tensor(input, "input", op)
    if as_int(groups) is None:
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    if input.ndim <= 2:
        raise RuntimeError(f"{op} expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and "
                           f"{groups} groups.")
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return rename(x.reshape(input.shape), "ChannelShuffleBackward0", input)
