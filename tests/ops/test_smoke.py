import pytest

from tests.helpers import check_op, fd_check


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mul_broadcast(device, dtype):
    check_op(lambda x, y: x * y, [(3, 4), (4,)], dtype=dtype, device=device)


def test_softmax_fd(device):
    fd_check(lambda x: x.softmax(-1), [(2, 5)], device=device)


def test_every_fast_path_a_backend_defines_is_listed():
    """A backend's fast_* methods are the optional kernels FAST_PATHS names (the op layer asks
    for them by those names; one missing from the list would go undocumented). The backends'
    sources are read, not imported, so the CUDA backend is checked on machines without CuPy."""
    import ast
    from pathlib import Path

    import paragrad.backends as backends
    from paragrad.backends.base import FAST_PATHS
    root = Path(backends.__file__).parent
    for source, cls in (("cpu.py", "CPUBackend"), ("cuda/backend.py", "CUDABackend")):
        tree = ast.parse((root / source).read_text())
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
        names = {n.name[len("fast_"):] for n in body if isinstance(n, ast.FunctionDef) and n.name.startswith("fast_")}
        assert names, cls
        assert names <= set(FAST_PATHS), (cls, sorted(names - set(FAST_PATHS)))
