"""Linear-algebra decompositions: inv, det, slogdet, solve (and triangular solves), cholesky,
qr, eigh, svd. None is a composition of the ~20 primitives, so each one is a backend fast path
`fast_linalg_<name>` (np.linalg on cpu, cupy.linalg on cuda; batched over leading dims; see
base.py) recorded as one autograd node whose backward is the standard matrix-calculus formula
written with Tensor ops, so it runs on every backend. Under create_graph a node recomputes
its outputs with a fresh differentiable forward from the saved input (its saved outputs are
detached aliases, as elsewhere in paragrad), so second derivatives are right. What composes
from these is in linalg/matrix_functions.py.

Nodes carry torch's class names (LinalgInvExBackward0, ...); where one formula serves several
ops, or an op ends in a transpose or squeeze of it, the op names its output's node (`rename`).
"""
from __future__ import annotations

import math
from collections import namedtuple
import numpy as np
from ... import dtypes as dt
from ...autograd import Node, is_grad_enabled, needs_grad, node_class, record, rename
from ...tensor import Tensor, _wrap
from .._common import alias, check_tensor, same_device, snapshot
from ..conversion import _TYPE_NAMES
from ..creation import eye, ones_like, zeros, zeros_like
from ..movement.copies import cat
from ..autocast_policy import policy

slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])
qr_result = namedtuple("qr", ["Q", "R"])
eigh_result = namedtuple("eigh", ["eigenvalues", "eigenvectors"])
svd_result = namedtuple("svd", ["U", "S", "Vh"])
svd_v_result = namedtuple("svd", ["U", "S", "V"])
lstsq_result = namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])
triangular_solve_result = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])


class LinAlgError(RuntimeError):
    """A matrix a decomposition cannot handle: singular, not positive-definite, or one on
    which the algorithm did not converge (torch.linalg.LinAlgError)."""


# ---- checks and the backend call -----------------------------------------------------------
def _tname(dtype):
    return _TYPE_NAMES.get(dtype.name, dtype.name)


def _check_float(x, op, name="A"):
    check_tensor(x, op, name)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {_tname(x.dtype)}")
    if x.dtype is not dt.float32 and x.dtype is not dt.float64:
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {_tname(x.dtype)}")
    return x


def _check_matrix(A, op, square=True):
    _check_float(A, op)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    return A


def _same_dtype(op, A, B, names=("A", "B")):
    check_tensor(B, op, names[1])
    if B.dtype is not A.dtype:
        raise RuntimeError(f"{op}: Expected {names[0]} and {names[1]} to have the same dtype, but found "
                           f"{names[0]} of type {_tname(A.dtype)} and {names[1]} of type {_tname(B.dtype)} instead")
    same_device(op, A, B)


_WHY = {"inv": "the input matrix is singular", "solve": "the input matrix is singular",
        "cholesky": "the input is not positive-definite"}


def _kernel(name, op, A, *args):
    """The backend's fast_linalg_<name> on A's (and tensor args') buffers. Looked up directly,
    not through backend.fast(): there is no composition to fall back to, so fast_paths(False)
    leaves it on."""
    b = A._backend
    f = getattr(b, "fast_linalg_" + name, None)
    if f is None:
        raise NotImplementedError(f"{op}: the {A.device.type} backend ({type(b).__name__}) has no "
                                  f"fast_linalg_{name}, which this op needs (a decomposition is not "
                                  f"composed from primitives)")
    bufs = [b.contiguous(t._data) if isinstance(t, Tensor) else t for t in (A, *args)]
    try:
        return f(*bufs)
    except Exception as e:
        if type(e).__name__ != "LinAlgError":
            raise
        why = _WHY.get(name, "the algorithm failed to converge")
        raise LinAlgError(f"{op}: the computation could not be completed because {why} "
                          f"({e}; A of shape {tuple(A.shape)}, {A.dtype})") from None


def _out(A, buf):
    return _wrap(buf, A.dtype, A._device)


def _record(node, inputs, outs, saved):
    """One node for several outputs: output i's gradient is backward's i-th argument."""
    node.saved, node.n_outputs = saved, len(outs)
    record(node, inputs, outs[0])
    for i, o in enumerate(outs[1:], 1):
        o.grad_fn, o._output_nr, o._requires_grad = node, i, True


def _eye(x, n=None):
    n = x.shape[-1] if n is None else n
    return eye(n, dtype=x.dtype, device=x.device)


def _rinvT(x, R):
    """x @ R^{-T} for upper-triangular R (..., n, n)."""
    return solve_triangular(R, x.mT, upper=True).mT


# ---- inverse, determinants, solve ----------------------------------------------------------
class LinalgInvExBackward0(Node):
    def backward(self, g):
        A, ainv = self.saved
        t = (inv(A) if is_grad_enabled() else ainv).mT       # (fresh under create_graph)
        return -(t @ g @ t)                                   # -A^{-T} g A^{-T}


@policy("linalg_inv")
def inv(A):
    """The inverse of each square matrix in A (..., n, n)."""
    _check_matrix(A, "linalg.inv")
    out = _out(A, _kernel("inv", "linalg.inv", A))
    if needs_grad(A):
        node = LinalgInvExBackward0()
        node.saved = (snapshot(A), alias(out))
        record(node, (A,), out)
    return out


def _prod_others(s):
    """p_i = prod_{j != i} s_j along the last dim, from exclusive running products (exact
    where some s_j are zero, unlike prod / s_i)."""
    one = ones_like(s.narrow(-1, 0, 1))
    n = s.shape[-1]
    left = cat([one, s.narrow(-1, 0, n - 1).cumprod(-1)], -1)
    right = cat([s.narrow(-1, 1, n - 1).flip(-1).cumprod(-1).flip(-1), one], -1)
    return left * right


class LinalgDetBackward0(Node):
    def backward(self, g):
        # the cofactor matrix det(A) A^{-T}, from A = U diag(s) Vh as det(U) det(Vh) U diag(p) Vh
        # with p_i the product of the other singular values: continuous where A is singular
        (A,) = self.saved
        if A.shape[-1] == 0:
            return zeros_like(A)
        U, S, Vh = _svd(A, False, "linalg.det")
        sign = _out(A, _kernel("det", "linalg.det", U)) * _out(A, _kernel("det", "linalg.det", Vh))
        p = _prod_others(S) * (sign * g).unsqueeze(-1)
        # (create_graph: named as torch's gradient, a linalg.solve for invertible A)
        return rename((U * p.unsqueeze(-2)) @ Vh, "LinalgSolveExBackward0")


def det(A):
    """The determinant of each square matrix in A."""
    _check_matrix(A, "linalg.det")
    out = _out(A, _kernel("det", "linalg.det", A))
    if needs_grad(A):
        node = LinalgDetBackward0()
        node.saved = (snapshot(A),)
        record(node, (A,), out)
    return out


class LinalgSlogdetBackward0(Node):
    def backward(self, gsign, glogabs):        # sign is piecewise constant: no gradient
        (A,) = self.saved
        if glogabs is None:
            return zeros_like(A)
        # (create_graph: named as torch's gradient, a linalg.solve)
        return rename(inv(A).mT * glogabs.unsqueeze(-1).unsqueeze(-1), "LinalgSolveExBackward0")


def slogdet(A):
    """(sign, logabsdet) of det(A), without over- or underflow for large matrices."""
    _check_matrix(A, "linalg.slogdet")
    sign, logabs = (_out(A, r) for r in _kernel("slogdet", "linalg.slogdet", A))
    if needs_grad(A):
        _record(LinalgSlogdetBackward0(), (A,), (sign, logabs), (snapshot(A),))
    return slogdet_result(sign, logabs)


def logdet(input):
    """log(det(A)): NaN where det < 0, -inf where det == 0."""
    sign, logabs = slogdet(input)
    return rename(logabs.masked_fill(sign < 0, math.nan), "WhereBackward0")     # torch's: a where


class SolveBackward(Node):
    """The formula of the solves (linalg.solve, solve_triangular, cholesky_solve, ...): each
    names its output's node as torch does."""

    def backward(self, g):                     # g (..., n, k)
        A, B, X = self.saved
        if is_grad_enabled():
            X = _solve(A, B, "linalg.solve")
        gB = _solve(A.mT, g, "linalg.solve")                  # A^{-T} g
        gA = -(gB @ X.mT) if self.next_edges[0] is not None else None
        return gA, gB


def _batch(op, A, B):
    """A (..., n, n) and B (..., n, k) with their batch dims broadcast together."""
    try:
        batch = tuple(np.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])))
    except ValueError:
        raise RuntimeError(f"{op}: the batch dimensions of A {tuple(A.shape)} and B {tuple(B.shape)} "
                           f"are not broadcastable") from None
    if tuple(A.shape[:-2]) != batch:
        A = A.expand(*batch, *A.shape[-2:])
    if tuple(B.shape[:-2]) != batch:
        B = B.expand(*batch, *B.shape[-2:])
    return A, B


def _solve(A, B, op):
    """X with A X = B; A (..., n, n), B (..., n, k), batch dims broadcast."""
    A, B = _batch(op, A, B)
    out = _out(A, _kernel("solve", op, A, B))
    if needs_grad(A, B):
        node = SolveBackward()
        node.saved = (snapshot(A), snapshot(B), alias(out))
        record(node, (A, B), out)
    return out


def _is_vector_rhs(A, B):
    """torch's rule: B is a (batch of) vector(s) if 1-D or of shape A.shape[:-1]."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


@policy("linalg_solve")
def solve(A, B, *, left=True):
    """X with A X = B (left=True) or X A = B (left=False); B (*, n) is a batch of vectors when
    its shape is A's batch shape + (n,) (or it is 1-D), else (*, n, k)."""
    op = "linalg.solve"
    _check_matrix(A, op)
    _same_dtype(op, A, B)
    n = A.shape[-1]
    if _is_vector_rhs(A, B):
        if B.shape[-1] != n:
            raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                               f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {B.shape[-1]})")
        X = _solve(A if left else A.mT, B.unsqueeze(-1), op).squeeze(-1)
    elif B.ndim < 2 or B.shape[-2 if left else -1] != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{'x'.join(map(str, B.shape[-2:]))})")
    else:
        X = _solve(A, B, op) if left else _solve(A.mT, B.mT, op).mT
    return rename(X, "LinalgSolveExBackward0")


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """X with A X = B (or X A = B), reading only A's upper or lower triangle (and taking its
    diagonal as ones when unitriangular). Differs from torch: computed as a general solve of
    the masked triangle (O(n^3), no triangular-solve fast path), so an exactly singular
    triangle raises LinAlgError where torch returns inf/NaN."""
    op = "linalg.solve_triangular"
    _check_matrix(A, op)
    _same_dtype(op, A, B)
    n = A.shape[-1]
    if B.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    if B.shape[-2 if left else -1] != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{'x'.join(map(str, B.shape[-2:]))})")
    T = A.triu() if upper else A.tril()      # the gradient to A is then that triangle's alone
    if unitriangular:
        diag = _eye(A).to(dt.bool_)
        T = T.masked_fill(diag, 0) + _eye(A)
    X = _solve(T, B, op) if left else _solve(T.mT, B.mT, op).mT
    return rename(X, "LinalgSolveTriangularBackward0")


# ---- cholesky ------------------------------------------------------------------------------
class CholeskyBackward(Node):
    def backward(self, g):
        # torch's formula: gA = L^{-T} Phi(L^T gL) L^{-1}, Phi = the symmetrized lower triangle
        A, L = self.saved
        if is_grad_enabled():
            L = _cholesky(A, False, "linalg.cholesky")
        P = (L.mT @ g).tril()
        P = 0.5 * (P + P.tril(-1).mT)
        X = solve_triangular(L.mT, P, upper=True)
        return solve_triangular(L, X, upper=False, left=False)


def _cholesky(A, upper, op):
    _check_matrix(A, op)
    L = _out(A, _kernel("cholesky", op, A))
    if needs_grad(A):
        node = CholeskyBackward()
        node.saved = (snapshot(A), alias(L))
        record(node, (A,), L)
    return L.mT if upper else L


@policy("linalg_cholesky")
def linalg_cholesky(A, *, upper=False):
    """L lower-triangular with A = L L^T (upper: U = L^T, A = U^T U), for symmetric
    positive-definite A; only A's lower triangle is read."""
    return rename(_cholesky(A, upper, "linalg.cholesky"), "LinalgCholeskyExBackward0")


@policy("cholesky")
def cholesky(input, upper=False):
    """torch.cholesky: linalg.cholesky with a positional `upper`."""
    return rename(_cholesky(input, upper, "cholesky"), "CholeskyBackward0")


@policy("cholesky_solve")
def cholesky_solve(B, L, upper=False):
    """X with A X = B, given A's Cholesky factor L (A = L L^T) or U (upper: A = U^T U)."""
    if upper:
        X = solve_triangular(L, solve_triangular(L.mT, B, upper=False), upper=True)
    else:
        X = solve_triangular(L.mT, solve_triangular(L, B, upper=False), upper=True)
    return rename(X, "CholeskySolveBackward0")


@policy("cholesky_inverse")
def cholesky_inverse(L, upper=False):
    """inv(A) from A's Cholesky factor."""
    _check_matrix(L, "cholesky_inverse")
    return rename(cholesky_solve(_eye(L).expand(*L.shape), L, upper), "CholeskyInverseBackward0")


# ---- qr ------------------------------------------------------------------------------------
def _qr_grad(Q, R, gQ, gR):
    """Reverse mode of A = QR for m >= n (Q (m, n), R (n, n)), as in TensorFlow's QrGrad."""
    qdq = Q.mT @ gQ
    rdr = R @ gR.mT
    low = (qdq - qdq.mT + rdr - rdr.mT).tril()
    return Q @ (gR + _rinvT(low, R)) + _rinvT(gQ - Q @ qdq, R)


class LinalgQrBackward0(Node):
    def backward(self, gQ, gR):
        A, Q, R = self.saved
        if is_grad_enabled():
            Q, R = linalg_qr(A, self.mode)
        m, n = Q.shape[-2], R.shape[-1]
        if self.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                               "nrows > ncols.")
        # (create_graph: the gradient is named as torch's, whose last step is a triangular
        # solve, or for wide A the product with gR added to the padded solve)
        last = "LinalgSolveTriangularBackward0" if m >= n else (
            "CatBackward0" if gR is None else "AddBackward0")
        gQ = zeros_like(Q) if gQ is None else gQ
        gR = zeros_like(R) if gR is None else gR
        if m >= n:
            return rename(_qr_grad(Q, R, gQ, gR), last)
        # wide: A = Q [X | Y] with X = Q R[:, :m] square and Y = Q R[:, m:]
        Rx, Ry = R.narrow(-1, 0, m), R.narrow(-1, m, n - m)
        gRx, gRy = gR.narrow(-1, 0, m), gR.narrow(-1, m, n - m)
        gX = _qr_grad(Q, Rx, gQ + (Q @ Ry) @ gRy.mT, gRx)
        return rename(cat([gX, Q @ gRy], -1), last)


class QrRBackward(Node):
    """mode='r' has no Q to differentiate with: backward raises (a LinalgQrBackward0, as torch)."""

    def backward(self, g):
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                           "differentiate through linalg.qr.")


@policy("linalg_qr")
def linalg_qr(A, mode="reduced"):
    """(Q, R) with A = QR, Q orthonormal columns, R upper-triangular. mode 'reduced': Q (m, k),
    R (k, n), k = min(m, n); 'complete': Q (m, m), R (m, n); 'r': R only (Q empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                           f"(default), 'r', or 'complete'")
    _check_matrix(A, "linalg.qr", square=False)
    q, r = _kernel("qr", "linalg.qr", A, mode)
    R = _out(A, r)
    Q = _out(A, q) if q is not None else zeros(0, dtype=A.dtype, device=A.device)
    if needs_grad(A):
        if mode == "r":
            node = node_class(QrRBackward, "LinalgQrBackward0")()
            node.saved = ()
            record(node, (A,), R)
        else:
            node = LinalgQrBackward0()
            node.mode = mode
            _record(node, (A,), (Q, R), (snapshot(A), alias(Q), alias(R)))
    return qr_result(Q, R)


@policy("linalg_qr")
def qr(input, some=True):
    """torch.qr: linalg.qr with mode 'reduced' (some=True) or 'complete'."""
    return linalg_qr(input, "reduced" if some else "complete")


# ---- eigh ----------------------------------------------------------------------------------
class LinalgEighBackward0(Node):
    def backward(self, gw, gV):
        # torch's formula: gA = V (diag(gw) + skew(V^T gV) / E) V^T, E_ij = w_j - w_i
        A, w, V = self.saved
        if is_grad_enabled():
            w, V = eigh(A, self.uplo)
        if gV is None:
            return (V * gw.unsqueeze(-2)) @ V.mT
        I = _eye(V)
        VtgV = V.mT @ gV
        E = w.unsqueeze(-2) - w.unsqueeze(-1) + I             # 1 on the (zero) diagonal
        inner = (VtgV - VtgV.mT) * 0.5 / E
        if gw is not None:
            inner = inner + gw.unsqueeze(-1) * I
        return V @ inner @ V.mT


@policy("linalg_eigh")
def eigh(A, UPLO="L"):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric A, reading the triangle
    UPLO. The eigenvectors' signs are arbitrary (gradients assume a loss invariant to them)."""
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    _check_matrix(A, "linalg.eigh")
    w, V = (_out(A, r) for r in _kernel("eigh", "linalg.eigh", A, UPLO))
    if needs_grad(A):
        node = LinalgEighBackward0()
        node.uplo = UPLO
        _record(node, (A,), (w, V), (snapshot(A), alias(w), alias(V)))
    return eigh_result(w, V)


@policy("linalg_eigvalsh")
def eigvalsh(A, UPLO="L"):
    return eigh(A, UPLO).eigenvalues


# ---- svd -----------------------------------------------------------------------------------
class LinalgSvdBackward0(Node):
    def backward(self, gU, gS, gVh):
        A, U, S, Vh = self.saved                               # the reduced factors
        if is_grad_enabled():
            U, S, Vh = _svd(A, False, "linalg.svd")
        k = S.shape[-1]
        if self.full:         # torch differentiates only the first k columns of U and rows of Vh
            gU = gU.narrow(-1, 0, k) if gU is not None else None
            gVh = gVh.narrow(-2, 0, k) if gVh is not None else None
        return _svd_grad(U, S, Vh, gU, gS, gVh)


def _svd_grad(U, S, Vh, gU, gS, gVh):
    """torch's svd_backward (real case; needs distinct nonzero singular values when U or Vh
    carry gradient)."""
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        return (U * gS.unsqueeze(-2)) @ Vh
    I = _eye(S, S.shape[-1])
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + I              # 1 on the (zero) diagonal
    if gU is not None:
        UgU = U.mT @ gU
        UgU = UgU - UgU.mT
    if gVh is not None:
        VgV = Vh @ gVh.mT
        VgV = VgV - VgV.mT
    if gU is not None and gVh is not None:
        inner = (UgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VgV) / E
    elif gU is not None:
        inner = UgU / E * S.unsqueeze(-2)
    else:
        inner = S.unsqueeze(-1) * (VgV / E)
    if gS is not None:
        inner = inner + gS.unsqueeze(-1) * I
    if m > n and gU is not None:                  # + (I - U U^T) gU S^{-1} Vh
        gUS = gU / S.unsqueeze(-2)
        return (U @ inner + gUS - U @ (U.mT @ gUS)) @ Vh
    if m < n and gVh is not None:                 # + U S^{-1} gVh (I - V V^T)
        SgV = gVh / S.unsqueeze(-1)
        return U @ (inner @ Vh + SgV - (SgV @ Vh.mT) @ Vh)
    return U @ inner @ Vh


def _svd(A, full_matrices, op):
    _check_matrix(A, op, square=False)
    U, S, Vh = (_out(A, r) for r in _kernel("svd", op, A, full_matrices))
    if needs_grad(A):
        node = LinalgSvdBackward0()
        node.full = full_matrices
        k = S.shape[-1]
        u, vh = alias(U), alias(Vh)
        if full_matrices:
            u, vh = u.narrow(-1, 0, k), vh.narrow(-2, 0, k)
        _record(node, (A,), (U, S, Vh), (snapshot(A), u, alias(S), vh))
    return svd_result(U, S, Vh)


def _no_driver(A, driver, op):
    if driver is not None and A.device.type != "cuda":
        raise RuntimeError(f"{op}: keyword argument `driver=` is only supported on CUDA inputs "
                           f"with cuSOLVER backend.")


@policy("linalg_svd")
def linalg_svd(A, full_matrices=True, *, driver=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending (driver is accepted on cuda and
    ignored). Gradients through U/Vh need distinct singular values and a loss invariant to
    the vectors' signs."""
    _no_driver(A, driver, "linalg.svd")
    return _svd(A, full_matrices, "linalg.svd")


@policy("linalg_svdvals")
def svdvals(A, *, driver=None):
    _no_driver(A, driver, "linalg.svdvals")
    return _svd(A, False, "linalg.svdvals").S


@policy("linalg_svd")
def svd(input, some=True, compute_uv=True):
    """torch.svd: returns V (not Vh); with compute_uv=False, U and V are zero-filled
    (m, m) and (n, n)."""
    if not compute_uv:
        S = svdvals(input)
        m, n = input.shape[-2:]
        return svd_v_result(zeros(*input.shape[:-2], m, m, dtype=input.dtype, device=input.device), S,
                            zeros(*input.shape[:-2], n, n, dtype=input.dtype, device=input.device))
    U, S, Vh = _svd(input, not some, "svd")
    return svd_v_result(U, S, Vh.mT)
