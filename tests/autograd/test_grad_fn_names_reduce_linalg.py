"""grad_fn class names of the reductions, order statistics, sorting, linear algebra and
distances: each row's call runs on torch and paragrad (the same inputs, float64, requiring
grad) and every output's `type(grad_fn).__name__` must be torch's, computed live. The rows
cover the overloads' suffixes (sum() vs sum(dim), max() vs max(dim), sort(stable=)) and the
shape-dependent names of composites (matmul of each rank pair, cdist's matmul form)."""
import math

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import lib

# torch.cholesky / qr / svd / triangular_solve / chain_matmul warn that they are deprecated
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def spd(x):
    """A symmetric positive-definite matrix from x: x x^T + n I."""
    return x @ x.mT + x.shape[-1] * lib(x).eye(x.shape[-1], dtype=x.dtype)


def chol(x):
    return lib(x).linalg.cholesky(spd(x))


def q(x, *values):
    """A q tensor for quantile (no grad)."""
    return lib(x).tensor(values, dtype=x.dtype)


INF = math.inf

# (id, call, input shapes): the call runs on torch and paragrad tensors alike
ROWS = [
    # sum / mean / var / std / prod
    ("sum()", lambda x: x.sum(), [(2, 3)]),
    ("sum(dim)", lambda x: x.sum(1), [(2, 3)]),
    ("sum(dims, keepdim)", lambda x: x.sum((0, 1), keepdim=True), [(2, 3)]),
    ("sum(())", lambda x: x.sum(()), [(2, 3)]),
    ("sum(dtype)", lambda x: x.sum(dtype=torch.float32 if isinstance(x, torch.Tensor) else pg.float32), [(2, 3)]),
    ("sum 0-d(0)", lambda x: x.sum(0), [()]),
    ("mean()", lambda x: x.mean(), [(2, 3)]),
    ("mean(dim)", lambda x: x.mean(1), [(2, 3)]),
    ("mean(())", lambda x: x.mean(()), [(2, 3)]),
    ("mean() empty", lambda x: x.mean(), [(0, 3)]),
    ("mean() half", lambda x: x.half().mean(), [(2, 3)]),
    ("mean(dim) half", lambda x: x.half().mean(1), [(2, 3)]),
    ("var()", lambda x: x.var(), [(2, 3)]),
    ("var(dim, correction)", lambda x: x.var(1, correction=0), [(2, 3)]),
    ("var half", lambda x: x.half().var(1), [(2, 3)]),
    ("std()", lambda x: x.std(), [(2, 3)]),
    ("std(dim)", lambda x: x.std(1, keepdim=True), [(2, 3)]),
    ("std bfloat16", lambda x: x.bfloat16().std(1), [(2, 3)]),
    ("var_mean", lambda x: lib(x).var_mean(x, 1), [(2, 3)]),
    ("var_mean()", lambda x: lib(x).var_mean(x), [(2, 3)]),
    ("var_mean half", lambda x: lib(x).var_mean(x.half(), 1), [(2, 3)]),
    ("std_mean", lambda x: lib(x).std_mean(x, 1), [(2, 3)]),
    ("std_mean legacy", lambda x: lib(x).std_mean(x, False), [(2, 3)]),
    ("std_mean half", lambda x: lib(x).std_mean(x.half(), 1), [(2, 3)]),
    ("prod()", lambda x: x.prod(), [(2, 3)]),
    ("prod(dim)", lambda x: x.prod(1), [(2, 3)]),
    ("prod 0-d(0)", lambda x: x.prod(0), [()]),
    ("logsumexp", lambda x: x.logsumexp(1), [(2, 3)]),
    ("logsumexp keepdim", lambda x: x.logsumexp((0, 1), keepdim=True), [(2, 3)]),
    ("logsumexp 0-d", lambda x: x.logsumexp(0), [()]),
    # extremes
    ("amax", lambda x: x.amax(1), [(2, 3)]),
    ("amax()", lambda x: x.amax(), [(2, 3)]),
    ("amin", lambda x: x.amin((0, 1)), [(2, 3)]),
    ("max()", lambda x: x.max(), [(2, 3)]),
    ("min()", lambda x: x.min(), [(2, 3)]),
    ("max(dim)", lambda x: x.max(1), [(2, 3)]),
    ("min(dim, keepdim)", lambda x: x.min(0, keepdim=True), [(2, 3)]),
    ("max 0-d(0)", lambda x: x.max(0), [()]),
    # order statistics
    ("median()", lambda x: x.median(), [(2, 3)]),
    ("median(dim)", lambda x: x.median(1), [(2, 3)]),
    ("median(dim, keepdim)", lambda x: x.median(0, keepdim=True), [(2, 3)]),
    ("median 0-d(0)", lambda x: x.median(0), [()]),
    ("nanmedian()", lambda x: x.nanmedian(), [(2, 3)]),
    ("nanmedian(dim)", lambda x: x.nanmedian(1), [(2, 3)]),
    ("mode", lambda x: x.mode(1), [(2, 3)]),
    ("mode 0-d", lambda x: x.mode(0), [()]),
    ("kthvalue", lambda x: x.kthvalue(2, 1), [(2, 3)]),
    ("kthvalue keepdim", lambda x: x.kthvalue(1, 0, True), [(2, 3)]),
    ("cummax", lambda x: x.cummax(1), [(2, 3)]),
    ("cummin", lambda x: x.cummin(0), [(2, 3)]),
    ("cummax 0-d", lambda x: x.cummax(0), [()]),
    ("quantile", lambda x: x.quantile(0.3), [(2, 3)]),
    ("quantile(dim)", lambda x: x.quantile(0.3, 1, keepdim=True), [(2, 3)]),
    ("quantile(q tensor)", lambda x: x.quantile(q(x, 0.2, 0.5), 1, interpolation="midpoint"), [(2, 3)]),
    ("nanquantile", lambda x: x.nanquantile(0.5, 0, interpolation="lower"), [(2, 3)]),
    # sorting
    ("sort", lambda x: x.sort(1), [(2, 3)]),
    ("sort(stable=)", lambda x: x.sort(stable=True, dim=0), [(2, 3)]),
    ("sort(stable=False)", lambda x: lib(x).sort(x, stable=False), [(2, 3)]),
    ("sort 0-d", lambda x: x.sort(), [()]),
    ("msort", lambda x: lib(x).msort(x), [(2, 3)]),
    ("topk", lambda x: x.topk(2, 1), [(2, 3)]),
    ("topk 0-d", lambda x: x.topk(1), [()]),
    # norms and distances
    ("norm()", lambda x: x.norm(), [(2, 3)]),
    ("norm(p, dim)", lambda x: x.norm(3, 1), [(2, 3)]),
    ("norm('nuc')", lambda x: x.norm("nuc"), [(2, 3)]),
    ("vector_norm", lambda x: lib(x).linalg.vector_norm(x, INF, 1), [(2, 3)]),
    ("linalg.norm", lambda x: lib(x).linalg.norm(x, 1, 1), [(2, 3)]),
    ("matrix_norm fro", lambda x: lib(x).linalg.matrix_norm(x), [(3, 3)]),
    ("matrix_norm 1", lambda x: lib(x).linalg.matrix_norm(x, 1), [(3, 3)]),
    ("matrix_norm -inf keepdim", lambda x: lib(x).linalg.matrix_norm(x, -INF, keepdim=True), [(2, 3, 3)]),
    ("matrix_norm 1 dims", lambda x: lib(x).linalg.matrix_norm(x, 1, dim=(0, 2)), [(3, 2, 3)]),
    ("matrix_norm 2", lambda x: lib(x).linalg.matrix_norm(x, 2), [(3, 3)]),
    ("matrix_norm -2 keepdim", lambda x: lib(x).linalg.matrix_norm(x, -2, keepdim=True), [(3, 3)]),
    ("matrix_norm nuc", lambda x: lib(x).linalg.matrix_norm(x, "nuc"), [(3, 3)]),
    ("matrix_norm nuc keepdim", lambda x: lib(x).linalg.matrix_norm(x, "nuc", keepdim=True), [(3, 3)]),
    ("cond", lambda x: lib(x).linalg.cond(x), [(2, 3, 3)]),
    ("cond 1", lambda x: lib(x).linalg.cond(x, 1), [(3, 3)]),
    ("cond nuc", lambda x: lib(x).linalg.cond(x, "nuc"), [(3, 3)]),
    ("renorm", lambda x: x.renorm(2, 0, 1.0), [(2, 3)]),
    ("renorm half", lambda x: x.half().renorm(1, 1, 0.5), [(2, 3)]),
    ("cdist", lambda a, b: lib(a).cdist(a, b), [(2, 3), (4, 3)]),
    ("cdist p=1", lambda a, b: lib(a).cdist(a, b, 1), [(2, 2, 3), (2, 4, 3)]),
    ("cdist > 25 rows", lambda a, b: lib(a).cdist(a, b), [(26, 3), (2, 3)]),
    ("cdist > 25 rows p=inf", lambda a, b: lib(a).cdist(a, b, INF), [(2, 3), (26, 3)]),
    ("pdist", lambda x: lib(x).nn.functional.pdist(x), [(4, 3)]),
    ("pdist p=inf", lambda x: lib(x).nn.functional.pdist(x, INF), [(40, 3)]),
    ("pairwise_distance", lambda a, b: lib(a).nn.functional.pairwise_distance(a, b, 1.0, keepdim=True),
     [(2, 3), (2, 3)]),
    ("cosine_similarity", lambda a, b: lib(a).nn.functional.cosine_similarity(a, b), [(2, 3), (2, 3)]),
    # products
    ("mm", lambda a, b: a.mm(b), [(2, 3), (3, 4)]),
    ("bmm", lambda a, b: a.bmm(b), [(2, 2, 3), (2, 3, 4)]),
    ("mv", lambda a, b: a.mv(b), [(2, 3), (3,)]),
    ("dot", lambda a, b: a.dot(b), [(3,), (3,)]),
    ("vdot", lambda a, b: a.vdot(b), [(3,), (3,)]),
    ("vdot_function", lambda a, b: lib(a).vdot(a, b), [(3,), (3,)]),
    ("addbmm", lambda c, a, b: lib(c).addbmm(c, a, b, beta=0), [(2, 4), (2, 2, 3), (2, 3, 4)]),
    ("addmv", lambda c, a, b: lib(c).addmv(c.detach(), a, b, alpha=2), [(2,), (2, 3), (3,)]),
    ("addr", lambda c, a, b: lib(c).addr(c, a, b), [(3,), (2,), (3,)]),
    ("chain_matmul", lambda a, b, c: lib(a).chain_matmul(a, b, c), [(2, 3), (3, 4), (4, 2)]),
    ("chain_matmul one", lambda a: lib(a).chain_matmul(a), [(2, 3)]),
    ("multi_dot vectors", lambda a, b, c: lib(a).linalg.multi_dot([a, b, c]), [(3,), (3, 4), (4,)]),
    ("multi_dot", lambda a, b: lib(a).linalg.multi_dot([a, b]), [(2, 3), (3, 4)]),
    ("kron", lambda a, b: lib(a).kron(a, b), [(2, 3), (2,)]),
    ("inner", lambda a, b: lib(a).inner(a, b), [(2, 2, 3), (4, 3)]),
    ("vecdot", lambda a, b: lib(a).linalg.vecdot(a, b), [(2, 3), (2, 3)]),
    ("linalg.cross", lambda a, b: lib(a).linalg.cross(a, b), [(2, 3), (1, 3)]),
    # einsum
    ("einsum ij,jk->ik", lambda a, b: lib(a).einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
    ("einsum i,j->ji", lambda a, b: lib(a).einsum("i,j->ji", a, b), [(2,), (3,)]),
    ("einsum ii,i->i", lambda a, b: lib(a).einsum("ii,i->i", a, b), [(3, 3), (3,)]),
    ("einsum ij,ij->", lambda a, b: lib(a).einsum("ij,ij->", a, b), [(2, 3), (2, 3)]),
    ("einsum ...ij,...jk", lambda a, b: lib(a).einsum("...ij,...jk", a, b), [(2, 2, 3), (2, 3, 4)]),
    ("einsum ij", lambda x: lib(x).einsum("ij", x), [(2, 3)]),
    ("einsum ii->i", lambda x: lib(x).einsum("ii->i", x), [(3, 3)]),
    ("einsum ij->j", lambda x: lib(x).einsum("ij->j", x), [(2, 3)]),
    # decompositions and what is built on them
    ("det", lambda x: lib(x).linalg.det(x), [(3, 3)]),
    ("logdet", lambda x: lib(x).logdet(spd(x)), [(3, 3)]),
    ("slogdet", lambda x: lib(x).linalg.slogdet(x), [(3, 3)]),
    ("inv", lambda x: lib(x).linalg.inv(x), [(3, 3)]),
    ("inverse", lambda x: lib(x).inverse(x), [(2, 3, 3)]),
    ("solve", lambda a, b: lib(a).linalg.solve(a, b), [(3, 3), (3, 2)]),
    ("solve vector", lambda a, b: lib(a).linalg.solve(a, b), [(2, 3, 3), (2, 3)]),
    ("solve left=False", lambda a, b: lib(a).linalg.solve(a, b, left=False), [(3, 3), (2, 3)]),
    ("solve_triangular", lambda a, b: lib(a).linalg.solve_triangular(spd(a), b, upper=True), [(3, 3), (3, 2)]),
    ("solve_triangular left=False", lambda a, b: lib(a).linalg.solve_triangular(
        spd(a), b, upper=False, left=False, unitriangular=True), [(3, 3), (2, 3)]),
    ("triangular_solve", lambda b, a: lib(a).triangular_solve(b, spd(a), transpose=True), [(3, 2), (3, 3)]),
    ("linalg.cholesky", lambda x: chol(x), [(3, 3)]),
    ("linalg.cholesky upper", lambda x: lib(x).linalg.cholesky(spd(x), upper=True), [(3, 3)]),
    ("cholesky", lambda x: lib(x).cholesky(spd(x)), [(3, 3)]),
    ("cholesky upper", lambda x: lib(x).cholesky(spd(x), True), [(3, 3)]),
    ("cholesky_solve", lambda b, x: lib(x).cholesky_solve(b, chol(x)), [(3, 2), (3, 3)]),
    ("cholesky_solve upper", lambda b, x: lib(x).cholesky_solve(b, chol(x).mT, True), [(3, 2), (3, 3)]),
    ("cholesky_inverse", lambda x: lib(x).cholesky_inverse(chol(x)), [(3, 3)]),
    ("qr", lambda x: lib(x).linalg.qr(x), [(3, 2)]),
    ("qr complete", lambda x: lib(x).linalg.qr(x, "complete"), [(2, 3)]),
    ("eigh", lambda x: lib(x).linalg.eigh(spd(x)), [(3, 3)]),
    ("eigvalsh", lambda x: lib(x).linalg.eigvalsh(spd(x)), [(3, 3)]),
    ("linalg.svd", lambda x: lib(x).linalg.svd(x, full_matrices=False), [(3, 2)]),
    ("svdvals", lambda x: lib(x).linalg.svdvals(x), [(2, 3, 2)]),
    ("svd compute_uv=False", lambda x: lib(x).svd(x, compute_uv=False), [(3, 2)]),
    ("pinv", lambda x: lib(x).linalg.pinv(x), [(3, 2)]),
    ("pinv hermitian", lambda x: lib(x).linalg.pinv(spd(x), hermitian=True), [(3, 3)]),
    ("pinverse", lambda x: lib(x).pinverse(x), [(3, 2)]),
    ("lstsq", lambda a, b: lib(a).linalg.lstsq(a, b).solution, [(3, 2), (3, 2)]),
    ("lstsq gelsd", lambda a, b: lib(a).linalg.lstsq(a, b, driver="gelsd")[:2], [(5, 3), (5, 2)]),
    ("lstsq vector", lambda a, b: lib(a).linalg.lstsq(a, b, driver="gels")[:2], [(5, 3), (5,)]),
    ("matrix_exp", lambda x: lib(x).linalg.matrix_exp(x), [(2, 3, 3)]),
    ("matrix_exp empty", lambda x: lib(x).linalg.matrix_exp(x), [(0, 0)]),
    ("matrix_power 0", lambda x: lib(x).linalg.matrix_power(x, 0), [(3, 3)]),
    ("matrix_power -1", lambda x: lib(x).linalg.matrix_power(x, -1), [(3, 3)]),
    ("matrix_power 5", lambda x: lib(x).linalg.matrix_power(x, 5), [(3, 3)]),
    ("matrix_power -2 batched", lambda x: lib(x).linalg.matrix_power(x, -2), [(2, 3, 3)]),
    # statistics
    ("trapezoid", lambda y: lib(y).trapezoid(y, dx=2.0), [(2, 3)]),
    ("trapezoid(x)", lambda y, x: lib(y).trapezoid(y, x), [(2, 3), (3,)]),
    ("cumulative_trapezoid(x)", lambda y, x: lib(y).cumulative_trapezoid(y, x), [(2, 3), (3,)]),
]

# matmul of every rank pair, each operand alone or both requiring grad (folded, batched,
# transposed back or viewed: torch's node depends on all three)
_A = [(3,), (1, 3), (2, 3), (1, 2, 3), (1, 1, 3), (2, 2, 3), (2, 1, 2, 3)]
_B = [(3,), (3, 4), (3, 1), (2, 3, 4), (1, 3, 4), (2, 2, 3, 4)]
_GRADS = {"both": lambda a, b: a @ b, "a": lambda a, b: a @ b.detach(), "b": lambda a, b: a.detach() @ b}
ROWS += [(f"matmul {sa}@{sb} {g}", _GRADS[g], [sa, sb]) for sa in _A for sb in _B for g in _GRADS]


def _names(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [type(o.grad_fn).__name__ if getattr(o, "grad_fn", None) is not None else None for o in outs]


@pytest.mark.parametrize("call,shapes", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_grad_fn_name_is_torchs(call, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(-1, 1, s) for s in shapes]
    want = _names(call(*[torch.tensor(a, requires_grad=True) for a in arrays]))
    got = _names(call(*[pg.tensor(a, requires_grad=True) for a in arrays]))
    assert got == want
    assert any(want), "a row whose torch output has no grad_fn checks nothing"
