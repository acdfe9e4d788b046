"""paragrad.accelerator: PyTorch's device-agnostic view of the current accelerator
(torch.accelerator), here the CUDA backend: scripts written against it pick the GPU when
there is one and the CPU otherwise."""
from __future__ import annotations

from . import cuda
from .backends import as_device


def is_available() -> bool:
    return cuda.is_available()


def current_accelerator(check_available=False):
    """The accelerator's device type as a device ('cuda'), or None without one."""
    return as_device("cuda") if cuda.is_available() else None


def device_count() -> int:
    return cuda.device_count()


def current_device_index() -> int:
    _require()
    return cuda.current_device()


def _require():
    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")


def set_device_index(device) -> None:
    _require()
    cuda.set_device(as_device(device).index if not isinstance(device, int) else device)


def synchronize(device=None) -> None:
    _require()
    cuda.synchronize(device)
