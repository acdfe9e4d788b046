"""ChannelShuffle (PyTorch's torch/nn/modules/channelshuffle.py): the channels of (N, C, *)
shuffled in groups (F.channel_shuffle)."""
from __future__ import annotations

from .. import functional as F
from ..module import Module


class ChannelShuffle(Module):
    """Shuffles the channels of (N, C, *) in `groups` groups (F.channel_shuffle)."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
