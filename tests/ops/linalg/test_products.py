"""Matrix products against PyTorch: every matmul rank combination with broadcasting, mm, bmm, mv,
dot, outer and @, their gradients (and float64 finite differences), float16, and the errors."""
import pytest
import torch

import paragrad as pg
from tests.helpers import check_op, fd_check, lib


CASES = [
    ("1d@1d", lambda a, b: a @ b, [(4,), (4,)]),
    ("2d@1d", lambda a, b: a @ b, [(3, 4), (4,)]),
    ("1d@2d", lambda a, b: a @ b, [(4,), (4, 2)]),
    ("2d@2d", lambda a, b: a @ b, [(3, 4), (4, 2)]),
    ("3d@3d", lambda a, b: a @ b, [(2, 3, 4), (2, 4, 5)]),
    ("batch_bcast", lambda a, b: a @ b, [(2, 1, 3, 4), (5, 4, 2)]),
    ("batch_bcast_lhs", lambda a, b: a @ b, [(3, 4), (2, 4, 5)]),
    ("batch_bcast_rhs", lambda a, b: a @ b, [(2, 2, 3, 4), (4, 1)]),
    ("3d@1d", lambda a, b: a @ b, [(2, 3, 4), (4,)]),
    ("1d@3d", lambda a, b: a @ b, [(4,), (2, 4, 3)]),
    ("4d@1d", lambda a, b: lib(a).matmul(a, b), [(2, 1, 3, 4), (4,)]),
    ("matmul_method", lambda a, b: a.matmul(b), [(3, 4), (4, 2)]),
    ("rmatmul_transposed", lambda a, b: a.mT @ b.T, [(2, 4, 3), (5, 4)]),
    # a batch of transposed right operands (attention's q @ k^T; the CPU backend copies them)
    ("batch_transposed_rhs", lambda a, b: a @ b.transpose(-1, -2), [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("batch_transposed_rhs_bcast", lambda a, b: a @ b.mT, [(2, 3, 4, 5), (1, 6, 5)]),
    ("k_zero", lambda a, b: a @ b, [(3, 0), (0, 2)]),
    ("m_zero", lambda a, b: a @ b, [(0, 4), (4, 2)]),
    ("batch_zero", lambda a, b: a @ b, [(0, 3, 4), (4, 2)]),
    ("mm", lambda a, b: a.mm(b), [(3, 4), (4, 5)]),
    ("mm_fn", lambda a, b: lib(a).mm(a, b.t()), [(3, 4), (5, 4)]),
    ("bmm", lambda a, b: a.bmm(b), [(2, 3, 4), (2, 4, 5)]),
    ("bmm_fn", lambda a, b: lib(a).bmm(a, b), [(3, 1, 2), (3, 2, 1)]),
    ("mv", lambda a, v: a.mv(v), [(3, 4), (4,)]),
    ("mv_fn", lambda a, v: lib(a).mv(a, v), [(2, 5), (5,)]),
    ("dot", lambda a, b: a.dot(b), [(5,), (5,)]),
    ("dot_fn", lambda a, b: lib(a).dot(a, b), [(3,), (3,)]),
    ("outer", lambda a, b: a.outer(b), [(3,), (4,)]),
    ("outer_fn", lambda a, b: lib(a).outer(a, b), [(2,), (5,)]),
    ("same_input", lambda a: a @ a.T, [(3, 4)]),
    ("chain", lambda a, b, c: (a @ b).relu() @ c, [(2, 3), (3, 4), (4, 2)]),
]
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,shapes", CASES, ids=IDS)
def test_linalg(device, name, fn, shapes, dtype):
    check_op(fn, shapes, dtype=dtype, device=device)


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=IDS)
def test_linalg_fd(device, name, fn, shapes):
    fd_check(fn, shapes, device=device)


@pytest.mark.parametrize("name,fn,shapes", [c for c in CASES if c[0] != "chain"],
                         ids=[i for i in IDS if i != "chain"])
def test_linalg_int(device, name, fn, shapes):
    check_op(fn, shapes, dtype="int64", low=-3, high=4, device=device, grad=False)


@pytest.mark.parametrize("name,fn,shapes", [c for c in CASES if c[0] in
                                            ("2d@2d", "batch_bcast", "2d@1d", "dot", "bmm", "outer")])
def test_linalg_float16(device, name, fn, shapes):
    # float16 products accumulate in float32 in PyTorch; compare at half precision
    check_op(fn, shapes, dtype="float16", device=device, grad=False, low=-1, high=1)


def test_matmul_no_grad_to_constant(device):
    a = pg.randn(3, 4, device=device, requires_grad=True)
    b = pg.randn(4, 2, device=device)
    (a @ b).sum().backward()
    assert b.grad is None and a.grad.shape == (3, 4)


@pytest.mark.parametrize("fn,words", [
    (lambda a, b: a @ b, ["matmul", "3x4", "5x2"]),
    (lambda a, b: a.mm(b), ["mm", "3x4", "5x2"]),
    (lambda a, b: a.unsqueeze(0).bmm(b.unsqueeze(0)), ["bmm", "(1, 3, 4)", "(1, 5, 2)"]),
    (lambda a, b: a @ b[:, 0], ["matmul", "(3, 4)", "(5,)"]),
    (lambda a, b: a[0] @ b, ["matmul", "(4,)", "(5, 2)"]),
    (lambda a, b: a[0] @ b[:, 0], ["matmul", "[4]", "[5]"]),
    (lambda a, b: a.mv(b[:, 0]), ["mv", "(3, 4)", "(5,)"]),
    (lambda a, b: a[0].dot(b[:, 0]), ["dot", "4", "5"]),
    (lambda a, b: a.expand(2, 3, 4) @ b[:4].expand(3, 4, 2), ["matmul", "(2, 3, 4)", "(3, 4, 2)"]),
    (lambda a, b: a.bmm(b), ["bmm", "3D", "2D"]),
    (lambda a, b: a.mm(b[0]), ["mm", "2D", "1D"]),
    (lambda a, b: a.mv(b), ["mv", "2D"]),
    (lambda a, b: a.dot(b), ["dot", "1D", "2D"]),
    (lambda a, b: a @ b[0, 0], ["matmul", "1D", "0D"]),
    (lambda a, b: a.outer(b[:, 0]), ["outer", "2-D", "(3, 4)"]),
])
def test_linalg_shape_errors(device, fn, words):
    a = pg.zeros(3, 4, device=device, requires_grad=True)
    b = pg.zeros(5, 2, device=device)
    with pytest.raises(RuntimeError) as info:
        fn(a, b)
    for w in words:
        assert w in str(info.value), f"{w!r} not in: {info.value}"
    assert a.grad_fn is None


@pytest.mark.parametrize("fn", [lambda a, b: a @ b, lambda a, b: a.mm(b), lambda a, b: a[0].dot(b[:, 0]),
                                lambda a, b: a.mv(b[:, 0]), lambda a, b: a[None].bmm(b[None])])
def test_linalg_dtype_mismatch(device, fn):
    a = pg.zeros(3, 4, device=device)
    b = pg.zeros(4, 3, dtype=pg.float64, device=device)
    with pytest.raises(RuntimeError) as info:
        fn(a, b)
    assert "float32" in str(info.value) and "float64" in str(info.value), str(info.value)
    with pytest.raises(RuntimeError):   # torch refuses mixed dtypes as well
        fn(torch.zeros(3, 4), torch.zeros(4, 3, dtype=torch.float64))


def test_outer_promotes(device):
    import numpy as np
    check_op(lambda a, b: a.outer(b), None, device=device,
             inputs=[np.arange(3, dtype=np.float32), np.linspace(-1, 1, 4)])


def test_linalg_type_error(device):
    with pytest.raises(TypeError, match="matmul"):
        pg.matmul(pg.zeros(2, 2, device=device), [[1.0, 0.0], [0.0, 1.0]])


@pytest.mark.parametrize("shapes", [[(1, 2, 0), (0, 4)], [(2, 3, 0), (0, 1)], [(2, 0, 3), (3, 4)]])
def test_matmul_of_a_batch_by_a_matrix_with_an_empty_dim(device, shapes):
    check_op(lambda a, b: a @ b, shapes, device=device)
