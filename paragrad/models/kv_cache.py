"""Key/value caches of a GPT's attention layers, for generation: a growing one (each new token's
keys and values joined on) and a fixed-size one whose shapes never change, for a decode step
captured once as a CUDA graph and replayed for every token."""
from __future__ import annotations

from ..ops import cat, zeros


class KVCache:
    """One attention layer's keys and values for the tokens seen so far, (B, n_head, S, head
    size) each. It grows by concatenation: a context is at most block_size tokens long."""

    def __init__(self):
        self.k = self.v = None

    def __len__(self):
        return 0 if self.k is None else self.k.shape[2]

    def extend(self, k, v):
        """Append the new tokens' k, v (B, nh, T, hs); return the keys and values of all
        tokens so far, (B, nh, S + T, hs) each."""
        if self.k is None:
            self.k, self.v = k, v
        else:
            self.k, self.v = cat([self.k, k], 2), cat([self.v, v], 2)
        return self.k, self.v


class StaticKVCache:
    """One attention layer's keys and values in buffers of `capacity` slots, (B, n_head,
    capacity, head size) each, filled from a KVCache after the prompt has run. Each decode step
    writes one token's k, v at `position` (a (1,) device tensor set by GPT.decode_step, with
    `visible`, the (capacity,) mask of the slots up to it), so nothing is read on the host."""

    def __init__(self, cache, capacity):
        B, nh, _, hs = cache.k.shape
        self.capacity = capacity
        self.k = zeros(B, nh, capacity, hs, dtype=cache.k.dtype, device=cache.k.device)
        self.v = zeros(B, nh, capacity, hs, dtype=cache.v.dtype, device=cache.v.device)
        self.position = self.visible = None
        self.load(cache)

    def load(self, cache):
        """Copy a KVCache's tokens into the first slots, in place (a graph keeps reading these
        buffers); the slots after them keep stale values that `visible` masks out."""
        n = len(cache)
        self.k[:, :, :n] = cache.k
        self.v[:, :, :n] = cache.v

    def extend(self, k, v):
        """Write one token's k, v (B, nh, 1, hs) at `position`; return the whole buffers."""
        self.k[:, :, self.position] = k
        self.v[:, :, self.position] = v
        return self.k, self.v
