"""Device strings -> backends.

`device("cuda:1")` parses a device; `backend_for(device)` returns the Backend instance that
runs it, importing the backend module on first use so that `import paragrad` needs only NumPy.
"""
from __future__ import annotations

import importlib

from .base import Backend  # noqa: F401  (re-exported: the interface new backends implement)

# device type -> (module, class, what to install when the import fails)
_KNOWN = {
    "cpu": ("paragrad.backends.cpu", "CPUBackend", None),
    "cuda": ("paragrad.backends.cuda.backend", "CUDABackend", 'pip install "paragrad[cuda]"'),
}
_instances: dict[str, Backend] = {}


class device:
    """A device: a type ('cpu', 'cuda') and an index (None on the CPU), like torch.device."""

    __slots__ = ("type", "index")

    def __init__(self, spec, index=None):
        if isinstance(spec, device):
            self.type, self.index = spec.type, spec.index
            return
        if not isinstance(spec, str):
            raise TypeError(f"device: expected a string like 'cpu' or 'cuda:0', got {spec!r}")
        kind, colon, num = spec.partition(":")
        if kind not in _KNOWN:
            raise RuntimeError(f"device: unknown device type {kind!r} in {spec!r}; "
                               f"expected one of {sorted(_KNOWN)}")
        if colon:       # 'cuda:' without an index is invalid, as in PyTorch
            if not num.isdigit() or index is not None:
                raise RuntimeError(f"device: invalid device string {spec!r}")
            index = int(num)
        if kind == "cpu":
            index = None
        elif index is None:
            index = 0
        self.type, self.index = kind, index

    def __repr__(self):
        return f"device(type='{self.type}'" + (f", index={self.index})" if self.index is not None else ")")

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))


CPU = device("cpu")


_canonical: dict = {}


def as_device(d) -> device:
    """The one shared device object for d (so tensors compare devices by identity)."""
    if d is None or d is CPU:
        return CPU
    if type(d) is str and d == "cpu":       # (a device's __eq__ would parse the string)
        return CPU
    d = d if isinstance(d, device) else device(d)
    if d.type == "cpu":
        return CPU
    return _canonical.setdefault((d.type, d.index), d)


def backend_for(dev) -> Backend:
    """The backend instance for a device type; a clear error says what to install if absent."""
    kind = dev.type if isinstance(dev, device) else as_device(dev).type
    b = _instances.get(kind)
    if b is None:
        module, cls, install = _KNOWN[kind]
        try:
            b = getattr(importlib.import_module(module), cls)()
        except ImportError as e:
            raise RuntimeError(f"the {kind} backend is not available ({e}); "
                               f"install it with: {install}") from e
        _instances[kind] = b
    return b


def is_available(kind: str) -> tuple[bool, str]:
    """(usable, reason) for a device type, without raising."""
    try:
        backend_for(kind)
        return True, "ok"
    except Exception as e:  # noqa: BLE001 - reported to the user as text
        return False, str(e)


from . import cuda  # noqa: E402,F401  (its flags, e.g. pg.backends.cuda.matmul.allow_tf32; no CuPy import)
from . import cudnn  # noqa: E402,F401  (pg.backends.cudnn.benchmark; no CuPy import)
