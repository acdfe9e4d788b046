"""pg.accelerator answers as torch.accelerator does (here: the CUDA backend, or none), and
pg.cuda's device queries as torch.cuda's."""
import pytest
import torch

import paragrad as pg
from tests.helpers import check_raises


def test_queries_match_torch_on_this_machine():
    assert pg.accelerator.is_available() == torch.accelerator.is_available()
    assert pg.accelerator.device_count() == torch.accelerator.device_count()
    want = torch.accelerator.current_accelerator()
    got = pg.accelerator.current_accelerator()
    assert (got is None) == (want is None) and (want is None or got.type == want.type)


@pytest.mark.parametrize("call", ["current_device_index", "synchronize"])
def test_device_calls_answer_or_raise_as_torch(call):
    """With an accelerator both answer alike; without one both raise."""
    if torch.accelerator.is_available():
        assert getattr(pg.accelerator, call)() == getattr(torch.accelerator, call)()
    else:
        check_raises(lambda lib: getattr(lib.accelerator, call)(), match="none is available")


@pytest.mark.parametrize("emulation", [True, False])
def test_bf16_support_answers_as_torch_on_this_machine(emulation):
    """False without CUDA (torch's CPU wheel says the same); True on an H100/H200."""
    assert pg.cuda.is_bf16_supported(emulation) == torch.cuda.is_bf16_supported(emulation)


def test_pinning_answers_or_raises_as_torch_on_this_machine():
    """Without CUDA both refuse to pin and call nothing pinned; with it, see
    tests/backends/cuda/test_host_memory.py."""
    assert pg.ones(3).is_pinned() == torch.ones(3).is_pinned()
    if not torch.cuda.is_available():
        check_raises(lambda lib, x: x.pin_memory(), [1.0, 2.0], match="Cannot access accelerator device")


def test_an_event_needs_cuda():
    if not pg.cuda.is_available():
        with pytest.raises(RuntimeError, match="cuda backend is not available"):
            pg.cuda.Event(enable_timing=True)
