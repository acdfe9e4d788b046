"""pg.linalg and the torch.* linear-algebra functions against PyTorch: values and gradients of
the decompositions (on well-conditioned inputs: SPD matrices A A^T + n I, distinct singular
values), sign-invariant forms of the QR / eigen / singular vectors, the composites (norms,
rank, pinv, lstsq, powers, exponential), float64 finite differences, and the errors."""
import math

import numpy as np
import pytest
import torch

import paragrad as pg
from paragrad.backends.base import FAST_PATHS, fast_paths
from tests.helpers import check_op, fd_check, lib

# torch.cholesky / qr / svd / triangular_solve warn that they are deprecated
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def eye(x, n=None):
    return lib(x).eye(x.shape[-1] if n is None else n, dtype=x.dtype, device=x.device)


def wc(x):
    """A well-conditioned square matrix: x + n I (x uniform in [-2, 2))."""
    return x + 2 * x.shape[-1] * eye(x)


def spd(x):
    """A symmetric positive-definite matrix: x x^T + n I."""
    return x @ x.mT + x.shape[-1] * eye(x)


def sym(x):
    return x + x.mT


def colsign(M, rows=0):
    """Signs that make row `rows` of M's columns positive: (..., 1, k)."""
    return lib(M).sign(M[..., rows:rows + 1, :])


def qr_fixed(x, mode="reduced"):
    Q, R = lib(x).linalg.qr(x, mode=mode)
    d = lib(x).sign(lib(x).diagonal(R, 0, -2, -1))              # R's diagonal made positive
    k = d.shape[-1]
    return Q[..., :k] * d.unsqueeze(-2), R * d.unsqueeze(-1)


def eigh_fixed(x, UPLO="L"):
    w, V = lib(x).linalg.eigh(sym(x), UPLO=UPLO)
    return w, V * colsign(V)


def svd_fixed(x, full=False):
    U, S, Vh = lib(x).linalg.svd(x, full_matrices=full)
    k = S.shape[-1]
    s = colsign(U[..., :k])
    return U[..., :k] * s, S, Vh[..., :k, :] * s.mT


DECOMP = {  # name: (fn, input shapes)
    "inv": (lambda x: lib(x).linalg.inv(wc(x)), [(2, 4, 4)]),
    "inverse": (lambda x: wc(x).inverse(), [(3, 3)]),
    "det": (lambda x: lib(x).linalg.det(x), [(2, 3, 3)]),
    "det-method": (lambda x: wc(x).det(), [(4, 4)]),
    "slogdet": (lambda x: lib(x).linalg.slogdet(x), [(2, 3, 3)]),
    "logdet": (lambda x: lib(x).logdet(spd(x)), [(3, 3)]),
    "solve": (lambda a, b: lib(a).linalg.solve(wc(a), b), [(2, 3, 3), (2, 3, 2)]),
    "solve-vector": (lambda a, b: lib(a).linalg.solve(wc(a), b), [(2, 3, 3), (2, 3)]),
    "solve-1d": (lambda a, b: lib(a).linalg.solve(wc(a), b), [(2, 3, 3), (3,)]),
    "solve-broadcast": (lambda a, b: lib(a).linalg.solve(wc(a), b), [(3, 3), (2, 3, 2)]),
    "solve-right": (lambda a, b: lib(a).linalg.solve(wc(a), b, left=False), [(3, 3), (2, 3)]),
    "cholesky": (lambda x: lib(x).linalg.cholesky(spd(x)), [(2, 4, 4)]),
    "cholesky-upper": (lambda x: lib(x).linalg.cholesky(spd(x), upper=True), [(3, 3)]),
    "torch.cholesky": (lambda x: lib(x).cholesky(spd(x), True), [(3, 3)]),
    "cholesky_solve": (lambda x, b: lib(x).cholesky_solve(b, lib(x).linalg.cholesky(spd(x))), [(3, 3), (3, 2)]),
    "cholesky_solve-upper": (lambda x, b: b.cholesky_solve(spd(x).cholesky(upper=True), True), [(3, 3), (3, 2)]),
    "cholesky_inverse": (lambda x: lib(x).cholesky_inverse(lib(x).linalg.cholesky(spd(x))), [(2, 3, 3)]),
    "qr-tall": (lambda x: qr_fixed(x), [(2, 5, 3)]),
    "qr-square": (lambda x: qr_fixed(x), [(4, 4)]),
    "qr-wide": (lambda x: qr_fixed(x), [(3, 5)]),
    "qr-complete-wide": (lambda x: qr_fixed(x, "complete"), [(3, 5)]),
    "torch.qr": (lambda x: x.qr().Q.abs(), [(4, 3)]),
    "eigh": (lambda x: eigh_fixed(x), [(2, 4, 4)]),
    "eigh-U": (lambda x: eigh_fixed(x, "U"), [(3, 3)]),
    "eigvalsh": (lambda x: lib(x).linalg.eigvalsh(sym(x)), [(2, 4, 4)]),
    "svd-tall": (lambda x: svd_fixed(x), [(2, 5, 3)]),
    "svd-wide": (lambda x: svd_fixed(x), [(3, 5)]),
    "svd-full": (lambda x: svd_fixed(x, True), [(5, 3)]),
    "svdvals": (lambda x: lib(x).linalg.svdvals(x), [(2, 4, 3)]),
    "torch.svd": (lambda x: (x.svd().S, x.svd().V.abs()[..., 0]), [(4, 3)]),
    "torch.svd-some": (lambda x: lib(x).svd(x, some=False).U.abs()[:, :2], [(4, 2)]),
    "solve_triangular-upper": (lambda a, b: lib(a).linalg.solve_triangular(wc(a), b, upper=True), [(3, 3), (3, 2)]),
    "solve_triangular-lower-right": (lambda a, b: lib(a).linalg.solve_triangular(wc(a), b, upper=False, left=False),
                                     [(2, 3, 3), (2, 4, 3)]),
    "solve_triangular-unit": (lambda a, b: lib(a).linalg.solve_triangular(a, b, upper=False, unitriangular=True),
                              [(3, 3), (3, 2)]),
    "triangular_solve": (lambda b, a: lib(a).triangular_solve(b, wc(a), transpose=True), [(3, 2), (3, 3)]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", DECOMP)
def test_decompositions_match_torch(name, dtype, device):
    fn, shapes = DECOMP[name]
    check_op(fn, shapes, dtype=dtype, device=device)


COMPOSITE = {
    "vector_norm": (lambda x: lib(x).linalg.vector_norm(x), [(3, 4)]),
    "vector_norm-1": (lambda x: lib(x).linalg.vector_norm(x, 1, dim=1), [(3, 4)]),
    "vector_norm-3-keep": (lambda x: lib(x).linalg.vector_norm(x, 3, dim=(0, 1), keepdim=True), [(3, 4)]),
    "vector_norm-inf": (lambda x: lib(x).linalg.vector_norm(x, math.inf, dim=0), [(3, 4)]),
    "vector_norm--inf": (lambda x: lib(x).linalg.vector_norm(x, -math.inf), [(3, 4)]),
    "vector_norm-0": (lambda x: lib(x).linalg.vector_norm(x.relu(), 0, dim=-1), [(3, 4)]),
    "vector_norm-0.5": (lambda x: lib(x).linalg.vector_norm(x, 0.5), [(3, 4)]),
    "vector_norm--1": (lambda x: lib(x).linalg.vector_norm(x, -1, dim=1), [(3, 4)]),
    "matrix_norm-fro": (lambda x: lib(x).linalg.matrix_norm(x), [(2, 3, 4)]),
    "matrix_norm-nuc": (lambda x: lib(x).linalg.matrix_norm(x, "nuc"), [(2, 3, 4)]),
    "matrix_norm-2": (lambda x: lib(x).linalg.matrix_norm(x, 2, dim=(0, 2), keepdim=True), [(3, 2, 4)]),
    "matrix_norm--2": (lambda x: lib(x).linalg.matrix_norm(x, -2), [(3, 4)]),
    "matrix_norm-1": (lambda x: lib(x).linalg.matrix_norm(x, 1), [(2, 3, 4)]),
    "matrix_norm--1": (lambda x: lib(x).linalg.matrix_norm(x, -1, keepdim=True), [(2, 3, 4)]),
    "matrix_norm-inf": (lambda x: lib(x).linalg.matrix_norm(x, math.inf, dim=(2, 0)), [(2, 3, 4)]),
    "matrix_norm--inf": (lambda x: lib(x).linalg.matrix_norm(x, -math.inf), [(3, 4)]),
    "norm": (lambda x: lib(x).linalg.norm(x), [(2, 3, 4)]),
    "norm-dim": (lambda x: lib(x).linalg.norm(x, dim=1), [(2, 3, 4)]),
    "norm-ord-1d": (lambda x: lib(x).linalg.norm(x[0], 3), [(2, 3)]),
    "norm-ord-2d": (lambda x: lib(x).linalg.norm(x, "nuc"), [(3, 4)]),
    "norm-dims": (lambda x: lib(x).linalg.norm(x, 1, dim=(0, 2)), [(2, 3, 4)]),
    "cond": (lambda x: lib(x).linalg.cond(x), [(2, 3, 3)]),
    "pinv-tall": (lambda x: lib(x).linalg.pinv(x), [(2, 5, 3)]),
    "pinv-wide": (lambda x: lib(x).linalg.pinv(x), [(3, 4)]),
    "pinv-hermitian": (lambda x: lib(x).linalg.pinv(sym(x), hermitian=True), [(3, 3)]),
    "pinverse": (lambda x: x.pinverse(), [(4, 3)]),
    "lstsq": (lambda a, b: lib(a).linalg.lstsq(a, b).solution, [(2, 5, 3), (2, 5, 2)]),
    "lstsq-gelsd": (lambda a, b: lib(a).linalg.lstsq(a, b, driver="gelsd")[:2], [(5, 3), (5, 2)]),
    "lstsq-vector": (lambda a, b: lib(a).linalg.lstsq(a, b, driver="gels")[:2], [(5, 3), (5,)]),
    "lstsq-wide": (lambda a, b: lib(a).linalg.lstsq(a, b).solution, [(3, 5), (3, 2)]),
    "matrix_power-0": (lambda x: lib(x).linalg.matrix_power(x, 0), [(2, 3, 3)]),
    "matrix_power-1": (lambda x: x.matrix_power(1), [(3, 3)]),
    "matrix_power-5": (lambda x: lib(x).linalg.matrix_power(x, 5), [(2, 3, 3)]),
    "matrix_power--3": (lambda x: lib(x).matrix_power(wc(x), -3), [(3, 3)]),
    "matrix_exp": (lambda x: lib(x).linalg.matrix_exp(x), [(2, 4, 4)]),
    "matrix_exp-scaled": (lambda x: (x * 3).matrix_exp(), [(3, 3)]),
    "matrix_exp-small": (lambda x: lib(x).matrix_exp(x * 0.01), [(3, 3)]),
    "multi_dot": (lambda a, b, c, d: lib(a).linalg.multi_dot([a, b, c, d]), [(4,), (4, 6), (6, 2), (2, 3)]),
    "multi_dot-vv": (lambda a, b, c: lib(a).linalg.multi_dot([a, b, c]), [(4,), (4, 6), (6,)]),
    "chain_matmul": (lambda a, b, c: lib(a).chain_matmul(a, b, c), [(2, 4), (4, 6), (6, 2)]),
    "cross": (lambda a, b: lib(a).linalg.cross(a, b), [(2, 4, 3), (1, 4, 3)]),
    "vecdot": (lambda a, b: lib(a).linalg.vecdot(a, b, dim=0), [(3, 4), (3, 1)]),
    "diagonal": (lambda x: lib(x).linalg.diagonal(x, offset=1), [(2, 3, 4)]),
    "diagonal-dims": (lambda x: lib(x).linalg.diagonal(x, offset=-1, dim1=0, dim2=2), [(4, 2, 3)]),
    "vander": (lambda x: lib(x).linalg.vander(x, N=4), [(2, 3)]),
    "kron": (lambda a, b: lib(a).kron(a, b), [(2, 3), (4, 1, 2)]),
    "kron-method": (lambda a, b: a.kron(b), [(3,), (2,)]),
    "inner": (lambda a, b: lib(a).inner(a, b), [(2, 3), (4, 5, 3)]),
    "inner-scalar": (lambda a, b: a[0, 0].inner(b), [(2, 3), (4,)]),
}


@pytest.mark.parametrize("name", COMPOSITE)
def test_composites_match_torch(name, device):
    fn, shapes = COMPOSITE[name]
    skip_cpu_only_lstsq(name, device)
    check_op(fn, shapes, device=device)


def skip_cpu_only_lstsq(name, device):
    if name == "lstsq-gelsd" and device == "cuda":
        pytest.skip("torch and paragrad have only the 'gels' lstsq driver on cuda "
                    "(test_errors_match_torch checks that the others raise)")


@pytest.mark.parametrize("name", ["matrix_exp", "matrix_exp-scaled", "pinv-tall", "lstsq-gelsd", "matrix_norm-nuc"])
def test_composites_float64(name, device):
    fn, shapes = COMPOSITE[name]
    skip_cpu_only_lstsq(name, device)
    check_op(fn, shapes, dtype="float64", device=device)


def test_cond_p_values(device):
    # (no gradient comparison: torch 2.13's cond backward trips its own in-place check)
    for p in ("fro", "nuc", 1, -math.inf):
        check_op(lambda x: lib(x).linalg.cond(wc(x), p), [(2, 3, 3)], device=device, grad=False)


def test_finite_differences(device):
    fd_check(lambda x: pg.linalg.inv(wc(x)), [(3, 3)], device=device)
    fd_check(lambda x: pg.linalg.det(x), [(3, 3)], device=device)
    fd_check(lambda x: pg.linalg.slogdet(x).logabsdet, [(3, 3)], device=device)
    fd_check(lambda a, b: pg.linalg.solve(wc(a), b), [(3, 3), (3, 2)], device=device)
    fd_check(lambda x: pg.linalg.cholesky(spd(x)), [(3, 3)], device=device)
    fd_check(lambda x: qr_fixed(x), [(4, 3)], device=device)
    fd_check(lambda x: qr_fixed(x), [(2, 4)], device=device)
    fd_check(lambda x: eigh_fixed(x), [(3, 3)], device=device)
    fd_check(lambda x: svd_fixed(x), [(4, 3)], device=device)
    fd_check(lambda x: svd_fixed(x), [(2, 3)], device=device)
    fd_check(lambda a, b: pg.linalg.solve_triangular(wc(a), b, upper=True, left=False), [(3, 3), (2, 3)],
             device=device)
    fd_check(lambda x: pg.linalg.pinv(x), [(4, 3)], device=device)
    fd_check(lambda x: pg.linalg.matrix_exp(x), [(3, 3)], device=device)


def grad_of(f):
    """x -> d(sum(sin(f(x))))/dx with create_graph: check_op then compares second derivatives."""
    def g(x):
        y = f(x)
        y = y if isinstance(y, (tuple, list)) else (y,)
        return lib(x).autograd.grad(sum(t.sin().sum() for t in y), x, create_graph=True)[0]
    return g


SECOND = {
    "inv": lambda x: lib(x).linalg.inv(wc(x)),
    "det": lambda x: lib(x).linalg.det(wc(x)),
    "slogdet": lambda x: lib(x).linalg.slogdet(x).logabsdet,
    "solve": lambda x: lib(x).linalg.solve(wc(x), x.sin()),    # (no slice: see the report)
    "cholesky": lambda x: lib(x).linalg.cholesky(spd(x)),
    "qr": lambda x: qr_fixed(x),
    "eigh": lambda x: eigh_fixed(x),
    "svd": lambda x: svd_fixed(x),
    "pinv": lambda x: lib(x).linalg.pinv(x),
}


@pytest.mark.parametrize("name", SECOND)
def test_second_derivatives_match_torch(name, device):
    check_op(grad_of(SECOND[name]), [(3, 3)], dtype="float64", device=device)


def test_second_derivatives_rectangular(device):
    check_op(grad_of(qr_fixed), [(2, 4)], dtype="float64", device=device)
    check_op(grad_of(qr_fixed), [(4, 2)], dtype="float64", device=device)
    check_op(grad_of(lambda x: lib(x).linalg.svdvals(x)), [(2, 4)], dtype="float64", device=device)


def test_det_gradient_of_singular_matrix(device):
    """The cofactor matrix, also where det = 0 (rank n - 1 and rank n - 2). (torch 2.13 returns
    zeros for these exactly singular inputs; the cofactors are the derivative.)"""
    for a in ([[1., 2., 3.], [2., 4., 6.], [0., 1., 5.]], [[1., 2., 3.], [2., 4., 6.], [3., 6., 9.]]):
        a = np.array(a)
        cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1))
                         for j in range(3)] for i in range(3)])
        p = pg.tensor(a, dtype=pg.float64, device=device, requires_grad=True)
        pg.linalg.det(p).backward()
        np.testing.assert_allclose(p.grad.cpu().numpy(), cof, atol=1e-12)


def test_reconstructions(device):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 5, 3))
    A = pg.tensor(a, device=device)
    Q, R = pg.linalg.qr(A, mode="complete")
    assert Q.shape == (2, 5, 5) and R.shape == (2, 5, 3)
    np.testing.assert_allclose((Q @ R).cpu().numpy(), a, atol=1e-12)
    np.testing.assert_allclose((Q.mT @ Q).cpu().numpy(), np.broadcast_to(np.eye(5), (2, 5, 5)), atol=1e-12)
    U, S, Vh = pg.linalg.svd(A)                                     # full_matrices=True
    assert U.shape == (2, 5, 5) and S.shape == (2, 3) and Vh.shape == (2, 3, 3)
    np.testing.assert_allclose((U[..., :3] * S.unsqueeze(-2) @ Vh).cpu().numpy(), a, atol=1e-12)
    s = pg.tensor(a[0] @ a[0].T, device=device)
    w, V = pg.linalg.eigh(s)
    assert bool((w[1:] >= w[:-1]).all())                             # ascending
    np.testing.assert_allclose(((V * w) @ V.mT).cpu().numpy(), a[0] @ a[0].T, atol=1e-12)
    # the triangle UPLO names is the only one read
    lower_only = pg.tensor(np.tril(a[0, :3] @ a[0, :3].T), device=device)
    np.testing.assert_allclose(pg.linalg.eigvalsh(lower_only).cpu().numpy(),
                               np.linalg.eigvalsh(a[0, :3] @ a[0, :3].T), atol=1e-12)
    Qr = pg.linalg.qr(A, mode="r")
    assert Qr.Q.shape == (0,) and Qr.R.shape == (2, 3, 3)


def test_integer_and_named_results(device):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4, 2)) @ rng.standard_normal((3, 2, 5))   # rank 2
    a[1, :, 4] = 0
    p, t = pg.tensor(a, device=device), torch.tensor(a)
    for kw in ({}, {"atol": 1.0}, {"rtol": 0.5}, {"hermitian": False}):
        assert pg.linalg.matrix_rank(p, **kw).cpu().tolist() == torch.linalg.matrix_rank(t, **kw).tolist()
    h = a[:, :, :4] @ a[:, :, :4].transpose(0, 2, 1)
    assert pg.linalg.matrix_rank(pg.tensor(h, device=device), hermitian=True).cpu().tolist() == \
        torch.linalg.matrix_rank(torch.tensor(h), hermitian=True).tolist()
    atol = pg.tensor([0.1, 100.0, 0.1], dtype=pg.float64, device=device)
    assert pg.linalg.matrix_rank(p, atol=atol).cpu().tolist() == \
        torch.linalg.matrix_rank(t, atol=torch.tensor([0.1, 100.0, 0.1], dtype=torch.float64)).tolist()
    assert pg.linalg.matrix_rank(p).dtype is pg.int64
    # rank-deficient least squares: the minimum-norm solution, rank and singular values
    b = rng.standard_normal((3, 4, 2))
    for driver in ("gelsy", "gelsd", "gelss", "gels") if device == "cpu" else ("gels",):
        r = pg.linalg.lstsq(p, pg.tensor(b, device=device), driver=driver)
        tr = torch.linalg.lstsq(t, torch.tensor(b), driver=driver)
        assert r._fields == ("solution", "residuals", "rank", "singular_values")
        assert tuple(r.residuals.shape) == tuple(tr.residuals.shape)
        assert tuple(r.singular_values.shape) == tuple(tr.singular_values.shape)
        if driver != "gels":                                  # (gels assumes full rank)
            np.testing.assert_allclose(r.solution.cpu().numpy(), tr.solution.numpy(), atol=1e-10)
            assert r.rank.cpu().tolist() == tr.rank.tolist()
    sl = pg.linalg.slogdet(pg.tensor(-np.eye(3), device=device))
    assert sl._fields == ("sign", "logabsdet") and float(sl.sign) == -1.0 and float(sl.logabsdet) == 0.0
    assert math.isnan(float(pg.logdet(pg.tensor(-np.eye(3), device=device))))
    assert float(pg.logdet(pg.zeros(3, 3, device=device))) == -math.inf
    assert pg.linalg.eigh(pg.eye(2, device=device))._fields == ("eigenvalues", "eigenvectors")
    assert pg.linalg.svd(pg.eye(2, device=device))._fields == ("U", "S", "Vh")
    assert pg.svd(pg.eye(2, device=device))._fields == ("U", "S", "V")
    assert pg.triangular_solve(pg.eye(2, device=device), pg.eye(2, device=device))._fields == \
        ("solution", "cloned_coefficient")
    U, S, V = pg.svd(pg.tensor(a[0], device=device), compute_uv=False)
    assert U.shape == (4, 4) and V.shape == (5, 5) and not U.cpu().numpy().any()
    np.testing.assert_allclose(S.cpu().numpy(), np.linalg.svd(a[0], compute_uv=False), atol=1e-12)
    ints = pg.tensor([[1, 1], [0, 1]], device=device)
    assert pg.linalg.matrix_power(ints, 3).cpu().tolist() == [[1, 3], [0, 1]]


def test_vector_norm_gradient_at_zero_is_zero(device):
    for ord in (2, 3):
        x = pg.zeros(3, requires_grad=True, device=device)
        pg.linalg.vector_norm(x, ord).backward()
        assert x.grad.cpu().tolist() == [0.0, 0.0, 0.0]


def test_errors_match_torch(device):
    def both(fn, exc=RuntimeError, shapes=((3, 3),), dtype="float32"):
        for L in (torch, pg):
            kw = {"device": device} if L is pg else {}
            xs = [L.ones(*s, dtype=getattr(L, dtype), **kw) for s in shapes]
            with pytest.raises(exc):
                fn(L, *xs)

    both(lambda L, x: L.linalg.inv(x), shapes=[(3, 4)])
    both(lambda L, x: L.linalg.det(x), shapes=[(3,)])
    both(lambda L, x: L.linalg.inv(x), dtype="int64")
    both(lambda L, x: L.linalg.inv(x), dtype="float16")
    both(lambda L, x: L.linalg.inv(x))                                  # singular
    both(lambda L, x: L.linalg.solve(x, x))                             # singular
    both(lambda L, x: L.linalg.cholesky(-x))                            # not positive-definite
    both(lambda L, x, b: L.linalg.solve(x + L.eye(3, dtype=x.dtype, device=x.device), b), shapes=[(3, 3), (4, 2)])
    both(lambda L, x, b: L.linalg.solve(x, b.double()), shapes=[(3, 3), (3, 2)])
    both(lambda L, x: L.linalg.eigh(x, UPLO="X"))
    both(lambda L, x: L.linalg.qr(x, mode="full"))
    both(lambda L, x: L.linalg.matrix_power(x, 2), shapes=[(3, 4)])
    both(lambda L, x: L.linalg.matrix_norm(x, 3))
    both(lambda L, x: L.linalg.matrix_norm(x), shapes=[(3,)])
    both(lambda L, x: L.linalg.vector_norm(x), dtype="int64")
    both(lambda L, x: L.linalg.vector_norm(x, dtype=L.float32), dtype="float64")
    both(lambda L, x: L.linalg.norm(x, 2), shapes=[(2, 3, 3)])
    both(lambda L, x: L.linalg.norm(x, "fro", dim=1))
    both(lambda L, x: L.linalg.vector_norm(x, math.inf), shapes=[(0, 3)])
    both(lambda L, x: L.linalg.multi_dot([x]))
    both(lambda L, x, y: L.linalg.multi_dot([x, y]), shapes=[(3, 3), (2, 2)])
    both(lambda L, x: L.linalg.matrix_exp(x), dtype="int64")
    both(lambda L, x, b: L.linalg.lstsq(x, b), shapes=[(3, 3), (4, 2)])
    if device == "cuda":                                                # the one cuda driver is gels
        with pytest.raises(RuntimeError, match="should be one of"):
            pg.linalg.lstsq(pg.eye(3, device=device), pg.ones(3, 1, device=device), driver="gelsd")
    both(lambda L, x, b: L.linalg.solve_triangular(x, b, upper=True), shapes=[(3, 3), (4, 2)])
    both(lambda L, x, b: L.inner(x, b), shapes=[(2, 3), (4,)])
    both(lambda L, x: L.linalg.qr(x.requires_grad_(), mode="r").R.sum().backward(), shapes=[(3, 3)])
    both(lambda L, x: L.linalg.qr((x + L.eye(4, 3, device=x.device)).requires_grad_(), mode="complete")
         .Q.sum().backward(), shapes=[(4, 3)])
    assert issubclass(pg.linalg.LinAlgError, RuntimeError)
    with pytest.raises(pg.linalg.LinAlgError, match="linalg.inv.*singular"):
        pg.linalg.inv(pg.ones(2, 3, 3, device=device))


def test_missing_fast_path_and_fast_paths_off(device, monkeypatch):
    x = pg.eye(3, device=device) * 2
    with fast_paths(False):                      # decompositions have nothing to compose
        assert pg.linalg.inv(x).cpu().tolist()[0][0] == 0.5
    assert {"linalg_inv", "linalg_svd", "linalg_eigh", "linalg_qr", "linalg_cholesky"} <= set(FAST_PATHS)
    monkeypatch.delattr(type(x._backend), "fast_linalg_svd")
    with pytest.raises(NotImplementedError, match="linalg.svd.*fast_linalg_svd"):
        pg.linalg.svd(x)


def test_namespace_and_methods():
    for n in ("inv", "det", "slogdet", "solve", "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals",
              "matrix_norm", "vector_norm", "norm", "matrix_rank", "pinv", "lstsq", "matrix_power",
              "matrix_exp", "multi_dot", "cross", "vecdot", "diagonal", "solve_triangular", "matmul", "cond",
              "vander"):
        assert callable(getattr(pg.linalg, n)), n
    for n in ("inverse", "det", "logdet", "slogdet", "matrix_power", "matrix_exp", "kron", "inner",
              "pinverse", "cholesky", "qr", "svd", "triangular_solve", "cholesky_solve", "cholesky_inverse"):
        assert callable(getattr(pg, n)) and callable(getattr(pg.Tensor, n)), n
    assert pg.norm is not pg.linalg.norm and pg.cross is not None       # the torch.* forms stay
