"""Linear algebra composed from the decompositions of linalg_decompositions.py and ordinary
ops (gradients from autograd): norms, rank, pinv, lstsq, matrix powers and exponentials,
multi_dot, kron, inner, and the torch.* forms. paragrad/linalg.py gives them torch.linalg's
names; the torch.* forms and Tensor methods are this module's __all__ / METHODS.
"""
from __future__ import annotations

import math
from ... import dtypes as dt
from ...autograd import Node, is_grad_enabled, needs_grad, no_grad, record, rename
from ...tensor import Tensor
from .._common import alias, check_tensor, dim_arg, dims_arg, same_device, snapshot
from ..elementwise.binary import maximum
from ..creation import eye, ones_like, zeros
from ..movement.copies import cat
from .vector_norm import norm_dtype, vector_norm
from ..movement.rearrangement import cross as _cross, diagonal as _diagonal, tensordot
from .decompositions import (_check_matrix, _eye, _svd, _tname, cholesky, cholesky_inverse,
                                    cholesky_solve, det, eigh, eigvalsh, inv, logdet, lstsq_result,
                                    qr, slogdet, solve_triangular, svd, svdvals,
                                    triangular_solve_result)
from ... import autocast_state
from ..autocast_policy import policy, run_as_one


# ---- norms, rank, pseudo-inverse, least squares --------------------------------------------
def _matrix_dims(A, dim, op):
    if not (isinstance(dim, (tuple, list)) and len(dim) == 2):
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {dim}")
    d0, d1 = dim_arg(dim[0], A.ndim, op), dim_arg(dim[1], A.ndim, op)
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different. Got ({d0}, {d1})")
    return d0, d1


@policy("matrix_norm")
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """'fro', 'nuc' (sum of singular values), 2 / -2 (largest / smallest singular value),
    1 / -1 (max / min column sum of |A|), inf / -inf (max / min row sum) over the matrices in
    the dims `dim`."""
    op = "linalg.matrix_norm"
    check_tensor(A, op)
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {_tname(A.dtype)}")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    d0, d1 = _matrix_dims(A, dim, op)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim, dtype=dtype)
    A = norm_dtype(A, dtype, op)
    if ord in ("nuc", 2, -2):
        s = _svd(A.movedim((d0, d1), (-2, -1)), False, op).S
        r = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        if keepdim:         # torch puts the dims back with a permute
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
            r = rename(r, "PermuteBackward0")
        return r
    if ord in (1, -1, math.inf, -math.inf):
        summed, over = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(summed, keepdim=keepdim)
        if not keepdim and summed < over:       # the sum took a dim from before `over`
            over -= 1
        return s.amax(over, keepdim=keepdim) if ord > 0 else s.amin(over, keepdim=keepdim)
    raise RuntimeError(f"{op}: Order {ord} not supported.")


def linalg_norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm (dim an int or 1-tuple, or A 1-D) or a matrix norm (dim a 2-tuple, or A
    2-D with ord given); with neither dim nor ord, the 2-norm of A flattened."""
    op = "linalg.norm"
    check_tensor(A, op)
    if dim is not None:
        dims = (dim,) if not isinstance(dim, (tuple, list)) else tuple(dim)
        if len(dims) == 1:
            if isinstance(ord, str):
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dims[0]}")
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise RuntimeError(f"{op}: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim not in (1, 2):
        raise RuntimeError(f"{op}: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {A.ndim}D.")
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)


@policy("linalg_cond")
def cond(A, p=None):
    """The condition number: s_max / s_min for p None / 2 (s_min / s_max for -2), else
    norm(A, p) * norm(inv(A), p)."""
    _check_matrix(A, "linalg.cond", square=p not in (None, 2, -2))
    # torch's last steps: a squeeze of the ratio; a product (nuc); an in-place nan_to_num
    if p in (None, 2, -2):
        s = svdvals(A)
        return rename(s.amax(-1) / s.amin(-1) if p != -2 else s.amin(-1) / s.amax(-1), "SqueezeBackward1")
    return rename(matrix_norm(A, p) * matrix_norm(inv(A), p),
                  "MulBackward0" if p == "nuc" else "NanToNumBackward0")


def _tolerance(A, S, atol, rtol):
    """max(atol, rtol * S_max) per matrix, (..., 1), with torch's defaults: rtol = eps *
    max(m, n) unless atol > 0 is given."""
    smax = S.amax(-1, keepdim=True)
    col = lambda t: t.unsqueeze(-1) if isinstance(t, Tensor) else t   # noqa: E731  batch -> (..., 1)
    default = dt.finfo(A.dtype).eps * max(A.shape[-2], A.shape[-1])
    if rtol is None:
        if atol is None:
            rtol = default
        elif isinstance(atol, Tensor):
            rtol = (atol <= 0).to(A.dtype) * default
        else:
            rtol = 0.0 if atol > 0 else default
    tol = col(rtol) * smax
    if isinstance(atol, Tensor):
        return maximum(tol, col(atol).to(tol.dtype))
    return tol.clamp(min=atol) if atol is not None else tol


@policy("linalg_matrix_rank")
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """The number of singular values (|eigenvalues| when hermitian) above the tolerance
    max(atol, rtol * largest); int64."""
    op = "linalg.matrix_rank"
    _check_matrix(A, op, square=hermitian)
    with no_grad():
        A = A.detach()
        S = eigvalsh(A).abs() if hermitian else _svd(A, False, op).S
        if S.shape[-1] == 0:
            return zeros(*A.shape[:-2], dtype=dt.int64, device=A.device)
        return (S > _tolerance(A, S, atol, rtol)).sum(-1)


def _pinv_grad(g, P, A):
    """torch's pinv_backward: the derivative of the pseudo-inverse where the rank is constant."""
    m, n = A.shape[-2], A.shape[-1]
    Pt, gt = P.mT, g.mT
    if m <= n:
        K = gt @ P
        KPt = K @ Pt
        return -(P @ K).mT + KPt - (A @ P) @ KPt + (Pt @ P) @ (gt - K @ A)
    K = P @ gt
    PtK = Pt @ K
    return -(K @ P).mT + (gt - A @ K) @ P @ Pt + PtK - PtK @ P @ A


class LinalgPinvBackward0(Node):
    def backward(self, g):
        A, P = self.saved
        if is_grad_enabled():
            P = pinv(A, **self.kw)
        return _pinv_grad(g, P, A)


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse (n, m) from the SVD (eigh when hermitian), treating
    singular values at or below max(atol, rtol * largest) as zero."""
    op = "linalg.pinv"
    _check_matrix(A, op, square=hermitian)
    m, n = A.shape[-2], A.shape[-1]
    with no_grad():
        Ad = A.detach()
        if m == 0 or n == 0:
            P = zeros(*A.shape[:-2], n, m, dtype=A.dtype, device=A.device)
        elif hermitian:
            w, V = eigh(Ad)
            keep = w.abs() > _tolerance(Ad, w.abs(), atol, rtol)
            winv = w.masked_fill(~keep, 1).reciprocal().masked_fill(~keep, 0)
            P = (V * winv.unsqueeze(-2)) @ V.mT
        else:
            U, S, Vh = _svd(Ad, False, op)
            keep = S > _tolerance(Ad, S, atol, rtol)
            sinv = S.masked_fill(~keep, 1).reciprocal().masked_fill(~keep, 0)
            P = (Vh.mT * sinv.unsqueeze(-2)) @ U.mT
    if needs_grad(A):
        node = LinalgPinvBackward0()
        node.kw = {"atol": atol, "rtol": rtol, "hermitian": hermitian}
        node.saved = (snapshot(A), alias(P))
        record(node, (A,), P)
    return P


@policy("pinverse")
def pinverse(input, rcond=1e-15):
    """torch.pinverse: linalg.pinv with rtol=rcond."""
    return pinv(input, rtol=rcond)


@policy("linalg_lstsq")
def lstsq(A, B, rcond=None, *, driver=None):
    """The minimum-norm least-squares solution of A X = B (through pinv(A), so rank-deficient
    A work with every driver), with the other fields torch fills for the driver: residuals
    (squared column norms of A X - B, for m > n and full rank; not for 'gelsy'), rank (not for
    'gels'), singular_values ('gelsd', 'gelss'); an unfilled field is an empty tensor.
    Default driver: 'gelsy' on cpu, 'gels' (the only one) on cuda, as torch."""
    op = "torch.linalg.lstsq"
    _check_matrix(A, op, square=False)
    check_tensor(B, op, "B")
    if B.dtype is not A.dtype:
        raise RuntimeError(f"{op}: Expected input and other to have the same dtype, but got input's "
                           f"dtype {_tname(A.dtype)} and other's dtype {_tname(B.dtype)}")
    same_device(op, A, B)
    drivers = ("gels",) if A.device.type == "cuda" else ("gels", "gelsy", "gelsd", "gelss")
    driver = driver if driver is not None else ("gels" if A.device.type == "cuda" else "gelsy")
    if driver not in drivers:
        raise RuntimeError(f"{op}: parameter `driver` should be one of ({', '.join(drivers)})")
    if not 0 <= A.ndim - B.ndim <= 1:
        raise RuntimeError(f"{op}: input.dim() must be greater or equal to other.dim() and "
                           f"(input.dim() - other.dim()) <= 1")
    vector = B.ndim == A.ndim - 1
    B2 = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    if B2.shape[-2] != m:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2)")
    X = pinv(A, rtol=rcond) @ B2                                               # (..., n, k)
    empty = zeros(0, dtype=A.dtype, device=A.device)
    rank = matrix_rank(A, rtol=rcond) if driver != "gels" else zeros(0, dtype=dt.int64, device=A.device)
    residuals = empty
    if driver != "gelsy" and m > n and (driver == "gels" or bool((rank == n).all())):
        r = A @ X - B2
        residuals = rename((r * r).sum(-2), "LinalgLstsqBackward0")          # (..., k)
    sv = svdvals(A.detach()) if driver in ("gelsd", "gelss") else empty
    X = rename(X.squeeze(-1) if vector else X, "LinalgLstsqBackward0")
    return lstsq_result(X, residuals, rank, sv)


# ---- powers, exponential, products ---------------------------------------------------------
def matrix_power(A, n):
    """A^n by repeated squaring (log2 |n| products); n < 0 inverts first; n = 0 gives
    identities (with zero gradient)."""
    op = "linalg.matrix_power"
    check_tensor(A, op)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    n = int(n)
    if n == 0:          # torch copies identities into a clone of A (CopyBackwards)
        full = ones_like(A, dtype=dt.bool_)
        return rename(A.masked_fill(full, 0) + eye(A.shape[-1], dtype=A.dtype, device=A.device),
                      "CopyBackwards")
    if n == 1:
        return A.clone()
    if n < 0:
        A, n = inv(A), -n
    result, z = None, A
    while n:
        if n & 1:
            result = z if result is None else result @ z
        n >>= 1
        if n:
            z = z @ z
    return result


_EXP_COEF = [1.0 / math.factorial(j) for j in range(20)]


def matrix_exp(A):
    """exp(A) by scaling and squaring: A / 2^s with 1-norm <= 1, its degree-19 Taylor
    polynomial (truncation error < 1/20! ~ 4e-19, below float64 rounding) evaluated in powers
    of X^4 with 7 matmuls, then s squarings. The scale s is the largest over the batch (one
    host read of the norm). Gradients come from autograd of that composition. Under autocast
    it runs as one op on no list (torch's native kernel): its matmuls are not cast down."""
    out = run_as_one("linalg_matrix_exp", _matrix_exp, A) if autocast_state.on else _matrix_exp(A)
    return rename(out, "LinalgMatrixExpBackward0")


def _matrix_exp(A):
    op = "linalg.matrix_exp"
    _check_matrix(A, op)
    if A.numel() == 0:
        return A.clone()
    with no_grad():
        norm = float(A.abs().sum(-2).amax())                  # the largest 1-norm in the batch
    s = math.ceil(math.log2(norm)) if math.isfinite(norm) and norm > 1 else 0
    X = A * (0.5 ** s) if s else A
    I = _eye(A)
    powers = (I, X, X @ X)
    powers += (powers[2] @ X,)
    X4 = powers[2] @ powers[2]
    block = lambda k: sum(_EXP_COEF[4 * k + i] * powers[i] for i in range(4))  # noqa: E731
    P = block(4)
    for k in (3, 2, 1, 0):                                    # Horner in X^4
        P = P @ X4 + block(k)
    for _ in range(s):
        P = P @ P
    return P


@policy("multi_dot")
def multi_dot(tensors):
    """The product of a chain of matrices (the first may be 1-D, as a row; the last 1-D, as a
    column), multiplied in the order with the fewest scalar multiplications."""
    op = "multi_dot()"
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"{op}: expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        check_tensor(t, "multi_dot", f"tensors[{i}]")
        ok = t.ndim in (1, 2) if i in (0, n - 1) else t.ndim == 2
        if not ok:
            which = "the first tensor" if i == 0 else ("the last tensor" if i == n - 1 else f"tensor {i}")
            raise RuntimeError(f"{op}: {which} must be {'1D or 2D' if i in (0, n - 1) else '2D'} but got {t.ndim}D")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(f"{op}: all tensors must have be the same dtype but tensor 0 is "
                               f"{_tname(tensors[0].dtype)} and tensor {i} is {_tname(t.dtype)}")
    mats = list(tensors)
    first_vec, last_vec = mats[0].ndim == 1, mats[-1].ndim == 1
    if first_vec:
        mats[0] = mats[0].unsqueeze(0)
    if last_vec:
        mats[-1] = mats[-1].unsqueeze(1)
    for i in range(n - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"{op}: tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} "
                               f"and {list(tensors[i + 1].shape)} cannot be multiplied")
    split = _chain_order([m.shape[0] for m in mats] + [mats[-1].shape[1]])

    def product(i, j):
        return mats[i] if i == j else product(i, split[i][j]) @ product(split[i][j] + 1, j)

    out = product(0, n - 1)
    if first_vec:
        out = out.squeeze(0)
    if last_vec:
        out = out.squeeze(-1)
    return rename(out, "ViewBackward0")        # torch's result is a view of its last product


def _chain_order(dims):
    """The matrix-chain dynamic program: split[i][j] = where to split the product i..j."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def linalg_cross(input, other, *, dim=-1):
    """The 3-vector cross product along dim; the inputs' other dims broadcast (torch requires
    them to have the same number of dims)."""
    from ..movement.rearrangement import broadcast_tensors
    check_tensor(input, "linalg.cross")
    check_tensor(other, "linalg.cross", "other")
    if input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions (got "
                           f"shapes {tuple(input.shape)} and {tuple(other.shape)})")
    input, other = broadcast_tensors(input, other)
    return _cross(input, other, dim)


@policy("linalg_vecdot")
def vecdot(x, y, *, dim=-1):
    """sum(x * y) along dim, with broadcasting (real tensors: no conjugation)."""
    check_tensor(x, "linalg.vecdot", "x")
    check_tensor(y, "linalg.vecdot", "y")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of "
                           f"type {_tname(x.dtype)} and y of type {_tname(y.dtype)} instead")
    return (x * y).sum(dim)


def linalg_diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return _diagonal(A, offset, dim1, dim2)


def vander(x, N=None):
    """Columns x^0, x^1, ..., x^(N-1) (increasing powers): (*, n) -> (*, n, N)."""
    check_tensor(x, "linalg.vander", "x")
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    N = x.shape[-1] if N is None else N
    if N < 1:
        raise RuntimeError("N must be greater than 1.")
    one = ones_like(x).unsqueeze(-1)
    if N == 1:
        return one
    return cat([one, x.unsqueeze(-1).expand(*x.shape, N - 1).cumprod(-1)], -1)


def kron(input, other):
    """The Kronecker product: out[i*b + j] = input[i] * other[j] along every dim (the
    shorter shape padded with leading ones)."""
    check_tensor(input, "kron")
    check_tensor(other, "kron", "other")
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    a = input.reshape(tuple(s for d in sa for s in (d, 1)))                   # (a0, 1, a1, 1, ...)
    b = other.reshape(tuple(s for d in sb for s in (1, d)))                   # (1, b0, 1, b1, ...)
    return rename((a * b).reshape(tuple(x * y for x, y in zip(sa, sb))), "UnsafeViewBackward0")


def inner(input, other):
    """Sum over the last dims: out shape input.shape[:-1] + other.shape[:-1] (a product when
    either is a scalar)."""
    check_tensor(input, "inner")
    check_tensor(other, "inner", "other")
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got "
                           f"shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([input.ndim - 1], [other.ndim - 1]))


@policy("inverse")
def inverse(input):
    """The inverse of each square matrix in input (..., n, n), as torch.inverse (linalg.inv)."""
    return inv(input)


@policy("triangular_solve")
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """torch.triangular_solve (deprecated in torch): (solution of op(A) X = b, a copy of A),
    op(A) = A^T when transpose."""
    X = solve_triangular(A.mT if transpose else A, b, upper=upper != transpose,
                         unitriangular=unitriangular)
    # torch's one node makes both outputs; here each output's own node takes its name
    return triangular_solve_result(rename(X, "TriangularSolveBackward0"),
                                   rename(A.clone(), "TriangularSolveBackward0"))


__all__ = ["inverse", "det", "logdet", "slogdet", "matrix_power", "matrix_exp", "kron", "inner",
           "pinverse", "cholesky", "qr", "svd", "triangular_solve", "cholesky_solve",
           "cholesky_inverse"]


@policy("norm")
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm: 'fro' (or None) is the vector 2-norm over dim (all elements when None, a
    matrix norm for other strings); a number p, linalg.vector_norm's p."""
    if isinstance(p, str) and not (p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2)):
        return matrix_norm(input, p, tuple(range(input.ndim)) if dim is None else dim, keepdim,
                           dtype=dtype)
    return vector_norm(input, 2 if p in ("fro", None) else p, dim, keepdim, dtype=dtype)
