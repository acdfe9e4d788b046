import pytest

from tests.helpers import check_op, fd_check


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mul_broadcast(device, dtype):
    check_op(lambda x, y: x * y, [(3, 4), (4,)], dtype=dtype, device=device)


def test_softmax_fd(device):
    fd_check(lambda x: x.softmax(-1), [(2, 5)], device=device)
