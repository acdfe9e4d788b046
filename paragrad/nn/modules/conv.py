"""Convolution modules (PyTorch's torch/nn/modules/conv.py): Conv1d and Conv2d around F.conv1d /
F.conv2d, ConvTranspose1d / ConvTranspose2d around F.conv_transpose1d / 2d, with PyTorch's
arguments, checks, parameter shapes, init and repr (one _ConvNd holds what they share), and
LazyConv1d / LazyConv2d (in_channels read from the first input; see lazy.py)."""
from __future__ import annotations

from ...ops import empty
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .lazy import LazyModuleMixin


_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """An n-D convolution module (n = len of its kernel tuple). Weight (out_channels,
    in_channels/groups, *kernel) ~ kaiming_uniform(a=sqrt(5)), bias ~ U(-1/sqrt(fan_in),
    1/sqrt(fan_in)) with fan_in = in_channels/groups * prod(kernel), as PyTorch. padding_mode
    'reflect', 'replicate' or 'circular' pads the input with F.pad first (then convolves
    without padding), as PyTorch does."""
    n = name = None         # set by Conv1d / Conv2d

    def _tuple(self, v):
        return tuple(v) if isinstance(v, (tuple, list)) else (v,) * self.n

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if not isinstance(groups, int) or groups <= 0:
            raise ValueError(f"{self.name}: groups must be a positive integer")
        if in_channels % groups:
            raise ValueError(f"{self.name}: in_channels must be divisible by groups (got "
                             f"in_channels={in_channels}, groups={groups})")
        if out_channels % groups:
            raise ValueError(f"{self.name}: out_channels must be divisible by groups (got "
                             f"out_channels={out_channels}, groups={groups})")
        kernel_size, stride, dilation = self._tuple(kernel_size), self._tuple(stride), self._tuple(dilation)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{self.name}: Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError(f"{self.name}: padding='same' is not supported for strided convolutions")
        else:
            padding = self._tuple(padding)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{self.name}: padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode={padding_mode!r}")
        self.in_channels, self.out_channels, self.kernel_size = in_channels, out_channels, kernel_size
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.padding_mode = padding_mode
        self.transposed, self.output_padding = False, (0,) * self.n
        # F.pad's (left, right, top, bottom) for the non-zeros modes; 'same' puts the odd
        # extra at the right/bottom, as F.conv2d does
        if padding == "same":
            rev = []
            for d, k in zip(reversed(dilation), reversed(kernel_size)):
                total = d * (k - 1)
                rev += [total // 2, total - total // 2]
        elif padding == "valid":
            rev = [0, 0] * self.n
        else:
            rev = [p for q in reversed(padding) for p in (q, q)]
        self._reversed_padding_repeated_twice = rev
        self.weight = Parameter(empty(*self._weight_shape(in_channels, out_channels, groups, kernel_size),
                                      device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    @staticmethod
    def _weight_shape(in_channels, out_channels, groups, kernel_size):
        return (out_channels, in_channels // groups, *kernel_size)

    def reset_parameters(self):
        init.default_affine_init_(self.weight, self.bias)

    def _conv_forward(self, x, weight, bias):
        conv = F.conv1d if self.n == 1 else F.conv2d
        if self.padding_mode != "zeros":
            return conv(F.pad(x, self._reversed_padding_repeated_twice, mode=self.padding_mode),
                        weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(x, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, x):
        return self._conv_forward(x, self.weight, self.bias)

    def extra_repr(self):
        # PyTorch's _ConvNd.extra_repr, term for term
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L) or (C_in, L) input (see _ConvNd)."""
    n, name = 1, "Conv1d"


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W) input (see _ConvNd)."""
    n, name = 2, "Conv2d"


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
        conv = F.conv_transpose1d if self.n == 1 else F.conv_transpose2d
        return conv(input, self.weight, self.bias, self.stride, self.padding,
                    self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C_in, L) or (C_in, L) input."""
    n, name = 1, "ConvTranspose1d"


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C_in, H, W) or (C_in, H, W) input."""
    n, name = 2, "ConvTranspose2d"


class _LazyConvMixin(LazyModuleMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self.out_channels = out_channels
        self._lazy_parameters(bias, device, dtype)

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            # the channels are dim 1 of a batched input, dim 0 of an unbatched one
            self.in_channels = input.shape[0] if input.ndim == self.n + 1 else input.shape[1]
            if self.in_channels % self.groups:
                raise ValueError("in_channels must be divisible by groups")
            self._materialize(self._weight_shape(self.in_channels, self.out_channels, self.groups,
                                                 self.kernel_size), self.out_channels)


class LazyConv1d(_LazyConvMixin, Conv1d):
    """Conv1d with in_channels taken from the first input."""
    cls_to_become = Conv1d


class LazyConv2d(_LazyConvMixin, Conv2d):
    """Conv2d with in_channels taken from the first input."""
    cls_to_become = Conv2d
