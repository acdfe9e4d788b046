"""A multi-layer perceptron for flattened images (MNIST: 784 -> hidden... -> 10)."""
from __future__ import annotations

from .. import nn

_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "silu": nn.SiLU}


class MLP(nn.Sequential):
    """Multi-layer perceptron as an nn.Sequential: Flatten, a Linear and an activation per hidden
    size, then a Linear to num_classes; paragrad's reference model (784 -> 256 -> 128 -> 10, MNIST).
    activation is "relu", "gelu", "tanh" or "silu" (ValueError otherwise)."""

    def __init__(self, in_features=784, hidden=(256, 128), num_classes=10, activation="relu"):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"MLP: unknown activation {activation!r}; expected one of {sorted(_ACTIVATIONS)}")
        layers = [nn.Flatten()]
        sizes = [in_features, *hidden]
        for a, b in zip(sizes, sizes[1:]):
            layers += [nn.Linear(a, b), _ACTIVATIONS[activation]()]
        layers.append(nn.Linear(sizes[-1], num_classes))
        super().__init__(*layers)
