"""DataLoader: batches from a dataset, optionally shuffled by a seeded generator."""
from __future__ import annotations

import numpy as np

from ..ops.creation import tensor
from ..ops.movement.copies import stack
from ..tensor import Tensor
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler


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
    """Iterate over a dataset in batches (PyTorch's arguments, in its order).

    shuffle draws a new permutation every epoch from `generator` (or the default generator),
    so `manual_seed` makes the order reproducible; `sampler` / `batch_sampler` choose the
    indices instead. Datasets with `get_batch` are fetched a batch at a time (one gather per
    tensor) unless a collate_fn was given. An IterableDataset is batched as it streams.

    Batches are always made in this process: the datasets here are in memory and a batch is
    one gather, so num_workers, pin_memory, timeout, worker_init_fn, multiprocessing_context,
    prefetch_factor, persistent_workers and in_order are validated as PyTorch does but change
    nothing (batches always come in order).
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="", in_order=True):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers option should be non-negative; got {num_workers!r}")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable and shuffle not in (None, False):
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                             f"but got shuffle={shuffle}")
        if self._iterable and (sampler is not None or batch_sampler is not None):
            which = "sampler" if sampler is not None else "batch_sampler"
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified {which} option, "
                             f"but got {which}={type(sampler or batch_sampler).__name__}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually "
                                 "exclusive with drop_last")
        elif isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"DataLoader: batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, bool(drop_last))
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, bool(drop_last)
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        self.num_workers, self.pin_memory, self.timeout = num_workers, bool(pin_memory), timeout
        self.worker_init_fn, self.prefetch_factor = worker_init_fn, prefetch_factor
        self.persistent_workers = persistent_workers
        self.collate_fn = collate_fn or (default_collate if batch_size is not None or batch_sampler
                                         is not None else _no_collate)
        self._custom_collate = collate_fn is not None

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)       # a TypeError if the stream has no length, as PyTorch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    def _order(self):
        """This epoch's indices in visiting order (draws the shuffle, as iterating would)."""
        return np.fromiter(iter(self.sampler), dtype=np.int64)

    def __iter__(self):
        if self._iterable:
            yield from self._stream()
            return
        if self.batch_sampler is None:          # batch_size=None: one sample at a time
            for i in self.sampler:
                yield self.collate_fn(self.dataset[i])
            return
        batched = hasattr(self.dataset, "get_batch") and not self._custom_collate
        for idx in self.batch_sampler:
            if batched:
                yield self.dataset.get_batch(tensor(np.asarray(idx, dtype=np.int64), device="cpu"))
            else:
                yield self.collate_fn([self.dataset[int(i)] for i in idx])

    def _stream(self):
        if self.batch_size is None:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)


def _no_collate(sample):
    """batch_size=None: samples pass through (NumPy arrays become tensors, as PyTorch's
    default_convert)."""
    return tensor(sample) if isinstance(sample, np.ndarray) else sample
