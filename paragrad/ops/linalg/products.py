"""Matrix products: matmul (batched, broadcasting, 1-D rules of PyTorch), mm, bmm, mv, dot, outer."""
from __future__ import annotations

import numpy as np

from ... import autograd
from ... import dtypes as dt
from ...autograd import Node, record
from ...tensor import Tensor, _wrap
from .._common import check_tensor, same_device
from ..creation import ones_like
from ..movement.views import mT, reshape_to, sum_to


class MatmulBackward(Node):
    def backward(self, g):
        a, b = self.saved
        ga = sum_to(_matmul_nd(g, mT(b)), a._data.shape) if a._requires_grad else None
        gb = sum_to(_matmul_nd(mT(a), g), b._data.shape) if b._requires_grad else None
        return ga, gb


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
    if autograd._grad_enabled and (a._requires_grad or b._requires_grad):
        node = MatmulBackward()
        node.saved = (a, b)
        record(node, (a, b), out)
    return out


def _matmul(a, b, op):
    """PyTorch's matmul rules: a 1-D operand gains a dim (prepended on the left, appended on
    the right) that is removed from the result."""
    if a.ndim >= 2 and b.ndim >= 2:
        return _matmul_nd(a, b, op)
    if a.ndim == 1 and b.ndim == 1:
        if a.shape[0] != b.shape[0]:
            raise _shapes_error(op, a, b, f"inconsistent tensor size, expected tensor [{a.shape[0]}] "
                                f"and src [{b.shape[0]}] to have the same number of elements")
        return _matmul_nd(a.unsqueeze(0), b.unsqueeze(1), op, (a, b)).reshape(())
    if a.ndim == 1:
        return _matmul_nd(a.unsqueeze(0), b, op, (a, b)).squeeze(-2)
    return _matmul_nd(a, b.unsqueeze(1), op, (a, b)).squeeze(-1)


def matmul(input, other):
    a, b = input, other
    _check("matmul", a, b)
    return _matmul(a, b, "matmul")


def _expect_dims(op, a, b, na, nb, what):
    _check(op, a, b)
    if a.ndim != na or b.ndim != nb:
        raise RuntimeError(f"{op}: expected {what}, got {a.ndim}D and {b.ndim}D "
                           f"(shapes {tuple(a.shape)} and {tuple(b.shape)})")


def mm(input, mat2):
    a, b = input, mat2
    _expect_dims("mm", a, b, 2, 2, "2D tensors")
    return _matmul_nd(a, b, "mm")


def bmm(input, mat2):
    a, b = input, mat2
    _expect_dims("bmm", a, b, 3, 3, "3D tensors")
    if a.shape[0] != b.shape[0]:
        raise _shapes_error("bmm", a, b, "batch sizes differ")
    return _matmul_nd(a, b, "bmm")


def mv(input, vec):
    a, v = input, vec
    _expect_dims("mv", a, v, 2, 1, "a 2D matrix and a 1D vector")
    return _matmul(a, v, "mv")


def dot(input, tensor):
    a, b = input, tensor
    _expect_dims("dot", a, b, 1, 1, "1D tensors")
    return _matmul(a, b, "dot")


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


class LinearBackward(Node):
    def backward(self, g):
        x, w = self.saved                       # x (..., in), w (out, in), g (..., out)
        gx = gw = gb = None
        edges = self.next_edges
        if not autograd.is_grad_enabled() and g.dtype is x.dtype:
            return self._on_buffers(g, x, w, edges)
        if edges[0] is not None:
            gx = _matmul_nd(g, w)                                   # (..., in)
        if edges[1] is not None or edges[2] is not None:
            gs, xs = g._data.shape, x._data.shape
            g2 = reshape_to(g, (_prod(gs[:-1]), gs[-1]))            # (N, out)
            if edges[1] is not None:                                # (out, in): a fresh buffer
                gw = _matmul_nd(mT(g2), reshape_to(x, (_prod(xs[:-1]), xs[-1])))
            if edges[2] is not None:
                gb = g2.sum(0)
        return gx, gw, gb

    @staticmethod
    def _on_buffers(g, x, w, edges):
        """The same three products as backend calls: no graph to build, so none of the Tensor
        ops' checks, wrapping and recording (half of this node's host time on small layers)."""
        b, dtype, dev = g._backend, g.dtype, g._device
        gd, gs, xs = g._data, g._data.shape, x._data.shape
        gx = _wrap(b.matmul(gd, w._data), dtype, dev) if edges[0] is not None else None      # (..., in)
        gw = gb = None
        if edges[1] is not None or edges[2] is not None:
            g2 = gd if len(gs) == 2 else b.reshape(gd, (_prod(gs[:-1]), gs[-1]))           # (N, out)
            if edges[1] is not None:                                                          # (out, in)
                x2 = x._data if len(xs) == 2 else b.reshape(x._data, (_prod(xs[:-1]), xs[-1]))
                gw = _wrap(b.matmul(b.permute(g2, (1, 0)), x2), dtype, dev)
            if edges[2] is not None:
                gb = _wrap(b.reduce("sum", g2, (0,), False), dtype, dev)
        return gx, gw, gb


def _prod(sizes):
    n = 1
    for s in sizes:
        n *= s
    return n


def linear(x, weight, bias=None):
    """y = x @ weight.T + bias as one recorded op (PyTorch's F.linear); weight is
    (out_features, in_features). A backend with a `linear_act` fast path runs it fused."""
    for name, t in (("input", x), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"linear(): argument '{name}' must be Tensor, not {type(t).__name__}")
    xs, ws = x._data.shape, weight._data.shape      # (buffer shapes: no Size built)
    if len(ws) == 1 and xs:       # torch allows a vector weight: y = x @ w (+ b)
        out = matmul(x, weight)
        return out + bias if bias is not None else out
    if len(ws) != 2 or not xs or xs[-1] != ws[1]:
        raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied: input "
                           f"{tuple(x.shape)} and weight {tuple(weight.shape)} (expected input[..., "
                           f"{weight.shape[-1] if weight.ndim else '?'}] and a 2-D weight)")
    if x.dtype is not weight.dtype or (bias is not None and bias.dtype is not x.dtype):
        raise RuntimeError(f"linear: expected input, weight and bias of one dtype, got {x.dtype}, "
                           f"{weight.dtype}, {bias.dtype if bias is not None else None}")
    if bias is not None and bias._data.shape != (ws[0],) and bias._data.shape != ():
        raise RuntimeError(f"linear: bias of shape {tuple(bias.shape)} does not match weight "
                           f"{tuple(weight.shape)}")
    if x._device is not weight._device or (bias is not None and bias._device is not x._device):
        same_device("linear", x, weight, bias)
    if len(xs) == 1:
        return linear(x.unsqueeze(0), weight, bias).squeeze(0)
    b = x._backend
    data = b.matmul(x._data, b.permute(weight._data, (1, 0)))
    if bias is not None:
        b.binary("add", data, bias._data, out=data)
    out = _wrap(data, x.dtype, x._device)
    if autograd.needs_grad(x, weight, bias):
        node = LinearBackward()
        node.saved = (x, weight)
        record(node, (x, weight, bias), out)
    return out


_ACTS = ("relu", "gelu_tanh")


class LinearActBackward(Node):
    def backward(self, g):
        x, w, aux = self.saved
        edges = self.next_edges
        need = (edges[0] is not None, edges[1] is not None, edges[2] is not None)
        if not autograd.is_grad_enabled():
            fast = g._backend.fast("linear_act_backward")
            if fast is not None:
                dx, dw, db = fast(g._data, x._data, w._data, aux._data, self.act, *need)
                return tuple(_wrap(d, g.dtype, g._device) if d is not None else None for d in (dx, dw, db))
        # the composite: d act, then the linear backward
        if self.act == "relu":
            dz = g * (aux > 0)
        else:
            from ..elementwise.unary import _gelu_grad
            dz = _gelu_grad(g, aux, "tanh")
        node = LinearBackward()
        node.saved, node.next_edges = (x, w), edges
        return node.backward(dz)


def linear_act(x, weight, bias=None, activation="relu"):
    """act(x @ weight.T + bias) as one op, activation 'relu' or 'gelu_tanh' (GELU with the
    tanh approximation). With a backend `linear_act` fast path it is one fused call (GEMM
    with a bias+activation epilogue); otherwise it composes linear and the activation.
    nn.Sequential uses it for each Linear followed by ReLU or GELU(approximate='tanh')."""
    if activation not in _ACTS:
        raise ValueError(f"linear_act: activation must be one of {_ACTS}, got {activation!r}")
    fast = x._backend.fast("linear_act") if isinstance(x, Tensor) else None
    if fast is None or weight.ndim != 2 or x.ndim < 2 or not x.dtype.is_floating_point:
        from ..elementwise.unary import gelu, relu
        y = linear(x, weight, bias)
        return relu(y) if activation == "relu" else gelu(y, approximate="tanh")
    if x.shape[-1] != weight.shape[1] or x.dtype is not weight.dtype or (
            bias is not None and (bias.dtype is not x.dtype or tuple(bias.shape) != (weight.shape[0],))):
        return linear(x, weight, bias)      # invalid arguments: linear raises its clear error
    same_device("linear_act", x, weight, bias)
    y, aux = fast(x._data, weight._data, bias._data if bias is not None else None, activation)
    out = _wrap(y, x.dtype, x._device)
    if autograd.needs_grad(x, weight, bias):
        node = LinearActBackward()
        node.act = activation
        node.saved = (x, weight, _wrap(aux, x.dtype, x._device))
        record(node, (x, weight, bias), out)
    return out


class MlpBackward(Node):
    def backward(self, g):
        x, *params = self.saved
        edges = self.next_edges
        if not autograd.is_grad_enabled():
            layers = [(params[2 * i]._data, params[2 * i + 1]._data if params[2 * i + 1] is not None
                       else None, act) for i, act in enumerate(self.acts)]
            needs = [(edges[1 + 2 * i] is not None, edges[2 + 2 * i] is not None)
                     for i in range(len(self.acts))]
            dx, per_layer = g._backend.fast("mlp_backward")(g._data, layers, self.aux, edges[0] is not None, needs)
            wrap = lambda d: _wrap(d, g.dtype, g._device) if d is not None else None  # noqa: E731
            return (wrap(dx),) + tuple(wrap(d) for pair in per_layer for d in pair)
        # double backward: differentiate the composition
        return _grads_of(_compose(x, params, self.acts), [x, *params], g)


def _grads_of(y, ins, g):
    want = [t for t in ins if t is not None and t.requires_grad]
    got = iter(autograd.grad(y, want, g, create_graph=True, allow_unused=True))
    return tuple(next(got) if (t is not None and t.requires_grad) else None for t in ins)


def _compose(x, params, acts):
    for i, act in enumerate(acts):
        w, b = params[2 * i], params[2 * i + 1]
        x = linear_act(x, w, b, act) if act else linear(x, w, b)
    return x


def mlp(x, layers):
    """A chain of linear layers, each followed by an activation or nothing: layers = [(weight,
    bias, act), ...], act one of None, 'relu', 'gelu_tanh'. With a backend `mlp` fast path the
    whole chain is one op whose backward fuses each activation's derivative and bias gradient
    into the GEMM epilogue of the layer above (cuBLASLt DRELU_BGRAD / DGELU_BGRAD); otherwise
    it composes linear_act / linear. nn.Sequential uses it."""
    acts = tuple(act for _, _, act in layers)
    if any(a is not None and a not in _ACTS for a in acts):
        raise ValueError(f"mlp: activations must be None or one of {_ACTS}, got {acts}")
    params = [t for w, b, _ in layers for t in (w, b)]
    fast = x._backend.fast("mlp")
    ok = fast is not None and x.ndim >= 2 and all(
        w.ndim == 2 and w.dtype is x.dtype and (b is None or b.dtype is x.dtype) for w, b, _ in layers)
    if ok:
        dims = [x.shape[-1]] + [w.shape[0] for w, _, _ in layers]
        ok = all(w.shape[1] == d for (w, _, _), d in zip(layers, dims)) and all(
            b is None or tuple(b.shape) == (w.shape[0],) for w, b, _ in layers)
    r = fast(x._data, [(w._data, b._data if b is not None else None, a) for w, b, a in layers]) \
        if ok else None
    if r is None:
        return _compose(x, params, acts)
    y, aux = r
    out = _wrap(y, x.dtype, x._device)
    if autograd.needs_grad(x, *params):
        node = MlpBackward()
        node.acts, node.aux, node.saved = acts, aux, (x, *params)
        record(node, (x, *params), out)
    return out


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
