"""PyTorch functions composed from differentiable paragrad ops (gradients come from
autograd, and every backend runs them unchanged): rotations and diagonal embeddings, index
factories (tril/triu_indices, combinations), sign and floating-point decomposition (signbit,
copysign, ldexp, frexp), integer gcd/lcm, membership (isin), the add-a-product family (addbmm,
addmv, addr, chain_matmul), statistics (std_mean, cov, corrcoef), trapezoidal integration,
renorm and unique_consecutive.

Differences from PyTorch (also in the docstrings):
- signbit(-nan) is False: the sign bit of a NaN can't be read without a bit-cast primitive,
  which the backend boundary lacks (copysign with a -nan `other` follows).
- unique_consecutive returns values that don't require grad (PyTorch records a node whose
  backward raises "not implemented").
"""
from __future__ import annotations

import math
import warnings
from collections import namedtuple

import numpy as np

from .. import autograd
from .. import dtypes as dt
from ..backends import backend_for
from ..tensor import Tensor
from ._common import check_tensor, dim_arg, floating, same_device
from .elementwise.binary import sub, where
from .creation import _dtype, _finish, _number, factory_device, full, ones, tensor, zeros
from .indexing.subscripts import nonzero
from .linalg.products import mm, mv, outer
from .elementwise.math import norm
from .movement.copies import cat, pad
from .reduce.reductions import mean, std
from .movement.rearrangement import cumsum, diag

frexp_result = namedtuple("frexp", ["mantissa", "exponent"])


def _all_true(x):
    return ones(tuple(x.shape), dtype=dt.bool_, device=x.device)


# ---- rotations and diagonals ------------------------------------------------------------------
def rot90(input, k=1, dims=(0, 1)):
    """input rotated by 90 degrees k times, from the first towards the second of dims."""
    check_tensor(input, "rot90")
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"rot90: expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"rot90: expected total dims >= 2, but got total dims = {input.ndim}")
    if dims[0] == dims[1] or abs(dims[0] - dims[1]) == input.ndim:
        raise RuntimeError(f"rot90: expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    d0, d1 = (dim_arg(d, input.ndim, "rot90") for d in dims)
    k %= 4
    if k == 1:
        return input.flip((d1,)).transpose(d0, d1)
    if k == 2:
        return input.flip((d0, d1))
    if k == 3:
        return input.flip((d0,)).transpose(d0, d1)
    return input.clone()


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """The last dim of input put on the offset-th diagonal of new (dim1, dim2) planes of the
    output (which has one dim more); zeros elsewhere."""
    from .creation import arange
    check_tensor(input, "diag_embed")
    nd = input.ndim + 1
    d1, d2 = dim_arg(dim1, nd, "diag_embed"), dim_arg(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + abs(offset)
    # element i goes to row i + max(-offset, 0): pad so that the row index is the position
    x = pad(input, [max(-offset, 0), max(offset, 0)]) if offset else input   # (..., n)
    r = arange(n, device=input.device).unsqueeze(1)
    c = arange(n, device=input.device).unsqueeze(0)
    off_diag = (c - r) != offset                                              # (n, n)
    out = x.unsqueeze(-1).expand(*x.shape, n).masked_fill(off_diag, 0)       # (..., n, n)
    return out.movedim((-2, -1), (d1, d2))


def diagflat(input, offset=0):
    """A square matrix with the flattened input on its offset-th diagonal."""
    check_tensor(input, "diagflat")
    return diag(input.reshape(-1), offset)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of 1-D x: columns x**(N-1), ..., x**0 (increasing: x**0 first).
    Integer and bool inputs give int64, as PyTorch (the powers are a cumprod)."""
    check_tensor(x, "vander")
    if x.ndim != 1:
        raise RuntimeError("vander: x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("vander: N must be non-negative.")
    dtype = dt.promote_types(x.dtype, dt.int64)
    first = ones(x.shape[0], min(n, 1), dtype=dtype, device=x.device)         # (len, 1) or (len, 0)
    if n > 1:
        powers = x.to(dtype).unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1)  # (len, n - 1)
        first = cat([first, powers], 1)
    return first if increasing else first.flip((1,))


# ---- index factories ----------------------------------------------------------------------------
def _tri_indices(row, col, offset, dtype, device, requires_grad, lower):
    op = "tril_indices" if lower else "triu_indices"
    dtype = _dtype(dtype, op, dt.int64)
    if dtype.is_floating_point or dtype is dt.bool_:
        raise NotImplementedError(f"{op}: not implemented for {dtype} (integer dtypes only)")
    if row < 0:
        raise RuntimeError(f"{op}: row must be non-negative, got {row}")
    if col < 0:
        raise RuntimeError(f"{op}: col must be non-negative, got {col}")
    # indices depend only on the sizes: built on the host like eye(), in row-major order
    rows, cols = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    dev = factory_device(device)
    arr = np.stack([rows, cols]).astype(np.int64).reshape(2, -1)
    return _finish(backend_for(dev).from_numpy(arr, dtype, dev.index), dtype, dev, requires_grad)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, requires_grad=False):
    """The (2, N) coordinates of the lower triangle (on and below the offset-th diagonal) of a
    row x col matrix, row by row."""
    return _tri_indices(row, col, offset, dtype, device, requires_grad, True)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None, requires_grad=False):
    """The (2, N) coordinates of the upper triangle (on and above the offset-th diagonal)."""
    return _tri_indices(row, col, offset, dtype, device, requires_grad, False)


def combinations(input, r=2, with_replacement=False):
    """All length-r combinations of the elements of 1-D input (itertools.combinations order),
    as rows of an (C, r) tensor; with_replacement allows repeats."""
    check_tensor(input, "combinations")
    if input.ndim != 1:
        raise RuntimeError(f"combinations: Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"combinations: Expect a non-negative number, but got {r}")
    if r == 0:
        return input[:0]
    n = input.shape[0]
    # as PyTorch: every r-tuple of positions (n**r of them), kept where strictly (or weakly)
    # increasing; the indices depend only on n and r, so they are built on the host
    grid = np.indices((n,) * r).reshape(r, n ** r)                      # (r, n**r)
    keep = np.all(grid[:-1] <= grid[1:] if with_replacement else grid[:-1] < grid[1:], axis=0)
    idx = tensor(grid[:, keep].T.reshape(-1), dtype=dt.int64, device=input.device)
    return input.index_select(0, idx).reshape(-1, r)


def argwhere(input):
    """The indices of the nonzero elements, one row each (nonzero's (N, ndim) form)."""
    return nonzero(input)


def narrow_copy(input, dim, start, length):
    """narrow() as a new tensor, not a view."""
    check_tensor(input, "narrow_copy")
    return input.narrow(dim, start, length).clone()


# ---- small elementwise ops -------------------------------------------------------------------------
def positive(input):
    """input itself (unary plus); refused for bool, as PyTorch."""
    check_tensor(input, "positive")
    if input.dtype is dt.bool_:
        raise RuntimeError("positive: The `+` operator, on a bool tensor is not supported.")
    return input


def rsub(input, other, *, alpha=1):
    """other - alpha * input (sub with its operands reversed)."""
    check_tensor(input, "rsub")
    return sub(other, input, alpha=alpha)


def isposinf(input):
    check_tensor(input, "isposinf")
    if not input.dtype.is_floating_point:
        return zeros(tuple(input.shape), dtype=dt.bool_, device=input.device)
    return input == math.inf


def isneginf(input):
    check_tensor(input, "isneginf")
    if not input.dtype.is_floating_point:
        return zeros(tuple(input.shape), dtype=dt.bool_, device=input.device)
    return input == -math.inf


def isreal(input):
    """True everywhere: paragrad has no complex dtypes."""
    check_tensor(input, "isreal")
    return _all_true(input)


def signbit(input):
    """True where the sign bit is set: negative numbers and -0.0. Differs from PyTorch for
    NaN: -nan gives False (reading a NaN's sign needs a bit-cast, which no primitive does)."""
    check_tensor(input, "signbit")
    if input.dtype is dt.bool_ or (not input.dtype.is_floating_point and not input.dtype.is_signed):
        return zeros(tuple(input.shape), dtype=dt.bool_, device=input.device)
    if not input.dtype.is_floating_point:
        return input < 0
    x = input.detach()
    return (x < 0) | ((x == 0) & (x.reciprocal() < 0))          # 1 / -0.0 = -inf


def copysign(input, other):
    """|input| with the sign of other (-0.0 counts as negative), in a floating dtype. The
    gradient to input is +-1 (0 where input is 0) and to other 0, as PyTorch."""
    check_tensor(input, "copysign")
    dtype = floating(dt.result_type(input, other))
    mag = input.to(dtype).abs()
    if isinstance(other, Tensor):
        same_device("copysign", input, other)
        negative = signbit(other)
    else:
        negative = math.copysign(1.0, _number(other, "copysign", "other")) < 0
        return -mag if negative else mag
    out = where(negative, -mag, mag)
    if other.requires_grad and autograd.is_grad_enabled():
        # a zero gradient to other, as PyTorch: multiply by ones that depend on it (adding
        # zeros would turn -0.0 into +0.0)
        out = out * other.masked_fill(_all_true(other), 1)
    return out


def ldexp(input, other):
    """input * 2**other, computed in the promoted floating dtype."""
    check_tensor(input, "ldexp")
    check_tensor(other, "ldexp", "other")
    dtype = floating(dt.result_type(input, other))
    return input.to(dtype) * (2.0 ** other.to(dtype))


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2**exponent, |mantissa| in [0.5, 1) (0, inf
    and nan give themselves and exponent 0); exponent is int32. The mantissa's gradient is
    grad / 2**exponent, as PyTorch."""
    check_tensor(input, "frexp")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"frexp(): only supports floating-point dtypes, got {input.dtype}")
    x = input.to(dt.float64)        # exact for every float dtype, with room for subnormals
    with autograd.no_grad():
        a = x.abs()
        regular = (a != 0) & a.isfinite()
        a = where(regular, a, 1.0)
        e = where(regular, (a.log() * (1.0 / math.log(2.0))).floor() + 1, 0.0)
        m = _scale_down(a, e)
        # log2's rounding can put e one off near powers of two: one correction step
        e = where(regular, e + (m >= 1).to(e.dtype) - (m < 0.5).to(e.dtype), 0.0)
    return frexp_result(_scale_down(x, e).to(input.dtype), e.to(dt.int32))


def _scale_down(x, e):
    """x / 2**e, exact, e from -1073 to 1024: 2**e is applied in two halves, each a normal
    float64 (2**1024 itself overflows)."""
    half = (e * 0.5).floor()
    for part in (half, e - half):
        scale = _pow2(part.abs())
        x = where(part < 0, x * scale, x / scale)
    return x


def _pow2(n):
    """2**n for integral float64 n in [0, 1024), exact: the product of one exact power of two per
    bit of n (CUDA's pow(2, n) was measured an ulp off for |n| near 510)."""
    out = ones(tuple(n.shape), dtype=dt.float64, device=n.device)
    for bit in range(10):
        is_set = (n * 0.5 ** bit).floor() % 2 == 1
        out = where(is_set, out * 2.0 ** (1 << bit), out)
    return out


def sinc(input):
    """sin(pi x) / (pi x), 1 at 0 (gradient 0 there). Half types compute in float32."""
    check_tensor(input, "sinc")
    out_dtype = floating(input.dtype)
    x = input.to(dt.float32) if out_dtype.itemsize == 2 else input.to(out_dtype)
    zero = x == 0
    px = where(zero, 1.0, x * math.pi)          # (a safe denominator where x == 0)
    return where(zero, 1.0, px.sin() / px).to(out_dtype)


# ---- integers -------------------------------------------------------------------------------------
def _int_operands(op, input, other):
    check_tensor(input, op)
    check_tensor(other, op, "other")
    for t in (input, other):
        if t.dtype.is_floating_point or t.dtype is dt.bool_:
            raise NotImplementedError(f"{op}: not implemented for {t.dtype} (integer dtypes only)")
    dtype = dt.result_type(input, other)
    return input.to(dtype), other.to(dtype)


def gcd(input, other):
    """The greatest common divisor, elementwise (non-negative; gcd(0, 0) = 0). Euclid's
    algorithm: one remainder step over all elements per round, until every remainder is zero
    (a host read per round; at most ~92 rounds for int64)."""
    a, b = _int_operands("gcd", input, other)
    a, b = a.abs(), b.abs()
    a, b = a + b * 0, b + a * 0                 # broadcast to the result's shape
    while bool((b != 0).any()):
        live = b != 0
        r = a % where(live, b, 1)
        a, b = where(live, b, a), where(live, r, 0)
    return a


def lcm(input, other):
    """The least common multiple, elementwise: |a / gcd(a, b) * b|, 0 where gcd is 0."""
    a, b = _int_operands("lcm", input, other)
    g = gcd(a, b)
    zero = g == 0
    return where(zero, 0, (a // where(zero, 1, g) * b).abs())


# ---- membership -------------------------------------------------------------------------------------
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """True where an element of `elements` equals some element of `test_elements` (either may
    be a Python number); both are compared in their promoted dtype. Few test elements: a
    broadcast comparison; otherwise one sort of both together (O((N+M) log(N+M)))."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): one of elements or test_elements must be a Tensor")
    dtype = dt.result_type(elements, test_elements)
    ref = elements if isinstance(elements, Tensor) else test_elements
    e, t = (v.to(dtype) if isinstance(v, Tensor) else full((), v, dtype=dtype, device=ref.device)
            for v in (elements, test_elements))
    same_device("isin", e, t)
    e, t = e.detach(), t.detach()
    n, m = e.numel(), t.numel()
    if m == 0 or n == 0:
        found = zeros(tuple(e.shape), dtype=dt.bool_, device=e.device)
    elif m < 10.0 * n ** 0.145:         # PyTorch's switch between the two algorithms
        found = (e.unsqueeze(-1) == t.reshape(-1)).any(-1)
    else:
        found = _isin_sorted(e.reshape(-1), t.reshape(-1)).reshape(tuple(e.shape))
    return ~found if invert else found


def _isin_sorted(e, t):
    """Sort test elements and elements together; an element is found iff the test element
    just before it or just after it in that order equals it (equal values sit together, in
    any order among themselves, so no stable sort is needed)."""
    m = t.shape[0]
    both = cat([t, e])                                          # (M + N,)
    order = both.argsort()
    v = both[order]                                             # sorted values
    tests_upto = cumsum((order < m).to(dt.int64), 0)            # tests at or before each place
    s = t.sort().values                                         # (M,) sorted test elements
    before = s[(tests_upto - 1).clamp(min=0)]
    after = s[tests_upto.clamp(max=m - 1)]
    hit = ((tests_upto > 0) & (before == v)) | ((tests_upto < m) & (after == v))
    # back to the original order (a permutation: scatter the sorted flags to their places)
    back = zeros(m + e.shape[0], dtype=dt.uint8, device=e.device).scatter(0, order, hit.to(dt.uint8))
    return back[m:] != 0


# ---- factories ---------------------------------------------------------------------------------------
def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, layout=None, requires_grad=False):
    """base ** linspace(start, end, steps), as PyTorch computes it: start and end first rounded
    to the dtype (truncated for integer dtypes), the powers in float64, the second half counted
    back from the end."""
    start, end = _number(start, "logspace", "start"), _number(end, "logspace", "end")
    if not isinstance(steps, int) or isinstance(steps, bool):
        raise TypeError(f"logspace(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("logspace(): number of steps must be non-negative")
    dtype, dev = _dtype(dtype, "logspace"), factory_device(device)
    if dtype is dt.bool_:
        raise NotImplementedError("logspace(): not implemented for bool")
    if steps <= 1:                  # (one step: base ** start, start not rounded)
        exps = np.full(steps, float(start))
    else:
        if not dtype.is_floating_point:
            lo, hi = float(int(start)), float(int(end))
        elif dtype.np is not None:
            lo, hi = float(dtype.np.type(start)), float(dtype.np.type(end))
        else:
            lo, hi = float(start), float(end)
        i = np.arange(steps, dtype=np.float64)
        step = (hi - lo) / (steps - 1)
        exps = np.where(i < steps // 2, lo + step * i, hi - step * (steps - i - 1))
    with np.errstate(all="ignore"):
        arr = np.power(float(base), exps)
        if not dtype.is_floating_point:
            arr = np.trunc(arr)
    return _finish(backend_for(dev).from_numpy(arr, dtype, dev.index), dtype, dev, requires_grad)


# ---- products added to an input ------------------------------------------------------------------
def _add_product(op, input, prod, beta, alpha):
    """beta * input + alpha * prod, input broadcast to prod's shape. beta == 0 ignores input's
    values (nan/inf in it don't propagate) but still gives it a zero gradient, as PyTorch."""
    check_tensor(input, op)
    if not dt.result_type(input, prod).is_floating_point and (
            isinstance(alpha, float) or isinstance(beta, float)):
        raise RuntimeError(f"{op}: For integral input tensors, argument alpha and beta must not "
                           f"be floating point numbers (got alpha={alpha}, beta={beta}).")
    try:
        inp = input.expand(tuple(prod.shape))
    except RuntimeError:
        raise RuntimeError(f"{op}: input of shape {tuple(input.shape)} can't be broadcast to the "
                           f"product's shape {tuple(prod.shape)}") from None
    term = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return term + inp.masked_fill(_all_true(inp), 0)
    return term + (inp if beta == 1 else inp * beta)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * sum_b(batch1[b] @ batch2[b]): one (n, B*m) @ (B*m, p) product."""
    for name, t in (("batch1", batch1), ("batch2", batch2)):
        check_tensor(t, "addbmm", name)
        if t.ndim != 3:
            raise RuntimeError(f"addbmm: {name} must be a 3D tensor, got {t.ndim}D")
    b, n, m = batch1.shape
    if batch2.shape[0] != b:
        raise RuntimeError(f"addbmm: batch1 and batch2 must have same number of batches, got "
                           f"{b} and {batch2.shape[0]}")
    if batch2.shape[1] != m:
        raise RuntimeError(f"addbmm: Incompatible matrix sizes for bmm ({n}x{m} and "
                           f"{batch2.shape[1]}x{batch2.shape[2]})")
    prod = mm(batch1.permute(1, 0, 2).reshape(n, b * m), batch2.reshape(b * m, batch2.shape[2]))
    return _add_product("addbmm", input, prod, beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec)."""
    check_tensor(input, "addmv")
    check_tensor(mat, "addmv", "mat")
    check_tensor(vec, "addmv", "vec")
    if mat.ndim != 2 or vec.ndim != 1 or input.ndim > 1:
        raise RuntimeError(f"addmv: vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, "
                           f"{vec.ndim}")
    if mat.shape[1] != vec.shape[0] or input.numel() not in (1, mat.shape[0]):
        raise RuntimeError(f"addmv: size mismatch, got input ({', '.join(map(str, input.shape))}), "
                           f"mat ({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    return _add_product("addmv", input, mv(mat, vec), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2)."""
    for name, t in (("vec1", vec1), ("vec2", vec2)):
        check_tensor(t, "addr", name)
        if t.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {t.ndim}-D")
    return _add_product("addr", input, outer(vec1, vec2), beta, alpha)


def chain_matmul(*matrices):
    """torch.chain_matmul (deprecated there): the product of 2-D matrices in the cheapest order
    (linalg.multi_dot), with chain_matmul's own argument checks and messages."""
    from .linalg.matrix_functions import multi_dot
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        check_tensor(t, "chain_matmul", "matrices")
        if t.ndim != 2:
            raise RuntimeError(f"chain_matmul: Tensor dimension is {t.ndim}, expected 2 instead.")
    return matrices[0].clone() if len(matrices) == 1 else multi_dot(list(matrices))


# ---- statistics -----------------------------------------------------------------------------------------
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over dim, as var_mean; std_mean(x, False) is the legacy (input, unbiased) form."""
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    return std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in input's rows (observations in columns; 1-D:
    one variable), with integer frequency weights and floating observation weights. Weight
    checks read the weights on the host, as PyTorch's do."""
    check_tensor(input, "cov")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input "
                           f"with {input.ndim} dimensions")
    if input.dtype is dt.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.ndim < 2 else input          # (variables, observations)
    n_obs = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        check_tensor(wt, "cov", name)
        if wt.ndim > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                               f"{name} with {wt.ndim} dimensions")
        if name == "fweights" and (wt.dtype.is_floating_point or wt.dtype is dt.bool_):
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights "
                               f"with {wt.dtype} dtype")
        if name == "aweights" and not wt.dtype.is_floating_point:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {wt.dtype} dtype")
        if not ((wt.ndim == 0 and n_obs == 1) or wt.numel() == n_obs):
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                               f"observations in the input but got {wt.numel()} != {n_obs}")
        if n_obs and bool((wt < 0).any()):
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = wt if w is None else w * wt
    if w is not None:
        w_sum = w.sum()
        if not bool(w_sum != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = (x * w).sum(1) / w_sum                                        # (variables,)
        if aweights is not None and correction != 0:
            norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
        else:
            norm_factor = w_sum - correction
    else:
        avg = x.sum(1) / n_obs
        norm_factor = n_obs - correction
    with autograd.no_grad():
        degenerate = bool(norm_factor <= 0)
    if degenerate:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than "
                      "the number of observations.", stacklevel=2)
        norm_factor = norm_factor * 0 if isinstance(norm_factor, Tensor) else 0
    xc = x - avg.unsqueeze(1)                                               # (variables, obs)
    c = mm(xc, (xc if w is None else xc * w).t())
    return (c / norm_factor).squeeze()


def corrcoef(input):
    """Pearson correlation coefficients of the variables in input's rows, clipped to [-1, 1]."""
    check_tensor(input, "corrcoef")
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c                  # nan for a zero/inf/nan variance, else 1
    stddev = c.diagonal().sqrt()
    c = c / stddev.unsqueeze(1)
    c = c / stddev.unsqueeze(0)
    return c.clamp(-1, 1)


def _trapezoid_args(op, y, x, dx, dim):
    check_tensor(y, op, "y")
    if x is not None and dx is not None:
        raise TypeError(f"{op}(): pass either x (sample points) or dx (their spacing), not both")
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'x' must be Tensor, not {type(x).__name__}")
    if y.ndim == 0:
        raise IndexError(f"{op}: Dimension specified as {dim} but tensor has no dimensions")
    d = dim_arg(dim, y.ndim, op)
    if y.dtype is dt.bool_ or (x is not None and x.dtype is dt.bool_):
        raise RuntimeError(f"{op}: received a bool input for `x` or `y`, but bool is not supported")
    return d


def _spacing(op, y, x, d):
    """x's differences along d, x first viewed so that it lines up with y (1-D x: along d)."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        x = x.reshape(*[x.shape[0] if i == d else 1 for i in range(y.ndim)])
    elif x.ndim < y.ndim:
        x = x.reshape(*(1,) * (y.ndim - x.ndim), *x.shape)
    left, right = _halves(x, d)
    return right - left


def _halves(y, d):
    """y without its last and without its first entry along d (both empty if y is)."""
    n = y.shape[d]
    return y.narrow(d, 0, max(n - 1, 0)), y.narrow(d, min(n, 1), max(n - 1, 0))


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along dim: sample points x (a tensor lined up with y, or 1-D along
    dim) or a constant spacing dx (default 1)."""
    d = _trapezoid_args("trapezoid", y, x, dx, dim)
    if y.shape[d] == 0:                 # no samples: 0, as NumPy
        return zeros(tuple(s for i, s in enumerate(y.shape) if i != d), dtype=y.dtype, device=y.device)
    if x is None:
        ends = y.select(d, 0) + y.select(d, -1)
        return (y.sum(d) - ends * 0.5) * (1 if dx is None else dx)
    left, right = _halves(y, d)
    return (_spacing("trapezoid", y, x, d) * (right + left)).sum(d) / 2.0


def trapz(y, x=None, *, dx=None, dim=-1):
    """The older name of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along dim (one entry fewer than y along dim)."""
    d = _trapezoid_args("cumulative_trapezoid", y, x, dx, dim)
    left, right = _halves(y, d)
    if x is None:
        return ((1 if dx is None else dx) / 2.0 * (left + right)).cumsum(d)
    return (_spacing("cumulative_trapezoid", y, x, d) * (left + right) / 2.0).cumsum(d)


def renorm(input, p, dim, maxnorm):
    """Each slice along dim (input.select(dim, i)) whose p-norm exceeds maxnorm scaled to norm
    maxnorm (by maxnorm / (norm + 1e-7), as PyTorch); the others unchanged. Half types take
    the norm in float32."""
    check_tensor(input, "renorm")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point tensor as input, got {input.dtype}")
    d = dim_arg(dim, input.ndim, "renorm")
    axes = tuple(i for i in range(input.ndim) if i != d)
    x = input.to(dt.float32) if input.dtype.itemsize == 2 else input
    with autograd.no_grad():
        big = norm(x, p, axes, keepdim=True) > maxnorm                    # (1.., n, ..1)
    # the norm is differentiated only where it is used: other slices are replaced by ones, so
    # that a zero slice's norm (whose gradient is 0/0) never enters the graph
    scale = maxnorm / (norm(x.masked_fill(~big, 1.0), p, axes, keepdim=True) + 1e-7)
    return (x * where(big, scale, 1.0)).to(input.dtype)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse each run of equal consecutive elements (dim None: of the flattened input) or
    slices along dim into one, with the inverse indices and run lengths if asked. The output
    size depends on the values, so this reads them on the host. The values don't require grad
    (PyTorch has no derivative for this op)."""
    check_tensor(input, "unique_consecutive")
    if dim is None:
        x = input.detach().reshape(-1)                              # (n,)
        d, inv_shape = 0, tuple(input.shape)
    else:
        if input.ndim == 0:
            raise IndexError(f"unique_consecutive: Dimension specified as {dim} but tensor has no dimensions")
        d = dim_arg(dim, input.ndim, "unique_consecutive")
        x = input.detach()
        inv_shape = (x.shape[d],)
        if x.numel() == 0 and x.shape[d] != 0:
            raise RuntimeError("unique_consecutive: There are 0 sized dimensions, and they aren't "
                               "selected, so unique cannot be applied")
    n = x.shape[d]
    if n == 0:
        values, inverse = x, zeros(inv_shape, dtype=dt.int64, device=x.device)
        counts = zeros(0, dtype=dt.int64, device=x.device)
    else:
        changed = x.narrow(d, 1, n - 1) != x.narrow(d, 0, n - 1)   # NaN != NaN: runs of one
        if x.ndim > 1:
            changed = changed.movedim(d, 0).reshape(n - 1, -1).any(1)
        starts = cat([ones(1, dtype=dt.bool_, device=x.device), changed])     # (n,)
        inverse = (cumsum(starts, 0) - 1).reshape(inv_shape)
        first = nonzero(starts).reshape(-1)                         # (runs,)
        values = x.index_select(d, first)
        counts = cat([first, full((1,), n, dtype=dt.int64, device=x.device)]).diff()
    out = [values]
    if return_inverse:
        out.append(inverse)
    if return_counts:
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


__all__ = [
    "rot90", "diag_embed", "diagflat", "vander", "tril_indices", "triu_indices", "combinations",
    "argwhere", "narrow_copy", "positive", "rsub", "isin", "isneginf", "isposinf", "isreal",
    "signbit", "copysign", "ldexp", "frexp", "sinc", "gcd", "lcm", "logspace", "addbmm", "addmv",
    "addr", "chain_matmul", "std_mean", "trapezoid", "trapz", "cumulative_trapezoid", "cov",
    "corrcoef", "renorm", "unique_consecutive",
]
