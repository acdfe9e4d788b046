"""A stand-in GPU for CPU tests of host reads: the NumPy backend registered as device type
'cuda' (so tensors on it take every non-CPU path), counting each host read of its buffers."""
import pytest

import paragrad
from paragrad import backends
from paragrad.backends.cpu import CPUBackend


class CountingBackend(CPUBackend):
    """A device whose memory is NumPy's; every host read of its buffers is counted."""
    device_type = "cuda"

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
    # the stand-in's default generator goes when the stand-in does
    monkeypatch.setattr(paragrad.random, "_defaults", dict(paragrad.random._defaults))
    return device
