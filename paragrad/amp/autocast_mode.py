"""autocast (torch.amp.autocast / torch.autocast): a context manager and decorator under which
the ops of ops/autocast_policy.py run in a lower-precision dtype (matmul, linear, conv, ...) or
in float32 (losses, and on CUDA exp, log, softmax, layer_norm, ...), by torch's lists for each
device type. Defaults: float16 on CUDA, bfloat16 on the CPU. Contexts nest; `enabled=False`
inside turns it off for the block. Gradients flow back through the casts, so float32
parameters get float32 gradients. The backward pass itself is not autocast.
"""
from __future__ import annotations

import functools
import warnings

from .. import autocast_state as state
from .. import dtypes as dt
from ..backends import is_available

_DEFAULT_DTYPES = {"cuda": dt.float16, "cpu": dt.bfloat16}
_SUPPORTED = {"cuda": (dt.float16, dt.bfloat16), "cpu": (dt.bfloat16, dt.float16)}


def _device_type(device_type):
    """The device type of a device string: torch takes "cuda:0" as "cuda" here."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    kind = device_type.split(":", 1)[0]
    if kind not in _DEFAULT_DTYPES:
        raise RuntimeError(f"autocast: device type {device_type!r} is not supported here; "
                           f"expected one of {sorted(_DEFAULT_DTYPES)}")
    return kind


def _check_types(enabled, dtype, cache_enabled):
    """torch's argument parser, which runs when a context is entered: `enabled` a real bool
    (not 1, not "yes"), `dtype` a dtype (not a name), `cache_enabled` a bool."""
    if type(enabled) is not bool:
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 2) must be bool, "
                        f"not {type(enabled).__name__}")
    if not isinstance(dtype, dt.DType):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be "
                        f"paragrad.dtype, not {type(dtype).__name__}")
    if type(cache_enabled) is not bool:
        raise TypeError(f"enabled must be a bool (got {type(cache_enabled).__name__})")


def get_autocast_dtype(device_type):
    """The dtype lower-precision ops run in under autocast on this device type."""
    kind = _device_type(device_type)
    return state.dtypes.get(kind, _DEFAULT_DTYPES[kind])


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for the device type (torch's default with no argument: CUDA)."""
    return bool(state.enabled.get(_device_type(device_type or "cuda"), False))


def set_autocast_enabled(device_type, enabled):
    """Turns autocast on or off now for a device type ("cuda" or "cpu"), as
    torch.set_autocast_enabled. Only the (device_type, enabled) form: torch's deprecated
    one-argument form raises TypeError here."""
    if type(enabled) is not bool:
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 2) must be bool, "
                        f"not {type(enabled).__name__}")
    state.enabled[_device_type(device_type)] = enabled
    state.refresh()


def is_autocast_available(device_type):
    """Whether autocast supports the device type ("cuda" or "cpu"), as torch.amp.is_autocast_available."""
    return isinstance(device_type, str) and device_type.split(":", 1)[0] in _DEFAULT_DTYPES


class autocast:
    """`with autocast("cuda"):` or `@autocast("cpu", dtype=pg.bfloat16)`: torch's semantics."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self.device = _device_type(device_type)
        # kept as given: a wrong type raises TypeError on entering, where torch raises it
        self.fast_dtype = _DEFAULT_DTYPES[self.device] if dtype is None else dtype
        self._enabled = enabled
        self._cache_enabled = True if cache_enabled is None else cache_enabled
        if self._enabled and self.device == "cuda" and not is_available("cuda")[0]:
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.")
            self._enabled = False
        if self._enabled and self.fast_dtype not in _SUPPORTED[self.device]:
            names = ", ".join(f"paragrad.{d.name}" for d in _SUPPORTED[self.device])
            warnings.warn(f"In {self.device.upper()} autocast, but the target dtype is not "
                          f"supported. Disabling autocast.\n{self.device.upper()} Autocast only "
                          f"supports dtypes of {names} currently.")
            self._enabled = False

    def __enter__(self):
        _check_types(self._enabled, self.fast_dtype, self._cache_enabled)
        d = self.device
        self._prev = (state.enabled.get(d, False), state.dtypes.get(d, _DEFAULT_DTYPES[d]),
                      state.cache_enabled.get(d, True))
        state.enabled[d], state.dtypes[d], state.cache_enabled[d] = (
            self._enabled, self.fast_dtype, self._cache_enabled)
        state.nesting[0] += 1
        state.refresh()
        return self

    def __exit__(self, *exc):
        d = self.device
        state.enabled[d], state.dtypes[d], state.cache_enabled[d] = self._prev
        state.nesting[0] -= 1
        if state.nesting[0] == 0:       # the outermost context: its parameter casts go
            state.weight_cache.clear()
        state.refresh()
        return False

    def __call__(self, fn):
        if not callable(fn):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(fn).__name__}. "
                            f"Did you mean to use autocast as a context manager? For example:\n"
                            f"    with paragrad.autocast(device_type=...):\n"
                            f"        output = model(input)")
        @functools.wraps(fn)
        def autocast_wrapped(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)
        return autocast_wrapped
