"""pg.set_default_device / get_default_device (torch's): factory functions and new modules'
parameters go to the default device; *_like keep their input's device; from_numpy stays on the
CPU; None resets it. On every device."""
import numpy as np
import pytest

import paragrad as pg


@pytest.fixture
def default_device(device):
    pg.set_default_device(device)
    try:
        yield pg.device(device)
    finally:
        pg.set_default_device(None)


def test_factories_use_the_default_device(default_device):
    d = default_device
    assert pg.get_default_device() == d
    made = [pg.zeros(2), pg.ones(2, 3), pg.empty(1), pg.full((2,), 3.0), pg.arange(4), pg.linspace(0, 1, 5),
            pg.eye(3), pg.rand(2), pg.randn(2), pg.randint(0, 5, (3,)), pg.randperm(4), pg.tensor([1, 2]),
            pg.tensor(pg.zeros(2, device="cpu")), pg.tril_indices(3, 3), pg.logspace(0, 1, 3)]
    assert all(t.device == d for t in made), [str(t.device) for t in made]
    assert pg.nn.Linear(2, 3).weight.device == d and pg.nn.BatchNorm2d(2).running_mean.device == d
    cpu = pg.zeros(2, device="cpu")
    assert pg.zeros_like(cpu).device == pg.device("cpu") and pg.from_numpy(np.ones(2)).device == pg.device("cpu")
    assert pg.zeros(2, device="cpu").device == pg.device("cpu")          # an explicit device wins


def test_reset_to_the_cpu():
    pg.set_default_device("cpu")
    pg.set_default_device(None)
    assert pg.get_default_device() == pg.device("cpu") and pg.zeros(1).device == pg.device("cpu")
    with pytest.raises(RuntimeError, match="unknown device type 'tpu'"):
        pg.set_default_device("tpu")
