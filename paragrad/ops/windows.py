"""Signal windows (torch.hann_window, hamming_window, blackman_window, bartlett_window,
kaiser_window): window_length samples of a symmetric window over N = window_length - 1, or with
periodic=True (the default, for spectral analysis) over N = window_length, dropping the last
sample. Computed in float64 on the host (they depend only on the arguments) and then cast."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from .creation import _dtype, _finish, factory_device
from ..backends import backend_for


def _window(op, window_length, periodic, dtype, device, requires_grad, shape):
    """shape(n, N) -> the window's values at sample positions n (float64) over period N."""
    if window_length < 0:
        raise RuntimeError(f"{op} requires non-negative window_length, got window_length={window_length}")
    dtype = _dtype(dtype, op)
    if not dtype.is_floating_point:
        raise RuntimeError(f"{op} expects floating point dtypes, got: {dtype}")
    if window_length <= 1:
        values = np.ones(window_length)
    else:
        n = np.arange(window_length, dtype=np.float64)
        values = shape(n, window_length if periodic else window_length - 1)
    dev = factory_device(device)
    return _finish(backend_for(dev).from_numpy(values, dtype, dev.index), dtype, dev, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """A Hann window, 0.5 - 0.5 cos(2 pi n / N), window_length long, as torch.hann_window."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 0.5 - 0.5 * np.cos(2 * math.pi * n / N))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, device=None,
                   requires_grad=False):
    """A Hamming window, alpha - beta cos(2 pi n / N), window_length long, as torch.hamming_window."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: alpha - beta * np.cos(2 * math.pi * n / N))


def blackman_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """A Blackman window, 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N), as torch.blackman_window."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 0.42 - 0.5 * np.cos(2 * math.pi * n / N) + 0.08 * np.cos(4 * math.pi * n / N))


def bartlett_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """A Bartlett (triangular) window, 1 - |2n / N - 1|, window_length long, as torch.bartlett_window."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 1 - np.abs(2 * n / N - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device=None, requires_grad=False):
    """A Kaiser window, I0(beta sqrt(1 - ((n - N/2) / (N/2))^2)) / I0(beta), as torch.kaiser_window."""
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: np.i0(beta * np.sqrt(np.clip(1 - ((n - N / 2) / (N / 2)) ** 2, 0, None)))
                   / np.i0(beta))


__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
