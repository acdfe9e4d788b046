"""Test configuration: the device list comes from PARAGRAD_TEST_DEVICES (default 'cpu'), so a
new backend joins every conformance test by setting e.g. PARAGRAD_TEST_DEVICES=cpu,cuda."""
import os

import pytest

DEVICES = [d.strip() for d in os.environ.get("PARAGRAD_TEST_DEVICES", "cpu").split(",") if d.strip()]


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", DEVICES)


@pytest.fixture(autouse=True, scope="session")
def _own_cache(tmp_path_factory):
    """The suite's token caches and timed choices ($PARAGRAD_CACHE) in a folder of its own, not
    the user's ~/.cache/paragrad (the compiled CUDA kernels stay shared: CUPY_CACHE_DIR is set when
    paragrad is imported, before this runs). An explicit PARAGRAD_CACHE is kept."""
    if os.environ.get("PARAGRAD_CACHE"):
        yield
        return
    os.environ["PARAGRAD_CACHE"] = str(tmp_path_factory.mktemp("paragrad-cache"))
    yield
    del os.environ["PARAGRAD_CACHE"]


@pytest.fixture(autouse=True)
def _seed():
    import numpy as np

    import paragrad as pg
    pg.manual_seed(0)
    np.random.seed(0)


@pytest.fixture(autouse=True)
def _gpu_tests_need_cuda(request):
    """A `gpu`-marked test fails, not skips, without a CUDA device: selecting one (with -m gpu or
    through scripts/gpu-check) means the GPU is expected."""
    if request.node.get_closest_marker("gpu") is not None:
        import paragrad as pg
        if not pg.cuda.is_available():
            pytest.fail("gpu tests need a CUDA device (run them through scripts/gpu-check)")
