"""DLPack interop: tensors shared without copies with NumPy, PyTorch, CuPy, JAX, ... (any
library speaking the array API's `__dlpack__` / `__dlpack_device__` protocol).

`pg.from_dlpack(x)` wraps x's memory in a Tensor, `Tensor.__dlpack__` hands a tensor's memory to
another library (`np.from_dlpack(t)`, `torch.from_dlpack(t)`, `cupy.from_dlpack(t)`); a write on
one side is seen on the other. The backends move the capsules (a NumPy array on the CPU, a CuPy
array on CUDA, both producers and consumers already); this file adds what those lack: bfloat16,
which NumPy's DLPack refuses, travels as int16 with its DLPack type code rewritten in the capsule
(so torch and CuPy read paragrad's CPU bfloat16 and back). NumPy as the consumer still refuses a
bfloat16 capsule ("Unsupported dtype"); np.asarray(t) shares a CPU tensor's memory instead.
"""
from __future__ import annotations

import ctypes
import enum

import numpy as np

from . import dtypes as dt


class DLDeviceType(enum.IntEnum):
    """DLPack's device codes (torch.utils.dlpack.DLDeviceType's names)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14


# where a consumer finds each device's memory: host-visible kinds are read by the CPU backend
_PARAGRAD_DEVICE = {DLDeviceType.kDLCPU: "cpu", DLDeviceType.kDLCUDAHost: "cpu", DLDeviceType.kDLCUDA: "cuda"}


# ---- the capsule's C structs (dlpack.h), to read its device and rewrite its dtype -----------
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensorVersioned(ctypes.Structure):     # DLPack >= 1.0 ("dltensor_versioned")
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_INT, _BFLOAT = 0, 4            # DLDataTypeCode values

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def _dl_tensor(capsule):
    """The DLTensor inside an unconsumed DLPack capsule (a view of its memory)."""
    if type(capsule).__name__ != "PyCapsule":
        raise RuntimeError(f"from_dlpack received an invalid capsule: expected an object with "
                           f"__dlpack__ or a DLPack capsule, got {type(capsule).__name__}")
    name = _get_name(capsule)
    if name == b"dltensor_versioned":
        return _DLManagedTensorVersioned.from_address(_get_pointer(capsule, name)).dl_tensor
    if name == b"dltensor":     # the legacy DLManagedTensor starts with its DLTensor
        return _DLTensor.from_address(_get_pointer(capsule, name))
    raise RuntimeError(f"from_dlpack received an invalid capsule (named {name!r}). Note that DLTensor "
                       f"capsules can be consumed only once, so you might have already constructed a "
                       f"tensor from it once.")


def _retype(capsule, code_from, code_to):
    """Rewrite a 16-bit DLPack dtype code in place; -> whether the capsule had code_from."""
    t = _dl_tensor(capsule).dtype
    if (t.code, t.bits, t.lanes) != (code_from, 16, 1):
        return False
    t.code = code_to
    return True


# ---- export ----------------------------------------------------------------------------------
def dlpack_device(t):
    """Tensor.__dlpack_device__: (device type, device index)."""
    kind = DLDeviceType.kDLCUDA if t.device.type == "cuda" else DLDeviceType.kDLCPU
    return kind, t.device.index or 0


def to_dlpack(t, stream=None, max_version=None, dl_device=None, copy=None):
    """Tensor.__dlpack__: a capsule sharing t's memory (the array API's arguments; `stream` is
    the consumer's CUDA stream, which the producing backend orders after its pending work)."""
    if t.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    kwargs = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device), ("copy", copy))
              if v is not None}
    if t.device.type == "cuda" and stream is not None:      # (a CPU producer takes no stream)
        kwargs["stream"] = stream
    buf = t._data
    if t.dtype is not dt.bfloat16:
        return t._backend.to_dlpack(buf, **kwargs)
    capsule = t._backend.to_dlpack(buf.view(dt.int16.to_numpy()), **kwargs)
    _retype(capsule, _INT, _BFLOAT)
    return capsule


# ---- import ----------------------------------------------------------------------------------
class _Producer:
    """What the backend's from_dlpack consumes: ext (an object with __dlpack__, or a capsule)
    with a bfloat16 capsule passed on as int16, which the consumer then views back."""

    def __init__(self, ext):
        self.ext, self.bfloat16, self.legacy = ext, False, False
        self.capsule = None if hasattr(ext, "__dlpack__") else ext

    def __dlpack_device__(self):
        if self.capsule is None:
            return self.ext.__dlpack_device__()
        d = _dl_tensor(self.capsule).device
        return d.device_type, d.device_id

    def __dlpack__(self, **kwargs):
        capsule = self.capsule if self.capsule is not None else self.ext.__dlpack__(**kwargs)
        self.bfloat16 = _retype(capsule, _BFLOAT, _INT)
        self.legacy = _get_name(capsule) == b"dltensor"
        return capsule


class _WritableAlias:
    """NumPy reads a legacy (unversioned) capsule as read-only, since it can't say; its
    producers (torch's to_dlpack, ...) mean it writable, as torch reads it. This aliases the
    memory writable, keeping NumPy's array (which owns the capsule) alive."""

    def __init__(self, a):
        self.a = a
        self.__array_interface__ = dict(a.__array_interface__, data=(a.__array_interface__["data"][0], False))


def from_dlpack(ext, *, device=None, copy=None):
    """A Tensor sharing the memory of `ext`: an object with `__dlpack__` (NumPy/CuPy arrays,
    torch tensors, ...) or a DLPack capsule (torch.utils.dlpack.to_dlpack's). As torch's:
    copy=True gives a copy, device= moves it there (a copy; refused with copy=False)."""
    from .backends import as_device, backend_for
    from .tensor import _wrap
    producer = _Producer(ext)
    kind, index = producer.__dlpack_device__()
    try:
        where = _PARAGRAD_DEVICE[DLDeviceType(kind)]
    except (KeyError, ValueError):
        raise RuntimeError(f"from_dlpack: unsupported device type {kind} (paragrad reads memory of "
                           f"the CPU and of CUDA devices)") from None
    src = as_device(where if where == "cpu" else f"cuda:{index}")
    if device is not None and as_device(device) != src and copy is False:
        raise ValueError(f"from_dlpack: cannot move a DLPack tensor from device {src} to "
                         f"{as_device(device)} without copying. Set copy=None or copy=True.")
    buf = backend_for(src).from_dlpack(producer, src.index)
    if producer.legacy and isinstance(buf, np.ndarray) and not buf.flags.writeable:
        buf = np.asarray(_WritableAlias(buf))
    if producer.bfloat16:
        buf = buf.view(dt.bfloat16.to_numpy())
    t = _wrap(buf, dt.get_dtype(buf.dtype), src)
    if device is not None and as_device(device) != src:
        return t.to(device)
    return t.clone() if copy else t
