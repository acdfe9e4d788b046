"""torchvision.transforms' Compose, ToTensor, ToPILImage, Normalize, Lambda, Resize and
CenterCrop: one image at a time, as torchvision's (paragrad.data.transforms holds paragrad's
batched augmentations, a different thing)."""
from __future__ import annotations

import enum

import numpy as np

from ..ops.creation import from_numpy, tensor
from ..tensor import Tensor


class Compose:
    """Apply each transform in turn: Compose([ToTensor(), Normalize(mean, std)])."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        return type(self).__name__ + "(" + "".join(f"\n    {t}" for t in self.transforms) + "\n)"


class ToTensor:
    """A PIL Image or a NumPy array (H, W) or (H, W, C) -> a (C, H, W) tensor; uint8 values
    (a PIL Image's of mode L, RGB, ...) become float32 in [0, 1], other dtypes are kept as they are."""

    def __call__(self, pic):
        return to_tensor(pic)

    def __repr__(self):
        return f"{type(self).__name__}()"


def to_tensor(pic):
    """ToTensor's conversion (torchvision.transforms.functional.to_tensor)."""
    if isinstance(pic, np.ndarray):
        array = pic
    elif type(pic).__module__.startswith("PIL."):       # not imported here: Pillow is optional
        array = np.array(pic)
        if pic.mode == "1":         # torchvision: a bilevel image reads as 0 and 255
            array = array.astype(np.uint8) * 255
    else:
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if array.ndim not in (2, 3):
        raise ValueError(f"pic should be 2/3 dimensional. Got {array.ndim} dimensions.")
    chw = array[:, :, None].transpose(2, 0, 1) if array.ndim == 2 else array.transpose(2, 0, 1)
    if chw.dtype == np.uint8:
        return from_numpy(chw.astype(np.float32) / np.float32(255))
    return from_numpy(np.ascontiguousarray(chw))


class ToPILImage:
    """A (C, H, W) tensor or an (H, W, C) NumPy array -> a PIL Image (Pillow): floats are taken
    as [0, 1] and scaled to bytes (`mul(255).byte()`, as torchvision; mode "F" keeps one float
    channel); 1 channel makes mode L, 2 LA, 3 RGB, 4 RGBA. Another mode= converts the image to
    it (Pillow's convert), where torchvision reinterprets the channels for a few modes."""

    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return to_pil_image(pic, self.mode)

    def __repr__(self):
        return f"{type(self).__name__}()" if self.mode is None else f"{type(self).__name__}(mode={self.mode})"


_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}       # (what Pillow makes of uint8 arrays)


def to_pil_image(pic, mode=None):
    """ToPILImage's conversion (torchvision.transforms.functional.to_pil_image)."""
    from PIL import Image       # (optional: only this transform needs Pillow)
    if isinstance(pic, Tensor):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        if pic.ndim == 2:
            pic = pic.unsqueeze(0)
        if pic.is_floating_point() and mode != "F":
            pic = pic.mul(255).byte()
        array = pic.detach().cpu().numpy().transpose(1, 2, 0)          # (H, W, C)
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        array = pic[:, :, None] if pic.ndim == 2 else pic
    else:
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    channels = array.shape[2]
    if channels not in _MODES:
        raise ValueError(f"pic should not have > 4 channels. Got {channels} channels.")
    image = Image.fromarray(np.ascontiguousarray(array[:, :, 0] if channels == 1 else array))
    return image if mode is None or image.mode == mode else image.convert(mode)


class Normalize:
    """(tensor - mean[c]) / std[c] for each channel c of a (..., C, H, W) float tensor; a mean or
    std of one value applies to every channel. Returns a new tensor (inplace=True writes the input)."""

    def __init__(self, mean, std, inplace=False):
        self.mean, self.std, self.inplace = mean, std, inplace

    def __call__(self, x):
        return normalize(x, self.mean, self.std, self.inplace)

    def __repr__(self):
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


def normalize(x, mean, std, inplace=False):
    """Normalize's arithmetic (torchvision.transforms.functional.normalize)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(x)}")
    if not x.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {x.dtype}.")
    if x.ndim < 3:
        raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                         f"{tuple(x.shape)}")
    m = tensor(mean, dtype=x.dtype, device=x.device).reshape(-1, 1, 1)      # (C, 1, 1) or (1, 1, 1)
    s = tensor(std, dtype=x.dtype, device=x.device).reshape(-1, 1, 1)
    if bool((s == 0).any()):
        raise ValueError(f"std evaluated to zero after conversion to {x.dtype}, leading to division by zero.")
    if inplace:
        return x.sub_(m).div_(s)
    return (x - m) / s


class Lambda:
    """A user function as a transform: Lambda(lambda x: x.flatten())."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return f"{type(self).__name__}()"


class InterpolationMode(enum.Enum):
    """torchvision's interpolation modes (Resize's interpolation=)."""
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


class Resize:
    """Resize(size, interpolation=BILINEAR, max_size=None, antialias=True): an int matches the
    shorter side (the longer keeps the aspect ratio, at most max_size), (h, w) sets both. A PIL
    Image is resized by Pillow, as torchvision does; a (..., H, W) tensor by F.interpolate
    (nearest, bilinear or bicubic), where shrinking with antialias=True, torchvision's default
    for tensors, is refused by name (paragrad's interpolate has no antialiasing)."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        if not (isinstance(size, int) or (isinstance(size, (list, tuple)) and len(size) in (1, 2))):
            raise TypeError(f"Size should be int or sequence of length 1 or 2. Got {size!r}")
        self.size, self.max_size, self.antialias = size, max_size, antialias
        self.interpolation = InterpolationMode(interpolation.value if isinstance(interpolation, InterpolationMode)
                                               else interpolation)

    def __call__(self, img):
        return resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self):
        return (f"{type(self).__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize's arithmetic (torchvision.transforms.functional.resize)."""
    pil = type(img).__module__.startswith("PIL.")
    if not pil and not isinstance(img, Tensor):
        raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")
    h, w = (img.size[1], img.size[0]) if pil else tuple(img.shape[-2:])
    new_h, new_w = _resized(h, w, size, max_size)
    if pil:
        if (new_h, new_w) == (h, w):
            return img
        from PIL import Image
        mode = {"nearest-exact": "nearest"}.get(interpolation.value, interpolation.value)
        return img.resize((new_w, new_h), getattr(Image.Resampling, mode.upper()))
    if interpolation.value not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        raise ValueError(f"Resize: a tensor takes nearest, bilinear or bicubic interpolation, not {interpolation.value}")
    if antialias and interpolation.value in ("bilinear", "bicubic") and (new_h < h or new_w < w):
        raise NotImplementedError(f"Resize: shrinking a tensor image ({h}x{w} to {new_h}x{new_w}) with "
                                  f"antialias=True is not supported by paragrad; pass antialias=False, or "
                                  f"resize the PIL Image before ToTensor")
    from ..nn.functional import interpolate
    x = img.reshape(-1, 1, h, w)            # (every leading dim a batch of one-channel images)
    y = interpolate(x.float() if not img.is_floating_point() else x, size=(new_h, new_w), mode=interpolation.value,
                    align_corners=False if interpolation.value in ("bilinear", "bicubic") else None)
    y = y.round().to(img.dtype) if not img.is_floating_point() else y
    return y.reshape(*img.shape[:-2], new_h, new_w)


def _resized(h, w, size, max_size):
    """torchvision's output size: (new_h, new_w)."""
    if isinstance(size, (list, tuple)) and len(size) == 2:
        return int(size[0]), int(size[1])
    requested = size if isinstance(size, int) else size[0]
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = requested, int(requested * long / short)
    if max_size is not None:
        if max_size <= requested:
            raise ValueError(f"max_size = {max_size} must be strictly greater than the requested size for the "
                             f"smaller edge size = {size}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    return (new_long, new_short) if w <= h else (new_short, new_long)


class CenterCrop:
    """CenterCrop(size): the central (h, w) region (an int: square), the offsets rounded as
    torchvision's; a crop larger than the image pads it with zeros first. PIL Images and
    (..., H, W) tensors."""

    def __init__(self, size):
        self.size = (size, size) if isinstance(size, int) else (tuple(size) * 2 if len(size) == 1 else tuple(size))

    def __call__(self, img):
        return center_crop(img, self.size)

    def __repr__(self):
        return f"{type(self).__name__}(size={self.size})"


def center_crop(img, size):
    """CenterCrop's arithmetic (torchvision.transforms.functional.center_crop)."""
    ch, cw = (size, size) if isinstance(size, int) else size
    pil = type(img).__module__.startswith("PIL.")
    if not pil and not isinstance(img, Tensor):
        raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")
    h, w = (img.size[1], img.size[0]) if pil else tuple(img.shape[-2:])
    # torchvision pads a too-small image with zeros, the odd one at the bottom / right, then
    # crops the middle: the image's offset in the crop is the top / left padding
    top = -((ch - h) // 2) if ch > h else int(round((h - ch) / 2.0))
    left = -((cw - w) // 2) if cw > w else int(round((w - cw) / 2.0))
    if pil:         # (Pillow fills a crop box reaching past the image with zeros)
        return img.crop((left, top, left + cw, top + ch))
    if ch > h or cw > w:
        from ..nn.functional import pad
        pt, pl = max(-top, 0), max(-left, 0)
        img = pad(img, (pl, max(left + cw - w, 0), pt, max(top + ch - h, 0)))
        top, left = top + pt, left + pl
    return img[..., top:top + ch, left:left + cw]
