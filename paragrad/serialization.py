"""pg.save / pg.load: PyTorch's torch.save / torch.load for paragrad objects.

An object (a state_dict, an optimizer's state_dict, a dict of them with step counts, or with
weights_only=False any picklable object, whole modules included) is pickled. Tensors pickle by
value through NumPy (Tensor.__reduce_ex__): dtype, device, requires_grad and Parameter-ness
are kept, and the graph is not. The file is paragrad's own, so torch.load can't read it and pg.load
can't read torch's .pt files (use safetensors for either way: paragrad.safetensors).

Differences from PyTorch:
- Tensors that shared storage when saved (views of one another) load as separate tensors.
- A callable map_location gets each tensor as loaded on the CPU and its saved device string,
  and returns the tensor to use (torch's gets storages).
"""
from __future__ import annotations

import _compat_pickle
import os
import pickle

from .tensor import _rebuild as _rebuild_tensor
from .backends import as_device, device as _device

DEFAULT_PROTOCOL = 2        # torch.serialization.DEFAULT_PROTOCOL

# what weights_only=True may unpickle besides tensors: containers and plain values, paragrad's
# dtypes, and the NumPy pieces (ml_dtypes' too, for bfloat16) a tensor's bytes travel in
_SAFE = {
    ("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"),
    ("builtins", "slice"), ("builtins", "complex"), ("builtins", "bytearray"),
    ("_codecs", "encode"), ("numpy", "dtype"), ("numpy", "ndarray"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("paragrad.tensor", "Tensor"), ("paragrad.nn.parameter", "Parameter"),
    ("paragrad.dtypes", "get_dtype"),
}


def save(obj, f, pickle_protocol=DEFAULT_PROTOCOL):
    """Write obj to f: a path (str or os.PathLike) or a binary file object with write()."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            pickle.dump(obj, fh, protocol=pickle_protocol)
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
    plain values; anything else raises pickle.UnpicklingError naming it. False trusts the file
    completely (it can run any code): only for files you made."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _Unpickler(fh, map_location, weights_only).load()
    if hasattr(f, "read"):
        return _Unpickler(f, map_location, weights_only).load()
    raise TypeError(f"load: expected a path or a readable binary file object for f, got {type(f).__name__}")


class _Unpickler(pickle.Unpickler):
    def __init__(self, fh, map_location, weights_only):
        super().__init__(fh)
        self.map_location, self.weights_only = map_location, weights_only

    def find_class(self, module, name):
        # protocol 2 pickles name Python 2 modules (__builtin__.set): rename them as pickle does
        module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        if (module, name) == ("paragrad.tensor", "_rebuild"):
            return self._rebuild
        if self.weights_only and (module, name) not in _SAFE and not module.startswith("ml_dtypes"):
            raise pickle.UnpicklingError(
                f"load: weights_only=True refuses {module}.{name} (only tensors, containers and "
                f"plain values are loaded); pass weights_only=False if you trust this file")
        return super().find_class(module, name)

    def _rebuild(self, cls, arr, dtype_name, saved, requires_grad, attrs):
        where = self.map_location
        if callable(where) and not isinstance(where, (str, _device)):
            t = _rebuild_tensor(cls, arr, dtype_name, "cpu", requires_grad, attrs)
            return where(t, saved)
        if isinstance(where, dict):
            target = where.get(saved, saved)
        else:
            target = saved if where is None else where
        target = str(as_device(target))
        if target != "cpu":
            from . import cuda
            if not cuda.is_available():
                raise RuntimeError(f"load: a tensor was saved on {saved}, and this machine has no "
                                   f"CUDA device; pass map_location='cpu' to load it on the CPU")
        return _rebuild_tensor(cls, arr, dtype_name, target, requires_grad, attrs)

