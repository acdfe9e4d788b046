"""Dataset and TensorDataset (PyTorch's map-style datasets)."""
from __future__ import annotations

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
