"""The safetensors format, read and written with NumPy alone.

Layout: an 8-byte little-endian header length N, N bytes of JSON
{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {...}},
then the tensors' little-endian bytes back to back. Files written here load with the
`safetensors` package (and so into PyTorch by name).
"""
from __future__ import annotations

import json
import os

import numpy as np

from .. import dtypes as dt
from .atomic_write import atomic_write

_CODES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
          "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL"}
_FROM_CODE = {v: k for k, v in _CODES.items()}


__all__ = ["save_file", "load_file", "read_header", "SafetensorsError"]


class SafetensorsError(RuntimeError):
    """A safetensors file (or a checkpoint made of them) that can't be read as asked: damaged,
    truncated, of an unknown dtype, or not matching what it is loaded into. The message names
    the file and the tensor."""


def save_file(arrays: dict, path, metadata: dict | None = None):
    """Write {name: (np.ndarray, DType)} atomically (paragrad.io.atomic_write: a temp file in the
    same folder, renamed into place, with the umask's permissions)."""
    header, blobs, offset = {}, [], 0
    for name, (arr, dtype) in arrays.items():
        raw = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _CODES[dtype.name], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    atomic_write(path, [len(text).to_bytes(8, "little"), text, *blobs])


def load_file(path):
    """-> ({name: (np.ndarray, DType)}, metadata dict). Raises SafetensorsError naming the file
    (and the tensor) for anything truncated or malformed, before allocating anything the file's
    own bytes don't back. Checks what the `safetensors` package checks: known dtypes, shapes of
    non-negative ints, data_offsets within the file, of shape x itemsize bytes, back to back
    without overlaps or holes, no duplicate names."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise SafetensorsError(f"checkpoint file not found: {path}") from None
    header, metadata = _read_header(path, data)
    n = int.from_bytes(data[:8], "little")
    body = memoryview(data)[8 + n:]
    entries = [_entry(path, name, info, len(body)) for name, info in header.items()]
    pos, prev = 0, None
    for name, _, _, begin, end in sorted(entries, key=lambda e: (e[3], e[4])):
        if begin < pos:
            raise SafetensorsError(f"{path}: tensor {name!r} (bytes {begin}:{end}) overlaps tensor "
                                   f"{prev!r} (ending at {pos})")
        if begin > pos:
            raise SafetensorsError(f"{path}: bytes {pos}:{begin} before tensor {name!r} belong to "
                                   f"no tensor (corrupt offsets)")
        pos, prev = end, name
    if pos != len(body):
        raise SafetensorsError(f"{path}: the tensors end at byte {pos} of a data section of "
                               f"{len(body)} bytes (corrupt offsets or trailing data)")
    out = {}
    for name, dtype, shape, begin, end in entries:
        arr = np.frombuffer(body[begin:end], dtype=dtype.to_numpy().newbyteorder("<")).reshape(shape)
        out[name] = (arr.astype(dtype.to_numpy(), copy=True), dtype)
    return out, metadata


def read_header(path):
    """-> ({name: (DType, shape)}, metadata) from the header alone: what a file holds, checked
    as load_file checks it, without reading (or allocating) the tensors."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else 0
            data = head + f.read(min(n, size))
    except FileNotFoundError:
        raise SafetensorsError(f"checkpoint file not found: {path}") from None
    header, metadata = _read_header(path, data, size)
    entries = [_entry(path, name, info, size - 8 - n) for name, info in header.items()]
    return {name: (dtype, shape) for name, dtype, shape, _, _ in entries}, metadata


def _read_header(path, data, size=None):
    size = len(data) if size is None else size
    if size < 8:
        raise SafetensorsError(f"{path}: truncated or not a safetensors file ({size} bytes)")
    n = int.from_bytes(data[:8], "little")
    if n > size - 8:
        raise SafetensorsError(f"{path}: truncated or corrupt (header of {n} bytes, file of {size})")
    try:
        header = json.loads(data[8:8 + n], object_pairs_hook=_no_duplicates)
    except _DuplicateKey as e:
        raise SafetensorsError(f"{path}: corrupt header (tensor {e.args[0]!r} appears twice)") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise SafetensorsError(f"{path}: corrupt header ({type(e).__name__}: {str(e)[:200]})") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: corrupt header (not a JSON object)")
    metadata = header.pop("__metadata__", None) or {}
    if not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        raise SafetensorsError(f"{path}: corrupt header (__metadata__ must map strings to strings)")
    return header, metadata


class _DuplicateKey(Exception):
    pass


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _entry(path, name, info, body_size):
    """(name, DType, shape, begin, end) of one header entry, checked against the data size."""
    def corrupt(what):
        return SafetensorsError(f"{path}: tensor {name!r}: {what}")

    def is_int(x):
        return type(x) is int and x >= 0

    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= set(info):
        raise corrupt(f"expected {{'dtype', 'shape', 'data_offsets'}}, got {str(info)[:100]}")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(code, str) or code not in _FROM_CODE:
        raise corrupt(f"unknown or unsupported dtype {str(code)[:20]!r} (paragrad reads "
                      f"{', '.join(sorted(_FROM_CODE))})")
    if not (isinstance(shape, list) and all(is_int(d) for d in shape)):
        raise corrupt(f"shape must be a list of non-negative integers, got {str(shape)[:100]}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(is_int(o) for o in offsets)
            and offsets[0] <= offsets[1]):
        raise corrupt(f"data_offsets must be [begin, end] with 0 <= begin <= end, got {str(offsets)[:100]}")
    begin, end = offsets
    if end > body_size:
        raise corrupt(f"truncated (needs bytes up to {end}, the data section has {body_size})")
    dtype = dt.get_dtype(_FROM_CODE[code])
    count = 1
    for d in shape:                 # Python ints: a huge shape can't wrap around to a small size
        count *= d
    if end - begin != count * dtype.itemsize:
        raise corrupt(f"shape {shape} of {code} needs {count * dtype.itemsize} bytes, data_offsets "
                      f"give {end - begin}")
    return name, dtype, tuple(shape), begin, end
