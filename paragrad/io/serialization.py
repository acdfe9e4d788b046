"""pg.save / pg.load: PyTorch's torch.save / torch.load for paragrad objects.

An object (a state_dict, an optimizer's state_dict, a dict of them with step counts, or with
weights_only=False any picklable object, whole modules included) is pickled. Tensors pickle by
value through NumPy (Tensor.__reduce_ex__): dtype, device, requires_grad and Parameter-ness
are kept, and the graph is not. The file is paragrad's own, so torch.load can't read it and pg.load
can't read torch's .pt files (it says so, and how to convert them: safetensors goes either way).

Differences from PyTorch:
- Tensors that shared storage when saved (views of one another) load as separate tensors.
- A callable map_location gets each tensor as loaded on the CPU and its saved device string,
  and returns the tensor to use (torch's gets storages).
"""
from __future__ import annotations

import io
import os
import pickle
import zipfile
from functools import partial

from ..backends import as_device, device as _device
from ..tensor import _rebuild as _rebuild_tensor
from .safe_unpickler import SafeUnpickler, _MapLocationError

DEFAULT_PROTOCOL = 2        # torch.serialization.DEFAULT_PROTOCOL

__all__ = ["save", "load"]


def save(obj, f, pickle_protocol=DEFAULT_PROTOCOL):
    """Write obj to f: a path (str or os.PathLike) or a binary file object with write().

    To a path, the object is pickled in memory first, so one that can't be pickled leaves an
    existing file as it was (torch truncates it). The write itself is a plain one, as torch's;
    paragrad.io.checkpoint writes atomically."""
    if isinstance(f, (str, os.PathLike)):
        data = pickle.dumps(obj, protocol=pickle_protocol)
        with open(f, "wb") as fh:
            fh.write(data)
    elif hasattr(f, "write"):
        pickle.dump(obj, f, protocol=pickle_protocol)
    else:
        raise TypeError(f"save: expected a path or a writable binary file object for f, got "
                        f"{type(f).__name__}")


def load(f, map_location=None, *, weights_only=True):
    """Read an object written by pg.save from f (a path or a binary file object with read()).

    map_location: None keeps each tensor's saved device; a device (or string) puts every
    tensor there; a dict maps saved device strings to new ones ({'cuda:0': 'cpu'}); a callable
    (tensor on the CPU, saved device string) -> tensor decides per tensor.
    weights_only (True by default, as torch >= 2.6): unpickle only tensors, containers and
    plain values (paragrad.io.safe_unpickler says exactly what); anything else, and any malformed
    file, raises pickle.UnpicklingError naming it (EOFError for an empty file), and no code the
    file names runs. False trusts the file completely (it can run any code): only for files
    you made. A PyTorch .pt file raises UnpicklingError saying how to convert it."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _load(fh, os.fspath(f), map_location, weights_only)
    if hasattr(f, "read"):
        return _load(f, getattr(f, "name", "the file object"), map_location, weights_only)
    raise TypeError(f"load: expected a path or a readable binary file object for f, got {type(f).__name__}")


def _load(fh, name, map_location, weights_only):
    # read to the end, then give back what follows this object (a stream may hold several)
    start = fh.tell() if _seekable(fh) else None
    data = fh.read()
    _refuse_foreign_formats(data, name)
    if weights_only:
        unpickler = SafeUnpickler(data, partial(_rebuild_at, map_location))
        try:
            obj = unpickler.load()
        except _MapLocationError as e:
            raise e.__cause__ from None
        end = unpickler.pos
    else:
        buf = io.BytesIO(data)
        obj = _Unpickler(buf, map_location).load()
        end = buf.tell()
    if start is not None:
        fh.seek(start + end)
    return obj


def _seekable(fh):
    try:
        return fh.seekable()
    except (AttributeError, ValueError):
        return False


_TORCH_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c     # torch.serialization.MAGIC_NUMBER
_CONVERT = ("convert it once in PyTorch with the safetensors package: `from safetensors.torch "
            "import save_file; save_file(torch.load(path, map_location='cpu'), 'model.safetensors')` "
            "(for a state_dict: a flat dict of tensors), then in paragrad: `from paragrad.io.checkpoint "
            "import load_weights; weights, _ = load_weights('model.safetensors'); "
            "model.load_state_dict(weights)`")


def _refuse_foreign_formats(data, name):
    """torch.save's and safetensors' files fail in the unpickler with obscure messages: say what
    the file is and how to read it instead."""
    if data[:4] == b"PK\x03\x04":
        try:
            names = zipfile.ZipFile(io.BytesIO(data)).namelist()
        except Exception:               # not a readable zip either: let the unpickler say so
            names = []
        if any(n == "data.pkl" or n.endswith("/data.pkl") for n in names):
            raise pickle.UnpicklingError(f"load: {name} is a PyTorch file (torch.save's zip "
                                         f"format), not one written by pg.save; {_CONVERT}")
    elif data[:1] == b"\x80":
        try:
            first = SafeUnpickler(data[:64]).load()
        except Exception:
            first = None
        if type(first) is int and first == _TORCH_LEGACY_MAGIC:
            raise pickle.UnpicklingError(f"load: {name} is a PyTorch file (torch.save's legacy "
                                         f"format), not one written by pg.save; {_CONVERT}")
    elif len(data) > 9 and data[8:10] == b'{"' and int.from_bytes(data[:8], "little") < len(data):
        raise pickle.UnpicklingError(
            f"load: {name} is a safetensors file, not one written by pg.save; read it with "
            f"`from paragrad.io.checkpoint import load_weights; weights, metadata = load_weights(path)`")


def _rebuild_at(map_location, cls, arr, dtype_name, saved, requires_grad, attrs):
    """Tensor unpickling with map_location applied (see load)."""
    where = map_location
    if callable(where) and not isinstance(where, (str, _device)):
        t = _rebuild_tensor(cls, arr, dtype_name, "cpu", requires_grad, attrs)
        return where(t, saved)
    if isinstance(where, dict):
        target = where.get(saved, saved)
    else:
        target = saved if where is None else where
    target = str(as_device(target))
    if target != "cpu":
        from .. import cuda
        if not cuda.is_available():
            raise RuntimeError(f"load: a tensor was saved on {saved}, and this machine has no "
                               f"CUDA device; pass map_location='cpu' to load it on the CPU")
    return _rebuild_tensor(cls, arr, dtype_name, target, requires_grad, attrs)


class _Unpickler(pickle.Unpickler):
    """weights_only=False: Python's own unpickler, trusting the file, with map_location."""

    def __init__(self, fh, map_location):
        super().__init__(fh)
        self.map_location = map_location

    def find_class(self, module, name):
        if (module, name) == ("paragrad.tensor", "_rebuild"):
            return partial(_rebuild_at, self.map_location)
        return super().find_class(module, name)
