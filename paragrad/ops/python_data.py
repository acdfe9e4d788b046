"""How torch.tensor reads nested Python data, for the data NumPy can't turn into a numeric array:
torch's three passes (sizes from the first elements, dtype inference over every element,
then the store that checks each sequence's length), so bad data raises torch's exception type
from the same pass, and ragged data whose size is empty gives torch's empty tensor.
`paragrad.tensor` converts good data through NumPy and comes here only when that fails."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_MAX_DIMS = 64      # torch's limit; a non-empty str is its own first element, so it hits it


def nested_data_array(data):
    """The empty NumPy array torch makes of data whose sizes hold a 0, else the TypeError /
    ValueError / RuntimeError torch raises for it; None when torch's rules find no fault (the
    caller then reports NumPy's)."""
    if isinstance(data, str):
        raise TypeError("tensor(): new(): invalid data type 'str'")
    sizes = _sizes(data)
    kind = _infer(data)
    if 0 in sizes:
        return np.zeros(sizes, dtype=kind)
    _check_store(data, sizes, 0)
    return None


def _shaped(x):
    """Arrays and tensors inside a list: they bring their own shape and dtype."""
    from ..tensor import Tensor
    return isinstance(x, (np.ndarray, Tensor))


def _is_sequence(x):
    return isinstance(x, Sequence) or _shaped(x)


def _sizes(data):
    """torch's compute_sizes: the lengths along the first elements."""
    sizes, x = [], data
    while _is_sequence(x):
        if _shaped(x):
            return sizes + list(x.shape)
        sizes.append(len(x))
        if len(sizes) > _MAX_DIMS:
            raise ValueError(f"tensor(): too many dimensions '{type(x).__name__}'")
        if not len(x):
            break
        x = x[0]
    return sizes


_KINDS = (np.dtype(np.bool_), np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.complex128))


def _infer(x):
    """torch's infer_scalar_type over every element -> a NumPy dtype of the same kind."""
    if isinstance(x, (bool, np.bool_)):
        return _KINDS[0]
    if isinstance(x, int):
        return _KINDS[1]
    if isinstance(x, float):
        return _KINDS[2]
    if isinstance(x, complex):
        return _KINDS[3]
    if isinstance(x, np.generic) or _shaped(x):
        return np.dtype(x.dtype) if isinstance(x.dtype, np.dtype) else np.dtype(x.dtype.to_numpy())
    if isinstance(x, (str, bytes)):
        raise TypeError(f"tensor(): new(): invalid data type '{type(x).__name__}'")
    if isinstance(x, Sequence):
        if not len(x):
            return _KINDS[2]
        return np.result_type(*[_infer(v) for v in x])
    raise RuntimeError(f"tensor(): Could not infer dtype of {type(x).__name__}")


def _check_store(x, sizes, dim):
    """torch's recursive_store, as checks: a sequence of sizes[dim] items at each dim, numbers
    at the innermost."""
    if dim == len(sizes):
        if _is_sequence(x):
            raise TypeError(f"tensor(): expected a number at dim {dim}, but '{type(x).__name__}' "
                            f"object cannot be interpreted as a number")
        return
    if not _is_sequence(x):
        raise TypeError(f"tensor(): not a sequence: expected a sequence of length {sizes[dim]} at dim "
                        f"{dim}, got {type(x).__name__}")
    got = list(x.shape[:len(sizes) - dim]) if _shaped(x) else [len(x)]
    for d, (want, n) in enumerate(zip(sizes[dim:], got)):
        if want != n:
            raise ValueError(f"tensor(): expected sequence of length {want} at dim {dim + d} (got {n})")
    if not _shaped(x):
        for v in x:
            _check_store(v, sizes, dim + 1)
