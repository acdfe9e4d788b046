"""PackedSequence (torch.nn.utils.rnn's): a batch of variable-length sequences stored without
padding, step by step. The batch is sorted by decreasing length, so step t holds the first
batch_sizes[t] sequences: data (sum(batch_sizes), *) is step 0's rows, then step 1's, and so on.
sorted_indices maps the sorted order back to the caller's batch (None: it was sorted already),
unsorted_indices is its inverse.

pack_padded_sequence and pad_packed_sequence move between that form and a padded batch (rnn.py's
pack_sequence and unpack_sequence between it and a list of sequences). Each move is one gather
(index_select) whose index the host computes from the lengths, so gradients flow back to the
padded input or the packed data, and the recurrent layers (nn.RNN, nn.LSTM, nn.GRU) use the same
two gathers (pack_rows, unpack_rows) to run a packed batch in its padded form.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ... import dtypes as dt
from ...autograd import rename
from ...ops import arange, cat, empty, full, tensor
from ...ops.indexing.index_bounds import inherit
from ...tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence"]


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """data (sum(batch_sizes), *) on any device; batch_sizes an int64 CPU tensor, one entry per
    step; sorted_indices / unsorted_indices int64 on data's device, or None. Made by
    pack_padded_sequence and pack_sequence, not by hand; PackedSequence(data, batch_sizes,
    sorted_indices) fills in unsorted_indices as torch's does."""
    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:     # PackedSequence((data, batch_sizes), ...)
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never "
                             "be created manually. They should be instantiated by functions like "
                             "pack_sequence and pack_padded_sequences in nn.utils.rnn.")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """data.to(*args, **kwargs); the indices follow data to its device, batch_sizes stays
        on the CPU. self where data is unchanged."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = lambda t: None if t is None else t.to(data.device)       # noqa: E731
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cuda(self, device=None):
        return self.to(device if device is not None and not isinstance(device, int) else f"cuda:{device or 0}")

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dt.float64)

    def float(self):
        return self.to(dt.float32)

    def half(self):
        return self.to(dt.float16)

    def long(self):
        return self.to(dt.int64)

    def int(self):
        return self.to(dt.int32)

    def short(self):
        return self.to(dt.int16)

    def char(self):
        return self.to(dt.int8)

    def byte(self):
        return self.to(dt.uint8)

    @property
    def is_cuda(self):
        """Whether data is on a CUDA device."""
        return self.data.is_cuda


def invert_permutation(permutation):
    """The inverse of a 1-D permutation tensor (None stays None): out[permutation[i]] = i."""
    if permutation is None:
        return None
    out = empty(permutation.shape, dtype=permutation.dtype, device=permutation.device)
    out.scatter_(0, permutation, arange(permutation.numel(), dtype=permutation.dtype, device=permutation.device))
    return inherit(out, permutation)    # (the same values: a known range stays known, no device read)


# ---- the gather indices, computed on the host from the batch sizes ------------------------------

def _starts(batch_sizes):
    """Each step's first row in packed data."""
    return np.concatenate([[0], np.cumsum(batch_sizes)[:-1]]).astype(np.int64)


def packed_positions(batch_sizes, steps, batch_first, order=None):
    """(sum(batch_sizes),) int64: for each packed row (step t, sorted entry i), its row in the
    padded tensor flattened to (steps * B, *) ((B * steps, *) with batch_first). order[i] is the
    padded column of sorted entry i (None: i itself)."""
    sizes = np.asarray(batch_sizes, dtype=np.int64)
    batch = int(sizes[0])
    t = np.repeat(np.arange(len(sizes)), sizes)                     # each packed row's step
    i = np.arange(len(t)) - _starts(sizes)[t]                       # and its sorted entry
    col = i if order is None else np.asarray(order, dtype=np.int64)[i]
    return col * steps + t if batch_first else t * batch + col


def padded_sources(batch_sizes, steps, batch_first, fill, order=None):
    """(steps * B,) int64: for each position of the padded (steps, B) ((B, steps) with
    batch_first) batch, its packed row, or `fill` past its sequence's end. order[j] is the
    sorted entry that padded column j shows (None: j itself)."""
    sizes = np.asarray(batch_sizes, dtype=np.int64)
    batch, n = int(sizes[0]), len(sizes)
    t = np.arange(steps)[:, None]                                   # (steps, 1)
    i = (np.arange(batch) if order is None else np.asarray(order, dtype=np.int64))[None, :]   # (1, B)
    per_step = np.concatenate([sizes, np.zeros(steps - n, np.int64)])
    first = np.concatenate([_starts(sizes), np.zeros(steps - n, np.int64)])
    src = np.where(i < per_step[t], first[t] + i, fill)             # (steps, B)
    return (src.T if batch_first else src).reshape(-1)


def _index(values, device):
    return tensor(np.ascontiguousarray(values, dtype=np.int64), dtype=dt.int64, device=device)


def _lengths_of(batch_sizes):
    """Each sorted entry's length, from the batch sizes."""
    sizes = np.asarray(batch_sizes, dtype=np.int64)
    return (sizes[None, :] > np.arange(int(sizes[0]))[:, None]).sum(1)


def pack_rows(padded, batch_sizes, batch_first=False, order=None):
    """padded (steps, B, *) ((B, steps, *) with batch_first) -> packed data (sum(batch_sizes), *),
    one gather; order as packed_positions's."""
    steps = padded.shape[1 if batch_first else 0]
    flat = padded.reshape((-1,) + tuple(padded.shape[2:]))
    return flat.index_select(0, _index(packed_positions(batch_sizes, steps, batch_first, order), padded.device))


def unpack_rows(data, batch_sizes, steps=None, batch_first=False, padding_value=None, order=None):
    """packed data (sum(batch_sizes), *) -> padded (steps, B, *) ((B, steps, *) with batch_first),
    one gather. Past a sequence's end: padding_value, or (None) some row of data, for a caller
    that ignores those positions (the recurrent layers)."""
    steps = len(batch_sizes) if steps is None else steps
    batch, trailing = int(batch_sizes[0]), tuple(data.shape[1:])
    fill = 0
    if padding_value is not None and (steps > len(batch_sizes) or batch_sizes[-1] < batch):
        fill = data.shape[0]        # a row of padding_value, appended
        data = cat([data, full((1,) + trailing, padding_value, dtype=data.dtype, device=data.device)], 0)
    idx = padded_sources(batch_sizes, steps, batch_first, fill, order)
    out = data.index_select(0, _index(idx, data.device))
    return out.reshape(((batch, steps) if batch_first else (steps, batch)) + trailing)


# ---- torch's functions ---------------------------------------------------------------------------

def _host_lengths(lengths):
    """lengths (a CPU tensor or a sequence of ints) as an int64 NumPy vector, with torch's checks."""
    if isinstance(lengths, Tensor):
        if lengths.device.type != "cpu" or lengths.ndim != 1:
            where = lengths.device.type if lengths.device.type == "cpu" else str(lengths.device)
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.ndim}D {where} Long tensor")
        return np.asarray(lengths.to(dt.int64).tolist(), dtype=np.int64)
    values = np.asarray(lengths, dtype=np.float64 if len(lengths) == 0 else None)
    if values.ndim != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {values.ndim}D "
                           f"cpu Long tensor")
    return values.astype(np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """input (T, B, *) ((B, T, *) with batch_first) holding sequences of the given lengths ->
    PackedSequence. With enforce_sorted the lengths must decrease; else the batch is sorted and
    sorted_indices records how. Gradients flow back to input."""
    lengths = _host_lengths(lengths)
    if input.ndim < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    batch_dim = 0 if batch_first else 1
    batch, steps = input.shape[batch_dim], input.shape[1 - batch_dim]
    order = None
    if not enforce_sorted:
        order = np.argsort(-lengths, kind="stable")                 # (ties keep their order)
        lengths = lengths[order]
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={batch})")
    if lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in "
                           "'lengths' that is <= 0")
    if np.any(lengths[:-1] < lengths[1:]):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                           "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                           "pack_sequence to sidestep this requirement if you do not need ONNX "
                           "exportability.")
    if lengths[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a length of {int(lengths[0])} exceeds the input's "
                           f"{steps} steps (input shape {tuple(input.shape)})")
    batch_sizes = (lengths[None, :] > np.arange(int(lengths[0]))[:, None]).sum(1)     # (L,)
    data = rename(pack_rows(input, batch_sizes, batch_first, order), "PackPaddedSequenceBackward0")
    sorted_indices = unsorted_indices = None
    if order is not None:           # both from the host: their ranges are known (no device reads)
        sorted_indices, unsorted_indices = _index(order, input.device), _index(np.argsort(order), input.device)
    return PackedSequence(data, tensor(batch_sizes, dtype=dt.int64, device="cpu"), sorted_indices,
                          unsorted_indices)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """PackedSequence -> (padded (T, B, *) ((B, T, *) with batch_first), lengths int64 CPU), the
    batch in the order it had before packing; T is the longest length, or total_length."""
    batch_sizes = sequence.batch_sizes.tolist()
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in "
                             f"input, but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    lengths = _lengths_of(batch_sizes)
    order = None
    if sequence.unsorted_indices is not None:   # (a host read, as torch's lengths[unsorted.cpu()])
        order = np.asarray(sequence.unsorted_indices.tolist(), dtype=np.int64)
        lengths = lengths[order]
    padded = unpack_rows(sequence.data, batch_sizes, steps, batch_first, float(padding_value), order)
    # torch's last step: the unsort, else a transpose to batch_first, else the copy into padding
    last = "IndexSelectBackward0" if order is not None else "TransposeBackward0" if batch_first else "CopySlices"
    return rename(padded, last), tensor(lengths, dtype=dt.int64, device="cpu")
