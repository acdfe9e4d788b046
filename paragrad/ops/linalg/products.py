"""Matrix products: matmul (batched, broadcasting, 1-D rules of PyTorch), mm, bmm, mv, dot, outer,
and the products added to an input (addbmm, addmv, addr) and chain_matmul. F.linear and the
fused Linear+activation ops are in neural/linear.py."""
from __future__ import annotations

import numpy as np

from ... import autocast_state, dtypes as dt
from ...autograd import Node, grad_mode, node_class, record, rename
from ...tensor import Tensor, _wrap
from .._common import check_tensor, same_device
from ..creation import ones_like
from ..movement.views import mT, sum_to
from ..autocast_policy import cast, policy


class MatmulBackward(Node):
    """The formula of every product here; nodes are made of _NODES' classes, named as torch."""

    def backward(self, g):
        a, b = self.saved
        ga = sum_to(_matmul_nd(g, mT(b)), a._data.shape) if a._requires_grad else None
        gb = sum_to(_matmul_nd(mT(a), g), b._data.shape) if b._requires_grad else None
        return ga, gb


# torch's node classes for a product of two >= 2-D operands (see _matmul_nd)
_NODES = {name: node_class(MatmulBackward, name) for name in (
    "MmBackward0", "BmmBackward0", "UnsafeViewBackward0", "CloneBackward0", "TransposeBackward0")}


def _check(op, a, b):
    if (isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype is b.dtype and a._device is b._device
            and a.dtype is not dt.bool_ and a._data.ndim and b._data.ndim):
        return      # the common case, in one test
    for name, t in (("input", a), ("other", b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
        if t.ndim == 0:
            raise RuntimeError(f"{op}: both arguments to matmul need to be at least 1D, but they are "
                               f"{a.ndim}D and {b.ndim}D")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op}: expected m1 and m2 to have the same dtype, but got: {a.dtype} != {b.dtype}")
    if a.dtype is dt.bool_:
        raise RuntimeError(f"{op}: not implemented for 'Bool' tensors")
    same_device(op, a, b)


def _shapes_error(op, a, b, detail):
    return RuntimeError(f"{op}: {detail}; input shapes {tuple(a.shape)} and {tuple(b.shape)}")


def _matmul_nd(a, b, op="matmul", orig=None):
    """Both >= 2-D: (..., m, k) @ (..., k, n) with broadcast batch dims. `orig` holds the
    user's operands when 1-D inputs were promoted, so errors name the shapes they passed."""
    sa, sb = a._data.shape, b._data.shape
    if sa[-1] != sb[-2]:
        ua, ub = orig or (a, b)
        raise _shapes_error(op, ua, ub, f"mat1 and mat2 shapes cannot be multiplied "
                            f"({'x'.join(map(str, a.shape[-2:]))} and {'x'.join(map(str, b.shape[-2:]))})")
    if len(sa) > 2 or len(sb) > 2:
        ua, ub = orig or (a, b)
        try:
            np.broadcast_shapes(sa[:-2], sb[:-2])
        except ValueError:
            raise _shapes_error(op, ua, ub, "batch dimensions are not broadcastable") from None
    out = _wrap(a._backend.matmul(a._data, b._data), a.dtype, a._device)
    if grad_mode._enabled and (a._requires_grad or b._requires_grad):
        # torch's node: mm for two matrices; matmul folds or batches a >= 3-D operand and views
        # the product back, except matrix @ batch (a batch of one matrix @ a 3-D batch counts)
        # with the matrix requiring grad: that folded product is transposed back and copied,
        # unless already contiguous (one row or column, or empty)
        if op == "bmm":
            name = "BmmBackward0"
        elif len(sa) == 2 and len(sb) == 2:
            name = "MmBackward0"
        elif a._requires_grad and (len(sa) == 2 or (len(sa) == 3 == len(sb) and sa[0] == 1 != sb[0])):
            flat = sa[-2] <= 1 or sb[-1] <= 1 or 0 in sb[:-2]
            name = "TransposeBackward0" if flat else "CloneBackward0"
        else:
            name = "UnsafeViewBackward0"
        node = _NODES[name]()
        node.saved = (a, b)
        record(node, (a, b), out)
    return out


def _matmul(a, b, op):
    """PyTorch's matmul rules: a 1-D operand gains a dim (prepended on the left, appended on
    the right) that is removed from the result. The 1-D forms are named as torch's: dot,
    mv, an in-place squeeze of vector @ matrix, and a view of a batched product."""
    if a.ndim >= 2 and b.ndim >= 2:
        return _matmul_nd(a, b, op)
    if a.ndim == 1 and b.ndim == 1:
        if a.shape[0] != b.shape[0]:
            raise _shapes_error(op, a, b, f"inconsistent tensor size, expected tensor [{a.shape[0]}] "
                                f"and src [{b.shape[0]}] to have the same number of elements")
        return rename(_matmul_nd(a.unsqueeze(0), b.unsqueeze(1), op, (a, b)).reshape(()), "DotBackward0")
    if a.ndim == 1:
        out = _matmul_nd(a.unsqueeze(0), b, op, (a, b)).squeeze(-2)
        return rename(out, "SqueezeBackward4" if b.ndim == 2 else "UnsafeViewBackward0")
    out = _matmul_nd(a, b.unsqueeze(1), op, (a, b)).squeeze(-1)
    return rename(out, "MvBackward0" if a.ndim == 2 else "UnsafeViewBackward0")


def matmul(input, other):
    """Matrix product with PyTorch's rules (1-D operands, broadcast batch dims), as torch.matmul."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        input, other = cast("matmul", input, other)
    a, b = input, other
    _check("matmul", a, b)
    return _matmul(a, b, "matmul")


def _operands(op, a, b, na, nb, what):
    """a and b of an na-D by nb-D product, cast by op's autocast policy and checked."""
    if autocast_state.on:     # paragrad.amp: the dtype this op runs in
        a, b = cast(op, a, b)
    _check(op, a, b)
    if a.ndim != na or b.ndim != nb:
        raise RuntimeError(f"{op}: expected {what}, got {a.ndim}D and {b.ndim}D "
                           f"(shapes {tuple(a.shape)} and {tuple(b.shape)})")
    return a, b


def mm(input, mat2):
    """The product of two 2-D matrices, (n, m) @ (m, p), as torch.mm."""
    a, b = _operands("mm", input, mat2, 2, 2, "2D tensors")
    return _matmul_nd(a, b, "mm")


def bmm(input, mat2):
    """Batched matrix product of 3-D tensors, (b, n, m) @ (b, m, p), as torch.bmm."""
    a, b = _operands("bmm", input, mat2, 3, 3, "3D tensors")
    if a.shape[0] != b.shape[0]:
        raise _shapes_error("bmm", a, b, "batch sizes differ")
    return _matmul_nd(a, b, "bmm")


def mv(input, vec):
    """The product of a 2-D matrix and a 1-D vector, as torch.mv."""
    a, v = _operands("mv", input, vec, 2, 1, "a 2D matrix and a 1D vector")
    return _matmul(a, v, "mv")


def dot(input, tensor):
    """The dot product of two 1-D tensors of the same size, as torch.dot."""
    a, b = _operands("dot", input, tensor, 1, 1, "1D tensors")
    return _matmul(a, b, "dot")


def vdot(input, other):
    """dot, for the real dtypes paragrad has (no conjugate to take); torch's VdotBackward0."""
    a, b = _operands("vdot", input, other, 1, 1, "1D tensors")
    return rename(_matmul(a, b, "vdot"), "VdotBackward0", a, b)


def outer(input, vec2):
    """Outer product of two vectors; unlike matmul it promotes mixed dtypes, as PyTorch."""
    a, b = input, vec2
    for name, t in (("vec1", a), ("vec2", b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"outer(): argument '{name}' must be Tensor, not {type(t).__name__}")
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D "
                               f"(shape {tuple(t.shape)})")
    return a.reshape(-1, 1) * b.reshape(1, -1)


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
        return term + inp.masked_fill(ones_like(inp, dtype=dt.bool_), 0)
    return term + (inp if beta == 1 else inp * beta)


@policy("addbmm")
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
    return rename(_add_product("addbmm", input, prod, beta, alpha), "AddbmmBackward0")


@policy("addmm")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2), as torch.addmm: beta=0 ignores input's values (NaN
    or inf in it don't propagate)."""
    return rename(_add_product("addmm", input, matmul(mat1, mat2), beta, alpha), "AddmmBackward0")


@policy("baddbmm")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2), batched matrix products, as torch.baddbmm:
    beta=0 ignores input's values (NaN or inf in it don't propagate)."""
    return rename(addmm(input, batch1, batch2, beta=beta, alpha=alpha), "BaddbmmBackward0")


@policy("addmv")
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
    return rename(_add_product("addmv", input, mv(mat, vec), beta, alpha), "AddmvBackward0")


@policy("addr")
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2)."""
    for name, t in (("vec1", vec1), ("vec2", vec2)):
        check_tensor(t, "addr", name)
        if t.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {t.ndim}-D")
    return rename(_add_product("addr", input, outer(vec1, vec2), beta, alpha), "AddrBackward0")


@policy("chain_matmul")
def chain_matmul(*matrices):
    """torch.chain_matmul (deprecated there): the product of 2-D matrices in the cheapest order
    (linalg.multi_dot), with chain_matmul's own argument checks and messages."""
    from .matrix_functions import multi_dot
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        check_tensor(t, "chain_matmul", "matrices")
        if t.ndim != 2:
            raise RuntimeError(f"chain_matmul: Tensor dimension is {t.ndim}, expected 2 instead.")
    return matrices[0].clone() if len(matrices) == 1 else multi_dot(list(matrices))
