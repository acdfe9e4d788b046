"""The safetensors format, read and written with NumPy alone.

Layout: an 8-byte little-endian header length N, N bytes of JSON
{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {...}},
then the tensors' little-endian bytes back to back. Files written here load with the
`safetensors` package (and so into PyTorch by name).
"""
from __future__ import annotations

import json
import os
import tempfile

import numpy as np

from . import dtypes as dt

_CODES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
          "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL"}
_FROM_CODE = {v: k for k, v in _CODES.items()}


class SafetensorsError(RuntimeError):
    pass


def save_file(arrays: dict, path, metadata: dict | None = None):
    """Write {name: (np.ndarray, DType)} atomically (temp file in the same folder + rename)."""
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


def atomic_write(path, chunks):
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_file(path):
    """-> ({name: (np.ndarray, DType)}, metadata dict). Raises SafetensorsError with the file
    name for anything truncated or malformed."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise SafetensorsError(f"checkpoint file not found: {path}") from None
    if len(data) < 8:
        raise SafetensorsError(f"{path}: truncated or not a safetensors file ({len(data)} bytes)")
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise SafetensorsError(f"{path}: truncated or corrupt (header of {n} bytes, file of {len(data)})")
    try:
        header = json.loads(data[8:8 + n])
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"{path}: corrupt header ({e})") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: corrupt header (not a JSON object)")
    metadata = header.pop("__metadata__", {}) or {}
    body = memoryview(data)[8 + n:]
    out = {}
    for name, info in header.items():
        try:
            dtype = dt.get_dtype(_FROM_CODE[info["dtype"]])
            begin, end = info["data_offsets"]
            shape = tuple(info["shape"])
        except (KeyError, TypeError, ValueError):
            raise SafetensorsError(f"{path}: corrupt entry for tensor {name!r}") from None
        if end > len(body) or begin > end:
            raise SafetensorsError(f"{path}: truncated (tensor {name!r} needs bytes up to {end}, "
                                   f"file has {len(body)})")
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != count * dtype.itemsize:
            raise SafetensorsError(f"{path}: corrupt size for tensor {name!r}")
        arr = np.frombuffer(body[begin:end], dtype=dtype.to_numpy().newbyteorder("<")).reshape(shape)
        out[name] = (arr.astype(dtype.to_numpy(), copy=True), dtype)
    return out, metadata
