"""Flatten and Unflatten (PyTorch's torch/nn/modules/flatten.py)."""
from __future__ import annotations

from ..module import Module


class Flatten(Module):
    """Flattens dims start_dim..end_dim into one (by default all but the batch dim);
    as torch.nn.Flatten."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim into the shape unflattened_size; as torch.nn.Unflatten."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, x):
        return x.unflatten(self.dim, tuple(self.unflattened_size))

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
