"""paragrad.cuda: device queries, synchronization, memory statistics and seeding for the CUDA
backend (PyTorch's torch.cuda). Everything here works without CuPy installed: queries then
answer 'no device', and calls that need a GPU raise the backend's install error."""
from __future__ import annotations

from ..backends import backend_for, is_available as _usable
from .events import Event
from .graphed_callables import make_graphed_callables


def is_available() -> bool:
    """Whether the CUDA backend can run here: CuPy imports and sees a GPU (as
    torch.cuda.is_available; `paragrad info` says why not)."""
    return _usable("cuda")[0]


def _cupy():
    backend_for("cuda")         # raises the clear 'pip install "paragrad[cuda]"' error if absent
    import cupy
    return cupy


def device_count() -> int:
    return _cupy().cuda.runtime.getDeviceCount() if is_available() else 0


def current_device() -> int:
    return _cupy().cuda.runtime.getDevice()


def set_device(index: int):
    _cupy().cuda.Device(index).use()


def get_device_name(index: int = 0) -> str:
    return _cupy().cuda.runtime.getDeviceProperties(index)["name"].decode()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current CUDA device computes in bfloat16, as torch.cuda.is_bf16_supported:
    False without a CUDA device; True on compute capability 8.0 and later (bfloat16 tensor
    cores); below that, including_emulation (torch's default True: bfloat16 tensors can still
    be made there)."""
    if not is_available():
        return False
    return _cupy().cuda.runtime.getDeviceProperties(current_device())["major"] >= 8 or including_emulation


def synchronize(device=None):
    """Wait until all queued work on the device has finished."""
    cp = _cupy()
    from ..backends.cuda.fused_chains import flush
    flush()         # (recorded elementwise ops are queued work too)
    with cp.cuda.Device(_index(device)):
        cp.cuda.runtime.deviceSynchronize()


def _index(device):
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    from ..backends import as_device
    return as_device(device).index or 0


def _memory():
    """The CUDA memory module, once the pending fused elementwise chain has launched: results
    nobody kept, which it held until then, are freed as eager ops would have left them."""
    _cupy()
    from ..backends.cuda.fused_chains import flush
    from ..backends.cuda.runtime import memory
    flush()
    return memory


def memory_allocated(device=None) -> int:
    """Bytes held by live tensors (the pool's used bytes)."""
    return _memory().allocated()


def max_memory_allocated(device=None) -> int:
    return _memory().peak()


def reset_peak_memory_stats(device=None):
    _memory().reset_peak()


def memory_reserved(device=None) -> int:
    return _memory().reserved()


def memory_summary(device=None) -> str:
    return _memory().summary()


def empty_cache():
    """Return cached, unused blocks of the pool to the device."""
    _memory().empty_cache()


def manual_seed(seed: int):
    """Seed the default generator of every CUDA device."""
    from ..random import default_generator
    for i in range(device_count()):
        default_generator(f"cuda:{i}").manual_seed(seed)


manual_seed_all = manual_seed
