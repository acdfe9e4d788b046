"""Random token ids for throughput runs (`paragrad train random-tokens`): ids drawn uniformly from
[0, vocab_size), with no text behind them, no tokenizer and no file.

    from paragrad.data.random_tokens import random_token_data
    tokenizer, train, val = random_token_data(50304, seed=0)    # tokenizer None: ids of no text
    tokens = train.tokens_on_device("cuda")                      # (10_000_000,) int64

A run on them measures speed only: nothing can predict a uniform draw, so no model's expected
loss goes below ln(vocab_size), the uniform guess's (a large model can push its train loss lower
only by memorizing its train split).

The ids are drawn on the host by NumPy from a stream keyed by the seed and the split, apart from
paragrad's generators: the same ids on every device and rank whatever the run's own generators
draw, and again on --resume. Drawing 11M ids takes about 0.1 s; a run uploads them once.
"""
from __future__ import annotations

import math

import numpy as np

from ..ops.creation import from_numpy
from .text_corpora import LanguageModelData

TRAIN_TOKENS, VAL_TOKENS = 10_000_000, 1_000_000
_STREAM = 0x72616E646F6D        # "random": this module's own NumPy stream
_SPLITS = ("train", "val")


class RandomTokens:
    """`count` token ids uniform in [0, vocab_size) of split `split`, drawn from `seed` whenever
    they are asked for (nothing is held between calls); len() is count."""

    def __init__(self, vocab_size, count, seed, split):
        if split not in _SPLITS:
            raise ValueError(f"RandomTokens: split {split!r}, expected one of {', '.join(_SPLITS)}")
        self.vocab_size, self.count, self.seed, self.split = vocab_size, count, seed, split

    def __len__(self):
        return self.count

    def numpy(self) -> np.ndarray:
        """The ids, in the narrowest unsigned dtype that holds them (NumPy draws 10M uint16 in
        0.1 s, int64 ten times slower)."""
        # (a negative seed wraps into the 64 bits NumPy's seeding takes)
        rng = np.random.default_rng([self.seed % 2**64, _STREAM, _SPLITS.index(self.split)])
        dtype = next(t for t in (np.uint16, np.uint32, np.uint64) if self.vocab_size - 1 <= np.iinfo(t).max)
        return rng.integers(0, self.vocab_size, self.count, dtype=dtype)

    def tokens_on_device(self, device="cpu"):
        """The ids as one int64 tensor on `device`, for random_windows (as TokenDataset's)."""
        return from_numpy(self.numpy().astype(np.int64)).to(device)

    def __repr__(self):
        return f"RandomTokens({self.split}, {self.count} ids in [0, {self.vocab_size}), seed {self.seed})"


def random_token_data(vocab_size, seed=0, train_tokens=TRAIN_TOKENS, val_tokens=VAL_TOKENS) -> LanguageModelData:
    """(None, train, val): no tokenizer, since the ids stand for no text."""
    if vocab_size < 1:
        raise ValueError(f"random_token_data(): vocab_size must be at least 1, got {vocab_size}")
    return LanguageModelData(None, RandomTokens(vocab_size, train_tokens, seed, "train"),
                             RandomTokens(vocab_size, val_tokens, seed, "val"))


def said_plainly(data) -> str:
    """The line a run on random tokens prints first: what they are and what the run can show."""
    train, val = data.train, data.val
    return (f"random tokens: {len(train):,} train and {len(val):,} val ids drawn uniformly from "
            f"[0, {train.vocab_size}) with seed {train.seed}, no text and no tokenizer; this run "
            f"measures speed only: no model can predict them, so the loss cannot go below "
            f"ln {train.vocab_size} = {math.log(train.vocab_size):.4f} (the train loss only by "
            f"memorizing its {len(train):,} ids)")
