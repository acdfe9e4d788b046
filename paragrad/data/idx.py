"""The IDX file format of MNIST (LeCun's): a big-endian header whose third byte names the element
type and fourth the number of dimensions, one 4-byte size per dimension, then the elements."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

_UBYTE = 0x08       # the only element type MNIST's files use


def read_idx(path) -> np.ndarray:
    """The array in an IDX file (`.gz` files are decompressed), shaped by its header; the count
    comes from the header too, so a file cut to fewer images reads as that many."""
    path = Path(path)
    return parse_idx(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes(), path)


def parse_idx(data, path) -> np.ndarray:
    """The array an IDX file's bytes hold (a view of them); `path` names the file in errors."""
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an IDX file (the first two bytes of its header must be zero)")
    kind, ndim = data[2], data[3]
    if kind != _UBYTE:
        raise ValueError(f"{path}: IDX element type {kind:#04x}; only unsigned bytes (0x08) are read")
    shape = tuple(int.from_bytes(data[4 + 4 * d:8 + 4 * d], "big") for d in range(ndim))
    offset = 4 + 4 * ndim
    if len(data) - offset != int(np.prod(shape)):
        raise ValueError(f"{path}: the header says shape {shape} ({int(np.prod(shape))} bytes) but "
                         f"{len(data) - offset} bytes follow it")
    return np.frombuffer(data, np.uint8, offset=offset).reshape(shape)


def write_idx(path, array) -> None:
    """Write a uint8 array as an IDX file (gzipped if `path` ends in .gz): MNIST's layout, for
    cutting the real files down to a few images."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = bytes([0, 0, _UBYTE, array.ndim]) + b"".join(n.to_bytes(4, "big") for n in array.shape)
    data = header + array.tobytes()
    path = Path(path)
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
