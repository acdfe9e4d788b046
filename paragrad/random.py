"""Random number generators: one default generator per device, seeded by `manual_seed`.

A `Generator` wraps the backend's own generator state (a NumPy PCG64 on the CPU), so draws are
reproducible per seed and device. Its state can be saved and restored (checkpoints do).
"""
from __future__ import annotations

import copy
import time

from .backends import CPU, as_device, backend_for


DEFAULT_SEED = 67280421310721   # PyTorch's: unseeded programs are reproducible too


class Generator:
    """A random number generator for one device, wrapping the backend's state, as torch.Generator."""
    def __init__(self, device="cpu"):
        self.device = as_device(device)
        self._seed = DEFAULT_SEED
        self._state = backend_for(self.device).generator(self._seed, self.device.index)

    def manual_seed(self, seed):
        seed = int(seed)
        if seed < 0:
            seed += 2**64
        self._seed = seed
        # written into the existing state, not a new one: a captured CUDA graph keeps drawing
        # from the buffer it was recorded with, and must see the reseeding too
        b = backend_for(self.device)
        self._state = b.set_rng_state(self._state, b.rng_state(b.generator(seed, self.device.index)))
        return self

    def seed(self):
        return self.manual_seed(int(time.time_ns() % (2**63)))._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """A copy of the generator state as plain JSON-serializable data."""
        return copy.deepcopy(backend_for(self.device).rng_state(self._state))

    def set_state(self, state):
        self._state = backend_for(self.device).set_rng_state(self._state, copy.deepcopy(state))


_defaults: dict = {}


def default_generator(device="cpu") -> Generator:
    dev = as_device(device)
    key = "cpu" if dev is CPU else str(dev)
    g = _defaults.get(key)
    if g is None:
        g = _defaults[key] = Generator(dev)
        if "cpu" in _defaults and key != "cpu":
            g.manual_seed(_defaults["cpu"].initial_seed())
    return g


def manual_seed(seed):
    """Seed the default generator of every device (created ones now, later ones on creation)."""
    default_generator("cpu").manual_seed(seed)
    for g in _defaults.values():
        g.manual_seed(seed)
    return default_generator("cpu")


def seed():
    """Seeds the default generator of every device from the clock, with one seed, and returns
    it, as torch.seed (the CPU's draws it; later devices take it on creation)."""
    s = default_generator("cpu").seed()
    for key, g in _defaults.items():
        if key != "cpu":
            g.manual_seed(s)
    return s


def initial_seed():
    """The seed the CPU default generator was last seeded with, as torch.initial_seed."""
    return default_generator("cpu").initial_seed()


def get_rng_state():
    """The CPU default generator's state, as torch.get_rng_state.
    Differs: plain JSON-serializable data (the backend's own state), not a uint8 tensor."""
    return default_generator("cpu").get_state()


def set_rng_state(state):
    """Restores the CPU default generator's state from get_rng_state's data, as torch.set_rng_state."""
    default_generator("cpu").set_state(state)
