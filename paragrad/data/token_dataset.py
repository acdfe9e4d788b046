"""Random (B, T) windows of a token stream for language-model training, as nanoGPT's get_batch:
x holds T consecutive tokens from a random offset, y the same window one token later (the
token each position should predict).

Two ways to draw them: TokenDataset.get_batch gathers on the host from a memory-mapped token
file and uploads the batch; random_windows gathers on the device from the whole stream held
there (TokenDataset.tokens_on_device), with no host work, so a pg.jit step can draw its own.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..ops.creation import arange, from_numpy, randint
from ..ops.indexing.index_bounds import remember
from .token_files import TOKEN_DTYPE


def _check_long_enough(n, block_size, where):
    if n <= block_size:
        raise ValueError(f"{where}: a window of block_size {block_size} and its next token need "
                         f"at least {block_size + 1} tokens, got {n}")


class TokenDataset:
    """The token ids of a file written by prepare_tokens (uint16), memory-mapped read-only, so
    the file is never read whole. len() is the number of tokens."""

    def __init__(self, path):
        self.path = Path(path)
        # (NumPy can't map an empty file; a tiny corpus can give an empty val.bin)
        empty = self.path.stat().st_size == 0
        self.tokens = np.zeros(0, TOKEN_DTYPE) if empty else np.memmap(self.path, TOKEN_DTYPE, mode="r")

    def __len__(self):
        return len(self.tokens)

    def get_batch(self, batch_size, block_size, generator=None, device="cpu"):
        """(x, y), int64 tensors of shape (batch_size, block_size) on `device`: for offsets i
        drawn uniformly from [0, len - block_size) by `generator` (a CPU pg.Generator; None:
        the default one), x = tokens[i:i+T] and y = tokens[i+1:i+T+1]."""
        n = len(self.tokens)
        _check_long_enough(n, block_size, f"TokenDataset.get_batch() on {self.path}")
        starts = randint(0, n - block_size, (batch_size, 1), generator=generator).numpy()  # (B, 1)
        windows = np.asarray(self.tokens[starts + np.arange(block_size + 1)], np.int64)   # (B, T+1)
        x = from_numpy(np.ascontiguousarray(windows[:, :-1])).to(device)                 # (B, T)
        y = from_numpy(np.ascontiguousarray(windows[:, 1:])).to(device)                  # (B, T)
        return x, y

    def tokens_on_device(self, device="cpu"):
        """The whole token stream as one int64 tensor on `device`, for random_windows (8 bytes a
        token: 1 GB holds 125M tokens)."""
        return from_numpy(np.asarray(self.tokens, np.int64)).to(device)

    def __repr__(self):
        return f"TokenDataset({str(self.path)!r}, {len(self)} tokens)"


def random_windows(tokens, batch_size, block_size, generator=None):
    """(x, y) of shape (batch_size, block_size), gathered on tokens' device from the 1-D token
    tensor `tokens` as TokenDataset.get_batch does on the host: offsets i uniform in
    [0, len - block_size) drawn by `generator` (a pg.Generator of tokens' device; None: its
    default one), x = tokens[i:i+T], y = tokens[i+1:i+T+1]. Nothing is read back to the host,
    so the draw can be part of a step captured by pg.jit (each replay draws new offsets)."""
    if tokens.ndim != 1:
        raise ValueError(f"random_windows(): expected a 1-D token tensor, got shape {tuple(tokens.shape)}")
    n, dev = tokens.shape[0], tokens.device
    _check_long_enough(n, block_size, "random_windows()")
    starts = randint(0, n - block_size, (batch_size, 1), generator=generator, device=dev)  # (B, 1)
    idx = starts + arange(block_size, device=dev).reshape(1, block_size)                   # (B, T)
    # in bounds by construction: indexing needn't read the indices' range back from the device
    remember(idx, 0, n - 2)
    nxt = remember(idx + 1, 1, n - 1)                                                      # (B, T)
    return tokens[idx], tokens[nxt]
