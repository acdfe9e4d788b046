"""torch.nn.utils.rnn's padding helpers: pad_sequence stacks variable-length sequences (L_i, *)
into one (L_max, B, *) tensor (or (B, L_max, *) with batch_first), padded at the end (or the
start, padding_side='left'); unpad_sequence undoes it given the lengths. Both are composed from
pad and stack, so gradients flow back to each sequence. (PackedSequence is not supported: the
recurrent layers refuse it.)"""
from __future__ import annotations

from ...ops import pad, stack
from ...tensor import Tensor


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
