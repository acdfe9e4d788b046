"""Keys of ints and slices (a backend's `basic_view` fast path where it has one, the planner
otherwise): the same views, writes and errors as torch, with and without the fast path."""
import numpy as np
import pytest
import torch

import paragrad as pg
from paragrad.backends.base import fast_paths

KEYS = [1, -1, slice(None), slice(1, 3), slice(None, None, 2), slice(-3, None), (1, 2), (slice(None), 1),
        (-1, slice(0, 2)), (slice(5, 9),), (slice(2, 1), 0), (0, slice(None), slice(1, None, 3))]


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "planned"])
@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_read_and_write_match_torch(device, key, fast):
    a = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    with fast_paths(fast):
        x, t = pg.tensor(a, device=device), torch.tensor(a)
        v = x[key]
        assert tuple(v.shape) == tuple(t[key].shape)
        np.testing.assert_array_equal(v.cpu().numpy(), t[key].numpy())
        x[key] = -1.0
        t[key] = -1.0
        np.testing.assert_array_equal(x.cpu().numpy(), t.numpy())
        assert (v.cpu().numpy() == -1).all()            # v is a view: it sees the write


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "planned"])
def test_refusals_match_torch(device, fast):
    x, t = pg.zeros(3, 4, device=device), torch.zeros(3, 4)
    with fast_paths(fast):
        for key, err in [(3, IndexError), ((0, 4), IndexError), (-4, IndexError),
                         (slice(None, None, -1), ValueError), ((0, 0, 0), IndexError)]:
            with pytest.raises(err):
                t[key]
            with pytest.raises(err):
                x[key]


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "planned"])
def test_a_full_slice_is_a_new_tensor_on_the_same_memory(device, fast):
    x = pg.zeros(2, 3, device=device)
    with fast_paths(fast):
        y = x[:]
    assert y is not x
    y[0, 0] = 5.0
    assert x[0, 0].item() == 5.0
