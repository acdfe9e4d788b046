"""A small convolutional net for MNIST (1x28x28 -> 10 classes), 103,466 parameters."""
from __future__ import annotations

from .. import nn


def _conv_bn_relu(cin, cout):
    # bias is redundant before BatchNorm (its shift absorbs it)
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]


class MNISTCNN(nn.Sequential):
    """conv32-conv32-pool-conv64-pool-conv128, global average pool, linear. Each conv is 3x3,
    padded, followed by BatchNorm and ReLU; pools are 2x2 max pools."""

    def __init__(self, in_channels=1, num_classes=10):
        super().__init__(
            *_conv_bn_relu(in_channels, 32),   # (B, 32, 28, 28)
            *_conv_bn_relu(32, 32),
            nn.MaxPool2d(2),                   # (B, 32, 14, 14)
            *_conv_bn_relu(32, 64),
            nn.MaxPool2d(2),                   # (B, 64, 7, 7)
            *_conv_bn_relu(64, 128),
            nn.AdaptiveAvgPool2d(1),           # (B, 128, 1, 1)
            nn.Flatten(),                      # (B, 128)
            nn.Linear(128, num_classes),
        )
