"""Dropout modules (PyTorch's torch/nn/modules/dropout.py): Dropout, Dropout1d/2d/3d,
AlphaDropout and FeatureAlphaDropout, each around its functional form."""
from __future__ import annotations

from .. import functional as F
from ..module import Module


class Dropout(Module):
    """The dropout modules differ only in the functional form they call (`_function`)."""
    _function = staticmethod(F.dropout)

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return self._function(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    """Channel-wise dropout: zeroes whole channels of (N, C, L) or (C, L) input."""
    _function = staticmethod(F.dropout1d)


class Dropout2d(Dropout):
    """Channel-wise dropout: zeroes whole channels of (N, C, H, W) or (C, H, W) input."""
    _function = staticmethod(F.dropout2d)


class Dropout3d(Dropout):
    """Channel-wise dropout: zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) input."""
    _function = staticmethod(F.dropout3d)


class AlphaDropout(Dropout):
    """Dropout for SELU networks: keeps zero mean and unit variance (F.alpha_dropout)."""
    _function = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(Dropout):
    """alpha dropout of whole channels of (N, C, ...) input (F.feature_alpha_dropout)."""
    _function = staticmethod(F.feature_alpha_dropout)
