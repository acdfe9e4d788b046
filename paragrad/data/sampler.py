"""Samplers (PyTorch's torch.utils.data samplers): which dataset indices a DataLoader visits,
in which order, and how they group into batches."""
from __future__ import annotations

import math

from ..dtypes import float64
from ..ops import multinomial
from ..ops.creation import randint, randperm, tensor
from ..random import Generator
from ..tensor import Tensor


CHUNK = 32      # indices drawn per call by the samplers that draw with replacement (PyTorch's)


def index_device(generator):
    """Where index draws happen: the generator's device, else the CPU (not pg.set_default_device's:
    indices are read on the host)."""
    return generator.device if generator is not None else "cpu"


class Sampler:
    """An iterable of dataset indices; subclasses implement __iter__ (and __len__ if known)."""

    def __iter__(self):
        raise TypeError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    """The indices 0, 1, ..., len(data_source) - 1 in order (a DataLoader's sampler without
    shuffle), as torch.utils.data.SequentialSampler."""
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new random order every pass, drawn from `generator` (else the default generator):
    a permutation, or num_samples draws with replacement."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        """Lazily, as PyTorch: with replacement `CHUNK` draws at a time, else one permutation
        at a time (more samples than the dataset: whole permutations, then a cut), so that
        num_samples=int(1e10) costs nothing up front."""
        n, k, dev = len(self.data_source), self.num_samples, index_device(self.generator)
        if self.replacement:
            for start in range(0, k, CHUNK):
                yield from randint(0, n, (min(CHUNK, k - start),), generator=self.generator, device=dev).tolist()
            return
        for start in range(0, k, n):
            yield from randperm(n, generator=self.generator, device=dev)[:k - start].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a new random order every pass."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = list(indices), generator

    def __iter__(self):
        order = randperm(len(self.indices), generator=self.generator, device=index_device(self.generator))
        return iter([self.indices[i] for i in order.tolist()])

    def __len__(self):
        return len(self.indices)


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of batch_size (the last one shorter unless
    drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probability proportional to weights (with replacement
    by default), a new draw every pass."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = weights.detach().to(float64) if isinstance(weights, Tensor) else tensor(weights, dtype=float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights, self.num_samples = w, num_samples
        self.replacement, self.generator = replacement, generator

    def __iter__(self):
        """Lazily: with replacement CHUNK draws at a time (PyTorch draws all num_samples at
        once); without, at most len(weights) indices exist anyway."""
        if not self.replacement:
            yield from multinomial(self.weights, self.num_samples, False, generator=self.generator).tolist()
            return
        for start in range(0, self.num_samples, CHUNK):
            yield from multinomial(self.weights, min(CHUNK, self.num_samples - start), True,
                                   generator=self.generator).tolist()

    def __len__(self):
        return self.num_samples


class DistributedSampler(Sampler):
    """The share of a dataset one of num_replicas processes reads: every num_replicas-th index
    from `rank`, after an optional shuffle seeded by seed + epoch (call set_epoch each epoch so
    the replicas shuffle alike and differently per epoch). Without drop_last the order is
    padded by repeating its start so every replica gets the same count. num_replicas and rank
    default to the process group's world size and rank (paragrad.distributed; ValueError, as
    torch, when neither is given nor a group initialized)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            from .. import distributed
            if num_replicas is None:
                num_replicas = distributed.get_world_size()
            if rank is None:
                rank = distributed.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = randperm(n, generator=Generator().manual_seed(self.seed + self.epoch), device="cpu").tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            pad = self.total_size - len(indices)
            indices += (indices * math.ceil(pad / len(indices)))[:pad] if pad > 0 else []
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch
