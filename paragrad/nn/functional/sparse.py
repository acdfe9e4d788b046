"""F's lookups (PyTorch's torch.nn.functional sparse forms): embedding (the op), embedding_bag and
one_hot.

embedding_bag: the sum, mean or max of the embeddings of each bag of indices, without
materializing the (bags, length, dim) tensor of a padded batch. Bags are the rows of a 2-D
input, or the runs of a 1-D input that `offsets` start. Entries equal to padding_idx are left
out of their bag (and of mean's count); an empty bag gives zeros. Composed from differentiable
ops: one embedding lookup of every entry (K, D), then index_add (sum, mean) or scatter_reduce
'amax' (max) into (bags, D). The bag bookkeeping reads input and offsets on the host, as
PyTorch's checks do."""
from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from ...autograd import rename
from ...ops import tensor, zeros
from ...ops.neural.embedding import embedding
from ...tensor import Tensor


_MODES = ("sum", "mean", "max")


def _bags(input, offsets, include_last_offset):
    """-> (flat indices (K,) as numpy, bag of each entry (K,), number of bags)."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                             "of fixed length sequences. However, found offsets of type Tensor")
        b, n = input.shape
        return input.reshape(-1).cpu().numpy(), np.repeat(np.arange(b), n), b
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    flat, starts = input.cpu().numpy(), [int(o) for o in offsets.tolist()]
    if starts and starts[0] != 0:
        raise ValueError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                         f"position 0. However, got {starts[0]}")
    if starts and starts[-1] > len(flat):
        raise ValueError(f"offsets[-1] can not be greater than input's length ({len(flat)}), but got "
                         f"offsets[-1] of {starts[-1]}")
    ends = starts[1:] if include_last_offset else starts[1:] + [len(flat)]
    starts = starts[:len(ends)]
    lengths = np.maximum(np.array(ends, dtype=np.int64) - np.array(starts, dtype=np.int64), 0)
    return flat, np.repeat(np.arange(len(starts)), lengths), len(starts)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """(bags, D): the `mode` reduction of each bag's rows of weight (see the module docstring)."""
    if mode not in _MODES:
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if sparse:
        raise RuntimeError("embedding_bag: sparse=True (sparse gradients) is not supported by paragrad")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}').")
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: per_sample_weights (shape {tuple(per_sample_weights.shape)}) must have "
                         f"the shape of input ({tuple(input.shape)})")
    flat, bag_of, n_bags = _bags(input, offsets, include_last_offset)
    _check_indices(flat, weight.shape[0])
    keep = np.ones(len(flat), bool) if padding_idx is None else flat != padding_idx % weight.shape[0]
    dev = weight.device
    idx = tensor(flat[keep], dtype=dt.int64, device=dev)                             # (K,)
    bag = tensor(bag_of[keep], dtype=dt.int64, device=dev)                           # (K,)
    emb = embedding(idx, weight, None, max_norm, norm_type, scale_grad_by_freq)      # (K, D)
    out = zeros(n_bags, weight.shape[1], dtype=weight.dtype, device=dev)
    if mode == "max":
        res = out.scatter_reduce(0, bag.unsqueeze(1).expand(*emb.shape), emb, "amax", include_self=False)
    else:
        if per_sample_weights is not None:
            psw = per_sample_weights.reshape(-1)[tensor(np.flatnonzero(keep), dtype=dt.int64, device=dev)]
            emb = emb * psw.unsqueeze(1)
        res = out.index_add(0, bag, emb)
        if mode == "mean":
            counts = np.bincount(bag_of[keep], minlength=n_bags).astype(np.float64)
            res = res / tensor(np.maximum(counts, 1), dtype=weight.dtype, device=dev).unsqueeze(1)
    return rename(res, "EmbeddingBagBackward0", weight, per_sample_weights)     # (torch's: one node)


def _check_indices(flat, n):
    """torch's embedding_bag check (a RuntimeError, where embedding raises IndexError), made on
    the host copy the bag bookkeeping already read, before max_norm writes into the weight."""
    bad = np.flatnonzero((flat < 0) | (flat >= n))
    if bad.size:
        i = int(bad[0])
        raise RuntimeError(f"embedding_bag: Index {i} of input takes value {int(flat[i])} which is not "
                           f"in the valid range [0, {n})")


def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding: shape input.shape + (num_classes,), 1 at each index; as
    torch.nn.functional.one_hot (num_classes=-1: max + 1). An empty input with num_classes=-1
    gives a last dim of 0 (torch raises RuntimeError)."""
    if not isinstance(tensor, Tensor) or tensor.dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor "
                           f"(got {getattr(tensor, 'dtype', type(tensor).__name__)})")
    if num_classes == -1:
        num_classes = int(tensor.max()) + 1 if tensor.numel() else 0
    if tensor.numel() and (int(tensor.min()) < 0 or int(tensor.max()) >= num_classes):
        raise RuntimeError(f"one_hot: Class values must be non-negative and smaller than "
                           f"num_classes ({num_classes})")
    out = zeros(tuple(tensor.shape) + (num_classes,), dtype=dt.int64, device=tensor.device)
    return out.scatter(-1, tensor.unsqueeze(-1), 1)
