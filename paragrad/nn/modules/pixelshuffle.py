"""PixelShuffle and PixelUnshuffle (PyTorch's torch/nn/modules/pixelshuffle.py): channels to
space and back (F.pixel_shuffle / F.pixel_unshuffle)."""
from __future__ import annotations

from .. import functional as F
from ..module import Module


class PixelShuffle(Module):
    """(*, C*r^2, H, W) -> (*, C, H*r, W*r) (F.pixel_shuffle)."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H*r, W*r) -> (*, C*r^2, H, W) (F.pixel_unshuffle)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"
