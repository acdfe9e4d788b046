"""Grad mode: whether ops record graph nodes (torch.autograd.grad_mode). `_enabled` is the one
flag every op reads before recording; no_grad, enable_grad, inference_mode and set_grad_enabled
switch it as context managers and decorators."""
from __future__ import annotations

import functools


_enabled = True


def is_grad_enabled() -> bool:
    """Whether ops record graph nodes for autograd now, as torch.is_grad_enabled."""
    return _enabled


class _GradMode:
    """Base for no_grad / enable_grad / set_grad_enabled: a context manager and a decorator."""

    _mode = True

    def __enter__(self):
        global _enabled
        self._prev = _enabled
        _enabled = self._mode

    def __exit__(self, *exc):
        global _enabled
        _enabled = self._prev
        return False

    def __call__(self, fn):
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper


class _BareDecoratable(_GradMode):
    """Also usable as a bare decorator (`@no_grad` as well as `@no_grad()`), as in PyTorch."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        if not callable(orig_func):
            raise TypeError(f"{cls.__name__}() takes no arguments (or a function to decorate)")
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        """Nothing to set: the mode is the class's `_mode` (orig_func was handled in __new__)."""


class no_grad(_BareDecoratable):
    """Disable graph recording inside the block (or the decorated function)."""
    _mode = False


class enable_grad(_BareDecoratable):
    """Enable graph recording inside the block, e.g. within a no_grad region."""
    _mode = True


class inference_mode(_GradMode):
    """Same as no_grad in paragrad (PyTorch's extra inference-tensor checks do not exist here).
    `inference_mode(False)` enables grad mode, as PyTorch's does."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)          # used as a bare decorator: @inference_mode

    def __init__(self, mode=True):
        self._mode = not mode


class set_grad_enabled(_GradMode):
    """`set_grad_enabled(False)` takes effect at once, like PyTorch, and also works as a
    context manager that restores the previous mode on exit."""

    def __init__(self, mode: bool):
        global _enabled
        self._mode = bool(mode)
        self._prev = _enabled
        _enabled = self._mode

    def __enter__(self):
        pass  # already switched in __init__; __exit__ restores

    def __call__(self, fn):
        global _enabled
        _enabled = self._prev   # used as a decorator: don't change the mode now
        return super().__call__(fn)


