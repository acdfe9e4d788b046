"""torch.nn.utils.rnn: variable-length sequences for the recurrent layers.

pad_sequence stacks sequences (L_i, *) into one (L_max, B, *) tensor (or (B, L_max, *) with
batch_first), padded at the end (or the start, padding_side='left'); unpad_sequence undoes it
given the lengths. pack_sequence and unpack_sequence do the same with a PackedSequence, whose
class and the moves between it and a padded batch (pack_padded_sequence, pad_packed_sequence)
live in packed_sequence.py. nn.RNN, nn.LSTM and nn.GRU take a PackedSequence as input. Every
function composes differentiable ops, so gradients flow back to each sequence."""
from __future__ import annotations

from ...ops import pad, stack
from ...tensor import Tensor
from .packed_sequence import (PackedSequence, invert_permutation, pack_padded_sequence,  # noqa: F401
                              pad_packed_sequence)

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences.unbind(0)) if isinstance(sequences, Tensor) else list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    for s in sequences:
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: every sequence must have the trailing shape {list(trailing)} of the "
                               f"first, got {list(s.shape)}")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = longest - s.shape[0]
        widths = [0, 0] * len(trailing) + ([0, extra] if padding_side == "right" else [extra, 0])
        padded.append(pad(s, widths, value=padding_value) if extra else s)
    return stack(padded, 0 if batch_first else 1)                  # (B, L, *) or (L, B, *)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The sequences of a right-padded batch, each cut to its length."""
    batch = padded_sequences if batch_first else padded_sequences.transpose(0, 1)   # (B, L, *)
    return [batch[i, :int(n)] for i, n in enumerate(lengths.tolist() if isinstance(lengths, Tensor) else lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """A list of sequences (L_i, *) -> PackedSequence: pad_sequence, then pack_padded_sequence.
    With enforce_sorted the lengths must decrease."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """PackedSequence -> the list of its sequences (L_i, *), in the order they were packed."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
