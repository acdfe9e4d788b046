"""Pinned host memory (Tensor.pin_memory, is_pinned) and pg.cuda.Event timing, against torch's
CUDA build on the same machine (nanoGPT's get_batch pins its batches and copies them with
non_blocking=True; benchmark scripts time with events)."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_raises

pytestmark = pytest.mark.gpu


def test_a_pinned_copy_holds_the_values_and_goes_to_the_gpu():
    x = pg.arange(12, dtype=pg.float32).reshape(3, 4)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p.device.type == "cpu"
    assert p.pin_memory() is p                                  # pinned already: itself
    assert p[1:].is_pinned() == torch.ones(3, 4).pin_memory()[1:].is_pinned()    # a view of it too
    y = p.to("cuda", non_blocking=True)
    np.testing.assert_array_equal(y.cpu().numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    assert not y.is_pinned()                                    # (torch: False for a GPU tensor)
    check_raises(lambda lib, t: t.cuda().pin_memory(), [1.0], match="only dense CPU tensors can be pinned")


def test_pinning_passes_the_gradient_through():
    x = pg.ones(4, requires_grad=True)
    (x.pin_memory() * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 3, np.float32))


def test_events_time_the_work_between_them():
    a = pg.randn(512, 512, device="cuda")
    start, end = pg.cuda.Event(enable_timing=True), pg.cuda.Event(enable_timing=True)
    assert start.query()                        # (never recorded: nothing to wait for, as torch)
    start.record()
    for _ in range(20):
        a = (a @ a).tanh() * 2          # (elementwise ops waiting to be fused come before the mark)
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) > 0
    for lib in (torch, pg):         # (torch raises ValueError for both)
        s, e, untimed = lib.cuda.Event(enable_timing=True), lib.cuda.Event(enable_timing=True), lib.cuda.Event()
        with pytest.raises(ValueError, match="Both events must be recorded"):
            s.elapsed_time(e)
        s.record()
        untimed.record()
        with pytest.raises(ValueError, match="enable_timing=True"):
            s.elapsed_time(untimed)
