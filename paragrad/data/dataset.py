"""PyTorch's datasets: Dataset (map-style), IterableDataset, TensorDataset, Subset,
ConcatDataset, ChainDataset, StackDataset and random_split."""
from __future__ import annotations

import bisect
import math

from ..tensor import Tensor


class Dataset:
    """A map-style dataset: implement __len__ and __getitem__(i). A dataset may also implement
    get_batch(index_tensor), returning the collated batch at once; the DataLoader then uses it
    instead of collating samples one by one (when no custom collate_fn is given)."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")


class TensorDataset(Dataset):
    """Samples are the i-th rows of tensors that share their first dimension."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor")
        n = tensors[0].shape[0]
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset: expected Tensors, got {type(t).__name__}")
            if t.shape[0] != n:
                raise ValueError(f"TensorDataset: size mismatch between tensors "
                                 f"({[tuple(x.shape) for x in tensors]})")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def get_batch(self, indices):
        """A whole batch with one gather per tensor (the DataLoader's fast path)."""
        return tuple(t[indices] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class IterableDataset(Dataset):
    """A stream of samples: implement __iter__. A DataLoader batches consecutive samples."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)

    def __getattr__(self, name):
        # the DataLoader's one-gather batches, when the underlying dataset has them
        if name == "get_batch" and hasattr(self.__dict__.get("dataset"), "get_batch"):
            return self._get_batch
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _get_batch(self, idx):
        index = self.__dict__.get("_index_tensor")
        if index is None:
            from ..ops.creation import tensor
            index = self.__dict__["_index_tensor"] = tensor(self.indices)
        return self.dataset.get_batch(index[idx])


class ConcatDataset(Dataset):
    """Several map-style datasets one after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        d = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[d - 1] if d else 0
        return self.datasets[d][index - start]


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping Subsets of the given lengths (or fractions summing to 1,
    whose remainders go one each to the first subsets, as PyTorch), in a random order drawn
    from `generator`."""
    from ..ops.creation import randperm
    from .sampler import index_device
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, f in enumerate(lengths):
            if not 0 <= f <= 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = randperm(n, generator=generator, device=index_device(generator)).tolist()
    out, start = [], 0
    for k in lengths:
        out.append(Subset(dataset, order[start:start + k]))
        start += k
    return out


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


class StackDataset(Dataset):
    """Datasets of one length side by side: sample i is the tuple (positional) or dict (keyword)
    of their i-th samples."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        self.datasets = args or kwargs
        lengths = {len(d) for d in (args or kwargs.values())}
        if len(lengths) != 1:
            raise ValueError("Size mismatch between datasets")
        self._length = lengths.pop()

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length
