"""Padding modules (PyTorch's ZeroPad/ConstantPad/ReflectionPad/ReplicationPad/CircularPad for
1-D, 2-D and 3-D inputs), each F.pad with its mode; an int pads every side by that amount."""
from __future__ import annotations

from .. import functional as F
from ..module import Module


class _PadNd(Module):
    mode, dims = "constant", 1

    def __init__(self, padding, value=0.0):
        super().__init__()
        n = 2 * self.dims
        self.padding = (padding,) * n if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != n:
            raise ValueError(f"{type(self).__name__}: expected padding of {n} ints, got {padding!r}")
        self.value = value

    def forward(self, x):
        return F.pad(x, self.padding, self.mode, self.value if self.mode == "constant" else None)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


def _pad_class(name, base, mode, dims):
    cls = type(name, (base,), {"mode": mode, "dims": dims, "__doc__": f"F.pad(x, padding, '{mode}') "
                               f"over the last {dims} dim{'s' if dims > 1 else ''}."})
    cls.__module__ = __name__
    return cls


ConstantPad1d = _pad_class("ConstantPad1d", _ConstantPadNd, "constant", 1)
ConstantPad2d = _pad_class("ConstantPad2d", _ConstantPadNd, "constant", 2)
ConstantPad3d = _pad_class("ConstantPad3d", _ConstantPadNd, "constant", 3)
ReflectionPad1d = _pad_class("ReflectionPad1d", _PadNd, "reflect", 1)
ReflectionPad2d = _pad_class("ReflectionPad2d", _PadNd, "reflect", 2)
ReflectionPad3d = _pad_class("ReflectionPad3d", _PadNd, "reflect", 3)
ReplicationPad1d = _pad_class("ReplicationPad1d", _PadNd, "replicate", 1)
ReplicationPad2d = _pad_class("ReplicationPad2d", _PadNd, "replicate", 2)
ReplicationPad3d = _pad_class("ReplicationPad3d", _PadNd, "replicate", 3)
CircularPad1d = _pad_class("CircularPad1d", _PadNd, "circular", 1)
CircularPad2d = _pad_class("CircularPad2d", _PadNd, "circular", 2)
CircularPad3d = _pad_class("CircularPad3d", _PadNd, "circular", 3)


class _ZeroPadNd(_PadNd):
    """ConstantPad with value 0 (PyTorch prints only the padding)."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)


ZeroPad1d = _pad_class("ZeroPad1d", _ZeroPadNd, "constant", 1)
ZeroPad2d = _pad_class("ZeroPad2d", _ZeroPadNd, "constant", 2)
ZeroPad3d = _pad_class("ZeroPad3d", _ZeroPadNd, "constant", 3)
