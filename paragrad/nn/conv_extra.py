"""ConvTranspose1d / ConvTranspose2d, Unfold / Fold, PixelShuffle / PixelUnshuffle and
ChannelShuffle: the modules around the forms in functional_conv_extra, with PyTorch's
arguments, parameter shapes, init and repr."""
from __future__ import annotations

from . import functional_conv_extra as FC
from .conv import _ConvNd
from .module import Module

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "Unfold", "Fold", "PixelShuffle",
           "PixelUnshuffle", "ChannelShuffle"]


class _ConvTransposeNd(_ConvNd):
    """A transposed convolution: weight (in_channels, out_channels/groups, *kernel), initialized
    as PyTorch does (kaiming_uniform(a=sqrt(5)) with fan_in = out_channels/groups * prod(kernel),
    the bias in the same bound); only padding_mode 'zeros'."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype)
        self.transposed, self.output_padding = True, self._tuple(output_padding)

    @staticmethod
    def _weight_shape(in_channels, out_channels, groups, kernel_size):
        return (in_channels, out_channels // groups, *kernel_size)

    def _output_padding(self, input, output_size):
        """The output_padding that gives `output_size` (PyTorch's _output_padding): the size
        list may include the batch/channel dims; each spatial size must lie in [min, min+stride-1]."""
        if output_size is None:
            return self.output_padding
        n = self.n
        lead = 2 if input.ndim == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == lead + n:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} "
                             f"or {lead + n} elements (got {len(output_size)})")
        mins = [(input.shape[i + lead] - 1) * self.stride[i] - 2 * self.padding[i]
                + self.dilation[i] * (self.kernel_size[i] - 1) + 1 for i in range(n)]
        maxs = [m + s - 1 for m, s in zip(mins, self.stride)]
        for size, lo, hi in zip(output_size, mins, maxs):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range "
                                 f"from {mins} to {maxs} (for an input of {list(input.shape[lead:])})")
        return tuple(int(o) - m for o, m in zip(output_size, mins))

    def forward(self, input, output_size=None):
        conv = FC.conv_transpose1d if self.n == 1 else FC.conv_transpose2d
        return conv(input, self.weight, self.bias, self.stride, self.padding,
                    self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C_in, L) or (C_in, L) input."""
    n, name = 1, "ConvTranspose1d"


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C_in, H, W) or (C_in, H, W) input."""
    n, name = 2, "ConvTranspose2d"


class Unfold(Module):
    """Extracts sliding local blocks (F.unfold)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return FC.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """Combines sliding local blocks into a tensor, summing overlaps (F.fold)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return FC.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                       self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class PixelShuffle(Module):
    """(*, C*r^2, H, W) -> (*, C, H*r, W*r) (F.pixel_shuffle)."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return FC.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H*r, W*r) -> (*, C*r^2, H, W) (F.pixel_unshuffle)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return FC.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Shuffles the channels of (N, C, *) in `groups` groups (F.channel_shuffle)."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return FC.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
