"""F's pooling (PyTorch's torch.nn.functional pools): max, average, adaptive, LP pooling and max
unpooling in 1-D and 2-D (the ops), and the *_with_indices forms of the max pools."""
from __future__ import annotations

from ...ops.neural.pool import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,
                                adaptive_max_pool2d, avg_pool1d, avg_pool2d, lp_pool1d, lp_pool2d,
                                max_pool1d, max_pool2d, max_unpool1d, max_unpool2d)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """max_pool2d returning (output, indices) whatever return_indices says; as
    torch.nn.functional.max_pool2d_with_indices."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """max_pool1d returning (output, indices) whatever return_indices says; as
    torch.nn.functional.max_pool1d_with_indices."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool2d returning (output, indices) whatever
    return_indices says; as torch.nn.functional.adaptive_max_pool2d_with_indices."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool1d returning (output, indices) whatever
    return_indices says; as torch.nn.functional.adaptive_max_pool1d_with_indices."""
    return adaptive_max_pool1d(input, output_size, True)
