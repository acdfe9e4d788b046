"""Upsample, UpsamplingNearest2d and UpsamplingBilinear2d (PyTorch's
torch/nn/modules/upsampling.py): F.interpolate as modules."""
from __future__ import annotations

from .. import functional as F
from ..module import Module


class Upsample(Module):
    """F.interpolate as a module (size or scale_factor, mode, align_corners)."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size, self.mode, self.align_corners = size, mode, align_corners
        self.scale_factor = (tuple(float(f) for f in scale_factor) if isinstance(scale_factor, (tuple, list))
                             else float(scale_factor) if scale_factor is not None else None)
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, x):
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        what = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of (N, C, H, W) input to size or by scale_factor;
    as torch.nn.UpsamplingNearest2d (Upsample with mode='nearest')."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of (N, C, H, W) input to size or by scale_factor, align_corners=True;
    as torch.nn.UpsamplingBilinear2d."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
