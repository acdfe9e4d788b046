"""DataLoader: batches from a map-style dataset, optionally shuffled by a seeded generator."""
from __future__ import annotations

import numpy as np

from ..ops.creation import randperm, tensor
from ..ops.movement import stack
from ..tensor import Tensor


def default_collate(samples):
    """Stack a list of samples: tensors -> stacked tensor, numbers -> tensor, tuples/lists and
    dicts -> the same structure of collated fields (as PyTorch's default_collate)."""
    first = samples[0]
    if isinstance(first, Tensor):
        return stack(list(samples))
    if isinstance(first, np.ndarray):
        return tensor(np.stack(samples))
    if isinstance(first, (bool, int, float, np.number)):
        return tensor(samples)
    if isinstance(first, str):
        return list(samples)
    if isinstance(first, dict):
        return {k: default_collate([s[k] for s in samples]) for k in first}
    if isinstance(first, (tuple, list)):
        if any(len(s) != len(first) for s in samples):
            raise RuntimeError("default_collate: each element in list of batch should be of equal size")
        cols = [default_collate(list(c)) for c in zip(*samples)]
        return type(first)(cols) if isinstance(first, tuple) and not hasattr(first, "_fields") \
            else (type(first)(*cols) if hasattr(first, "_fields") else cols)
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                    f"lists; found {type(first).__name__}")


class DataLoader:
    """Iterate over a dataset in batches.

    shuffle draws a new permutation every epoch from `generator` (or the default generator),
    so `manual_seed` makes the order reproducible. Datasets with `get_batch` are fetched a
    batch at a time (one gather per tensor) unless a collate_fn was given.
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, collate_fn=None,
                 generator=None, num_workers=0, pin_memory=False):
        """num_workers and pin_memory are accepted for PyTorch compatibility: batches are
        always produced in this process (datasets here are in memory, and a batch is one
        gather), so they change nothing but are validated."""
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers option should be non-negative; got {num_workers!r}")
        if batch_size is None or batch_size <= 0:
            raise ValueError(f"DataLoader: batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, shuffle
        self.drop_last, self.generator = drop_last, generator
        self.num_workers, self.pin_memory = num_workers, bool(pin_memory)
        self.collate_fn = collate_fn or default_collate
        self._custom_collate = collate_fn is not None

    def __len__(self):
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _order(self):
        n = len(self.dataset)
        if self.shuffle:
            return randperm(n, generator=self.generator).numpy()
        return np.arange(n)

    def __iter__(self):
        order = self._order()
        n, bs = len(order), self.batch_size
        stop = n - n % bs if self.drop_last else n
        batched = hasattr(self.dataset, "get_batch") and not self._custom_collate
        for start in range(0, stop, bs):
            idx = order[start:start + bs]
            if batched:
                yield self.dataset.get_batch(tensor(idx))
            else:
                yield self.collate_fn([self.dataset[int(i)] for i in idx])
