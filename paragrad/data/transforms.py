"""Batch augmentations on the tensor's own device: a whole (N, C, H, W) batch per call, built
from paragrad ops (pad, gather, flip, where), so nothing loops over images in Python.

Unlike torchvision's transforms, which see one image at a time, these take a batch and draw
independent randomness per image; a (C, H, W) image is treated as a batch of one.
"""
from __future__ import annotations

from ..ops.elementwise.binary import where
from ..ops.creation import arange, rand, randint, tensor
from ..ops.indexing.index_bounds import remember
from ..ops.indexing.subscripts import gather
from ..ops.movement.copies import flip, pad
from ..tensor import Tensor


def _batch(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x.ndim == 3:
        return x.unsqueeze(0), True
    if x.ndim != 4:
        raise ValueError(f"{op}: expected a batch (N, C, H, W) or an image (C, H, W); got shape "
                         f"{tuple(x.shape)}")
    return x, False


def _pair(size, op):
    if isinstance(size, int):
        return size, size
    if isinstance(size, (tuple, list)) and len(size) == 2 and all(isinstance(s, int) for s in size):
        return tuple(size)
    raise ValueError(f"{op}: size must be an int or a pair of ints; got {size!r}")


def random_crop(x, size, padding=0, generator=None):
    """Pad each image with `padding` zeros on every side, then cut a random size x size window
    (size may be an (h, w) pair) at an offset drawn per image."""
    x, single = _batch(x, "random_crop")
    th, tw = _pair(size, "random_crop")
    if not isinstance(padding, int) or padding < 0:
        raise ValueError(f"random_crop: padding must be a non-negative int; got {padding!r}")
    if padding:
        x = pad(x, (padding, padding, padding, padding))
    n, c, hp, wp = x.shape
    if th > hp or tw > wp or th <= 0 or tw <= 0:
        raise ValueError(f"random_crop: crop size {(th, tw)} must be positive and fit the padded "
                         f"image {(hp, wp)} (input {(hp - 2 * padding, wp - 2 * padding)}, "
                         f"padding {padding})")
    dev = x.device
    oy = randint(0, hp - th + 1, (n,), generator=generator, device=dev)          # (N,)
    ox = randint(0, wp - tw + 1, (n,), generator=generator, device=dev)          # (N,)
    rows = oy.reshape(n, 1, 1) + arange(th, device=dev).reshape(1, th, 1)        # (N, th, 1)
    cols = ox.reshape(n, 1, 1) + arange(tw, device=dev).reshape(1, 1, tw)        # (N, 1, tw)
    idx = (rows * wp + cols).reshape(n, 1, th * tw).expand(n, c, th * tw)        # (N, C, th*tw)
    remember(idx, 0, hp * wp - 1)       # in bounds by construction: gather needn't read it back
    out = gather(x.reshape(n, c, hp * wp), 2, idx).reshape(n, c, th, tw)         # (N, C, th, tw)
    return out[0] if single else out


def random_horizontal_flip(x, p=0.5, generator=None):
    """Mirror each image left-right with probability p, independently per image."""
    x, single = _batch(x, "random_horizontal_flip")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"random_horizontal_flip: p must be in [0, 1]; got {p}")
    n = x.shape[0]
    mask = rand(n, generator=generator, device=x.device) < p                     # (N,)
    out = where(mask.reshape(n, 1, 1, 1), flip(x, 3), x)
    return out[0] if single else out


def normalize(x, mean, std):
    """(x - mean[c]) / std[c] per channel of a (N, C, H, W) batch or (C, H, W) image."""
    x, single = _batch(x, "normalize")
    c = x.shape[1]
    mean = list(mean) if isinstance(mean, (tuple, list)) else [float(mean)] * c
    std = list(std) if isinstance(std, (tuple, list)) else [float(std)] * c
    if len(mean) != c or len(std) != c:
        raise ValueError(f"normalize: mean ({len(mean)}) and std ({len(std)}) need one value per "
                         f"channel of the input {tuple(x.shape)} ({c} channels)")
    if any(s == 0 for s in std):
        raise ValueError(f"normalize: std evaluated to zero after conversion to {x.dtype}, leading "
                         f"to division by zero; got {std}")
    m = tensor(mean, dtype=x.dtype, device=x.device).reshape(1, c, 1, 1)
    s = tensor(std, dtype=x.dtype, device=x.device).reshape(1, c, 1, 1)
    out = (x - m) / s
    return out[0] if single else out


class _Transform:
    def __call__(self, x):
        return self.forward(x)


class RandomCrop(_Transform):
    def __init__(self, size, padding=0, generator=None):
        self.size, self.padding, self.generator = _pair(size, "RandomCrop"), padding, generator

    def forward(self, x):
        return random_crop(x, self.size, self.padding, self.generator)

    def __repr__(self):
        return f"RandomCrop(size={self.size}, padding={self.padding})"


class RandomHorizontalFlip(_Transform):
    def __init__(self, p=0.5, generator=None):
        self.p, self.generator = p, generator

    def forward(self, x):
        return random_horizontal_flip(x, self.p, self.generator)

    def __repr__(self):
        return f"RandomHorizontalFlip(p={self.p})"


class Normalize(_Transform):
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def forward(self, x):
        return normalize(x, self.mean, self.std)

    def __repr__(self):
        return f"Normalize(mean={self.mean}, std={self.std})"


class Compose(_Transform):
    def __init__(self, transforms):
        self.transforms = list(transforms)

    def forward(self, x):
        for t in self.transforms:
            x = t(x)
        return x

    def __repr__(self):
        inner = "".join(f"\n    {t!r}," for t in self.transforms)
        return f"Compose({inner}\n)"
