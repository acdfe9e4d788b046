"""autocast's argument checks against torch's: a non-bool `enabled`, a dtype given by name and a
non-bool `cache_enabled` raise TypeError on entering (torch's argument parser); a device string
with an index ("cpu:0", "cuda:0") names its device type; an unknown one raises."""
import warnings

import pytest
import torch

import paragrad as pg
from tests.helpers import check_raises, needs_torch_2_13


def _enter(lib, **kwargs):
    with lib.autocast(**kwargs):
        pass


@pytest.fixture(autouse=True)
def _torch_autocast_restored():
    """torch's __enter__ sets `enabled` before it type-checks the dtype, so a refused dtype leaves
    torch's CPU autocast on: every later test's torch reference would run in bfloat16."""
    saved = [(d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in ("cpu", "cuda")]
    yield
    for d, enabled, dtype in saved:
        torch.set_autocast_enabled(d, enabled)
        torch.set_autocast_dtype(d, dtype)
    assert not pg.is_autocast_enabled("cpu") and not pg.is_autocast_enabled("cuda")


@pytest.mark.parametrize("enabled", ["yes", 1, 0, None])
def test_enabled_must_be_a_bool(enabled):
    check_raises(lambda lib: _enter(lib, device_type="cpu", enabled=enabled), error=TypeError,
                 match="must be bool")


@pytest.mark.parametrize("dtype", ["float64", "bfloat16", 3])
def test_dtype_must_be_a_dtype(dtype):
    check_raises(lambda lib: _enter(lib, device_type="cpu", dtype=dtype), error=TypeError,
                 match="dtype")


def test_cache_enabled_must_be_a_bool():
    check_raises(lambda lib: _enter(lib, device_type="cpu", cache_enabled="yes"), error=TypeError,
                 match="must be a bool")


@needs_torch_2_13      # older torch decorates anything and fails only at the call
def test_decorating_a_non_callable_raises():
    check_raises(lambda lib: lib.autocast("cpu")(3), error=TypeError, match="requires a callable")


def test_set_autocast_enabled_takes_only_a_bool():
    check_raises(lambda lib: lib.set_autocast_enabled("cpu", "yes"), error=TypeError,
                 match="must be bool")


@pytest.mark.parametrize("device_type", ["foo", 3])
def test_unknown_device_type_raises(device_type):
    check_raises(lambda lib: lib.autocast(device_type))


def test_constructing_with_a_bad_type_is_not_yet_an_error():
    # torch checks the types only when the context is entered
    for kwargs in ({"enabled": "yes"}, {"dtype": "float64"}):
        torch.autocast("cpu", **kwargs)
        pg.autocast("cpu", **kwargs)


def test_device_string_with_index_names_its_device_type():
    with torch.autocast("cpu:0", dtype=torch.bfloat16):
        t = torch.is_autocast_enabled("cpu")
    with pg.autocast("cpu:0", dtype=pg.bfloat16):
        p = pg.is_autocast_enabled("cpu")
        assert pg.is_autocast_enabled("cpu:0") and pg.get_autocast_dtype("cpu:0") is pg.bfloat16
        out = pg.ones(2, 3) @ pg.ones(3, 2)
    assert p == t is True and out.dtype is pg.bfloat16
    assert not pg.is_autocast_enabled("cpu")
    assert pg.amp.is_autocast_available("cuda:0") == torch.amp.is_autocast_available("cuda:0")
    assert pg.get_autocast_dtype("cuda:0") is pg.float16


def test_cuda_with_index_is_accepted():
    # torch takes "cuda:0" (disabling itself with a warning where CUDA is missing); so does paragrad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.autocast("cuda:0")
        ctx = pg.autocast("cuda:0")
    assert ctx.device == "cuda"


def test_unsupported_dtype_disables_with_a_warning():
    with pytest.warns(UserWarning, match="Disabling autocast"):
        ctx = pg.autocast("cpu", dtype=pg.float64)
    with ctx:
        assert not pg.is_autocast_enabled("cpu")
