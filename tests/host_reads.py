"""A stand-in GPU for CPU tests of host reads: the NumPy backend registered as device type
'cuda' (so tensors on it take every non-CPU path), counting each host read of its buffers."""
import pytest

import paragrad
from paragrad import backends
from paragrad.backends.cpu import CPUBackend


class CountingBackend(CPUBackend):
    """A device whose memory is NumPy's; every host read of its buffers is counted."""
    device_type = "cuda"
    checks_indices = False      # as the CUDA backend's take: the op layer checks

    def __init__(self):
        super().__init__()
        self.reads = 0

    def to_numpy(self, x):
        self.reads += 1
        return super().to_numpy(x)


@pytest.fixture
def counting_device(monkeypatch):
    device = CountingBackend()
    monkeypatch.setitem(backends._instances, "cuda", device)
    monkeypatch.setattr(paragrad.cuda, "device_count", lambda: 1)
    # default generators of the stand-in's own, gone with it (a real GPU's may exist: kept aside;
    # the dict is shared by name, e.g. by checkpoint.py, so it is emptied and refilled in place)
    generators = paragrad.random._defaults
    kept = dict(generators)
    for name in [n for n in generators if n != "cpu"]:
        del generators[name]
    yield device
    generators.clear()
    generators.update(kept)
