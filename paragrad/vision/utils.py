"""torchvision.utils' make_grid and save_image: a batch of images laid out in one picture, and
that picture written as a PNG (paragrad.vision.png; PNG is the one format written, without Pillow)."""
from __future__ import annotations

import math
import os

from .. import dtypes as dt
from ..autograd import no_grad
from ..ops.movement.copies import cat, stack
from ..tensor import Tensor
from .png import write_png


@no_grad()
def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False,
              pad_value=0.0):
    """torchvision.utils.make_grid: a (C, H', W') tensor holding the images of `tensor` (a 4-D
    mini-batch B x C x H x W, a 3-D image C x H x W, a 2-D image H x W, or a list of images, which
    are stacked) in rows of nrow, each framed by `padding` pixels of pad_value. Single-channel
    images come out with 3 (copied) channels. normalize=True shifts each value into [0, 1] by
    value_range (min, max), clamping to it first, or by the min and max of the batch (of each
    image with scale_each=True). A batch of one is returned as that image, with no frame."""
    if isinstance(tensor, list):
        if not tensor or not all(isinstance(t, Tensor) for t in tensor):
            raise TypeError(f"make_grid: tensor or non-empty list of tensors expected, got a list of "
                            f"{[type(t).__name__ for t in tensor]}")
        tensor = stack(tensor, dim=0)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"make_grid: tensor or list of tensors expected, got {type(tensor)}")
    if tensor.dim() not in (2, 3, 4):
        raise ValueError(f"make_grid: expected a 4-D mini-batch (B x C x H x W), a 3-D image "
                         f"(C x H x W) or a 2-D image (H x W), got a tensor of shape {tuple(tensor.shape)}")
    while tensor.dim() < 4:
        tensor = tensor.unsqueeze(0)                        # (B, C, H, W)
    if tensor.size(1) == 1:
        tensor = cat((tensor, tensor, tensor), 1)           # grey -> RGB, as torchvision
    if normalize:
        tensor = _normalized(tensor, value_range, scale_each)
    if tensor.size(0) == 1:
        return tensor[0]
    nmaps, channels, h, w = tensor.shape
    xmaps = min(nrow, nmaps)
    ymaps = math.ceil(nmaps / xmaps)
    cell_h, cell_w = h + padding, w + padding
    grid = tensor.new_full((channels, ymaps * cell_h + padding, xmaps * cell_w + padding), pad_value)
    for k in range(nmaps):
        y, x = (k // xmaps) * cell_h + padding, (k % xmaps) * cell_w + padding
        grid[:, y:y + h, x:x + w] = tensor[k]
    return grid


def _normalized(tensor, value_range, scale_each):
    """normalize=True's arithmetic on (B, C, H, W): a new tensor, the input left as it was."""
    if value_range is not None:
        if not isinstance(value_range, tuple):
            raise TypeError("make_grid: value_range has to be a tuple (min, max) if specified. "
                            "min and max are numbers")
        low, high = value_range
        tensor = tensor.clamp(low, high)
        span = max(high - low, 1e-5)
    else:
        # the batch's min/max, or each image's (B, 1, 1, 1): 0-d tensors, no read to the host
        dims = (1, 2, 3) if scale_each else (0, 1, 2, 3)
        low = tensor.amin(dim=dims, keepdim=True)
        span = (tensor.amax(dim=dims, keepdim=True) - low).clamp(min=1e-5)
    return (tensor - low) / span


@no_grad()
def save_image(tensor, fp, format=None, **kwargs):
    """torchvision.utils.save_image: make_grid(tensor, **kwargs) written as a PNG to fp (a path or
    a binary file object); each value v becomes the byte clamp(v * 255 + 0.5, 0, 255). format None
    takes it from the file name's extension; PNG is the only format written, any other raises
    ValueError before anything is written. A failed write to a path leaves no partial file."""
    name = os.fspath(fp) if isinstance(fp, (str, os.PathLike)) else getattr(fp, "name", None)
    if format is None:
        ext = os.path.splitext(name)[1] if isinstance(name, str) else ""
        if ext.lower() != ".png":
            raise ValueError(f"save_image: writes PNG only, got the extension "
                             f"{ext or '(none)'!r} of {name!r}: name the file .png or pass format='png'")
    elif format.upper() != "PNG":
        raise ValueError(f"save_image: writes PNG only, got format {format!r} for {name!r}")
    if not isinstance(tensor, (Tensor, list)):
        raise TypeError(f"save_image: tensor or list of tensors expected, got {type(tensor)}")
    grid = make_grid(tensor, **kwargs)                                          # (C, H, W)
    pixels = grid.mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to("cpu", dt.uint8)
    write_png(fp, pixels.numpy())                                               # (H, W, C)
