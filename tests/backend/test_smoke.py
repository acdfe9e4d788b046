import pytest

from tests.helpers import check_op, fd_check


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mul_broadcast(device, dtype):
    check_op(lambda x, y: x * y, [(3, 4), (4,)], dtype=dtype, device=device)


def test_softmax_fd(device):
    fd_check(lambda x: x.softmax(-1), [(2, 5)], device=device)


def test_every_fast_path_a_backend_defines_is_listed():
    """A backend's fast_* methods are the optional kernels FAST_PATHS names (the op layer asks
    for them by those names; one missing from the list would go undocumented)."""
    from paragrad.backends.base import FAST_PATHS
    from paragrad.backends.cpu import CPUBackend
    classes = [CPUBackend]
    try:
        from paragrad.backends.cuda.backend import CUDABackend
        classes.append(CUDABackend)
    except ImportError:         # (no CuPy on this machine: the CUDA backend can't be imported)
        pass
    for cls in classes:
        names = {n[len("fast_"):] for n in dir(cls) if n.startswith("fast_") and callable(getattr(cls, n))}
        assert names <= set(FAST_PATHS), (cls.__name__, sorted(names - set(FAST_PATHS)))
