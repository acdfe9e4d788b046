"""layer_norm as one recorded op: the forward computes mean and rstd once and saves them, the
backward is the closed form (no graph of a dozen primitives). A backend's `layer_norm` /
`layer_norm_backward` fast paths run it fused; otherwise it composes primitives on buffers."""
from __future__ import annotations

from ... import autograd
from ... import dtypes as dt
from ...autograd import Node, node_class, record
from ...tensor import _wrap
from .._common import check_tensor, same_device
from ..autocast_policy import policy

class NativeLayerNormBackward0(Node):
    mixed, pdtype = False, None     # float32 parameters with a half input; their dtype

    def backward(self, g):
        if autograd.is_grad_enabled():      # double backward: differentiable Tensor ops
            x, w, _, _ = self.saved
            edges = self.next_edges
            return _backward_tensors(g, x, w, self.n_norm, self.eps, edges[0] is not None,
                                     edges[1] is not None, edges[2] is not None,
                                     self.pdtype or x.dtype)
        return self._grads(g, None)

    def add_into(self, acc, g):
        """dx added into acc, x's gradient buffer already holding the gradient of x's other
        use (a residual stream's skip path), by the backward's own pass: no separate sum."""
        x = self.saved[0]
        if autograd.is_grad_enabled() or acc.dtype is not x.dtype or acc._backend is not x._backend \
                or acc._data.shape != x._data.shape:
            return None
        return self._grads(g, acc)

    def _grads(self, g, acc):
        """(dx, dw, db) on buffers; with acc, dx is added into it and None in its place."""
        x, w, mean, rstd = self.saved
        nd, edges = self.n_norm, self.next_edges
        need_dx, need_dw = edges[0] is not None, edges[1] is not None
        need_db = edges[2] is not None
        b = x._backend
        fast = None if self.mixed else b.fast("layer_norm_backward")
        if fast is not None:
            dx, dw, db = fast(b.contiguous(g._data), b.contiguous(x._data),
                              None if w is None else b.contiguous(w._data), mean, rstd, nd,
                              need_dw, need_db, None if acc is None else acc._data)
        else:
            gd = g._data if g.dtype is x.dtype else b.cast(g._data, x.dtype)   # (layer_norm_cast's)
            dx, dw, db = _backward_composite(b, gd, x._data, None if w is None else w._data,
                                             mean, rstd, nd, x.dtype, need_dx, need_dw, need_db,
                                             self.pdtype)
            if acc is not None:
                b.binary("add", acc._data, dx, out=acc._data)
        wrap = lambda d, dtype: None if d is None else _wrap(d, dtype, x._device)  # noqa: E731
        return (wrap(dx, x.dtype) if need_dx and acc is None else None), \
            (wrap(dw, self.pdtype or x.dtype) if need_dw else None), \
            (wrap(db, self.pdtype or x.dtype) if need_db else None)


# layer_norm_cast's output is its cast's (torch's layer_norm(...).to(dtype) ends in the copy)
_CAST = node_class(NativeLayerNormBackward0, "ToCopyBackward0")


def _forward_composite(b, x, w, bias, nd, eps, dtype):
    """(y, mean, rstd) from primitives; mean/rstd keep dims: x.shape[:-nd] + (1,) * nd."""
    ct = dt.opmath(dtype)
    axes = tuple(range(x.ndim - nd, x.ndim))
    n = 1
    for a in axes:
        n *= x.shape[a]
    xf = x if ct is dtype else b.cast(x, ct)
    mean = b.binary("div", b.reduce("sum", xf, axes, True), n)
    xhat = b.binary("sub", xf, mean)                                   # a fresh buffer
    var = b.reduce("sum", b.binary("mul", xhat, xhat), axes, True)
    var = b.binary("div", var, n, out=var)
    rstd = b.unary("rsqrt", b.binary("add", var, eps, out=var), out=var)
    b.binary("mul", xhat, rstd, out=xhat)
    if w is not None:
        b.binary("mul", xhat, w if ct is dtype else b.cast(w, ct), out=xhat)
    if bias is not None:
        b.binary("add", xhat, bias if ct is dtype else b.cast(bias, ct), out=xhat)
    y = xhat if ct is dtype else b.cast(xhat, dtype)
    return y, mean, rstd


def _centered_grad(b, h, xhat, axes, n):
    """h - mean(h) - xhat * mean(h * xhat), means over `axes` (n elements each), written into
    xhat's buffer: the core that the layer-norm and batch-norm backward passes share."""
    c1 = b.binary("div", b.reduce("sum", h, axes, True), n)            # mean(h)
    c2 = b.reduce("sum", b.binary("mul", h, xhat), axes, True)
    c2 = b.binary("div", c2, n, out=c2)                                 # mean(h * xhat)
    dx = b.binary("mul", xhat, c2, out=xhat)
    dx = b.binary("sub", h, dx, out=dx)
    return b.binary("sub", dx, c1, out=dx)


def _backward_composite(b, g, x, w, mean, rstd, nd, dtype, need_dx, need_dw, need_db,
                        pdtype=None):
    """dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w, over the normalized
    dims; dw = sum over the leading dims of g * xhat; db = sum of g. dw and db come in pdtype
    (the parameters' dtype; default the input's)."""
    ct = dt.opmath(dtype)
    lead = tuple(range(x.ndim - nd))
    axes = tuple(range(x.ndim - nd, x.ndim))
    n = 1
    for a in axes:
        n *= x.shape[a]
    gf = g if ct is dtype else b.cast(g, ct)
    xhat = b.binary("sub", x if ct is dtype else b.cast(x, ct), mean)     # a fresh buffer
    b.binary("mul", xhat, rstd, out=xhat)
    dx = dw = db = None
    if need_dw:
        dw = b.reduce("sum", b.binary("mul", gf, xhat), lead, False)
    if need_db:
        db = b.reduce("sum", gf, lead, False)
    if need_dx:
        gw = gf if w is None else b.binary("mul", gf, w if ct is dtype else b.cast(w, ct))
        dx = _centered_grad(b, gw, xhat, axes, n)
        b.binary("mul", dx, rstd, out=dx)
    if ct is not dtype:
        dx = None if dx is None else b.cast(dx, dtype)
    pdtype = pdtype or dtype
    if ct is not pdtype:
        dw, db = (None if d is None else b.cast(d, pdtype) for d in (dw, db))
    return dx, dw, db


def _backward_tensors(g, x, w, nd, eps, need_dx, need_dw, need_db, pdtype):
    """The same formulas with differentiable Tensor ops (recomputing the statistics from x),
    so that create_graph gives correct second derivatives."""
    dtype = x.dtype
    ct = dt.opmath(dtype)
    axes = tuple(range(x.ndim - nd, x.ndim))
    lead = tuple(range(x.ndim - nd))
    xf, gf = x.to(ct), g.to(ct)
    xc = xf - xf.mean(axes, keepdim=True)
    rstd = ((xc * xc).mean(axes, keepdim=True) + eps).rsqrt()
    xhat = xc * rstd
    dx = dw = db = None
    if need_dx:
        gw = gf if w is None else gf * w.to(ct)
        dx = rstd * (gw - gw.mean(axes, keepdim=True)
                     - xhat * (gw * xhat).mean(axes, keepdim=True))
        dx = dx.to(dtype)
    if need_dw:
        dw = (gf * xhat).sum(lead).to(pdtype) if lead else (gf * xhat).to(pdtype)
    if need_db:
        db = gf.sum(lead).to(pdtype) if lead else gf.to(pdtype)
    return dx, dw, db


def _shape_arg(normalized_shape):
    if isinstance(normalized_shape, int) and not isinstance(normalized_shape, bool):
        return (normalized_shape,)
    try:
        shape = tuple(normalized_shape)
    except TypeError:
        shape = None
    if shape is None or not all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
        raise TypeError(f"layer_norm(): argument 'normalized_shape' must be an int or a tuple of "
                        f"ints, not {normalized_shape!r}")
    return shape


def _param_dtype(x, weight, bias):
    """The dtype weight and bias must share: the input's, or float32 for a float16/bfloat16
    input (torch's mixed-dtype kernel: what a float32 LayerNorm gets from an autocast bf16
    activation on the CPU, where layer_norm is on no autocast list)."""
    if x.dtype in (dt.float16, dt.bfloat16) and any(
            t is not None and t.dtype is dt.float32 for t in (weight, bias)):
        return dt.float32
    return x.dtype


def _check(x, shape, weight, bias):
    check_tensor(x, "layer_norm")
    if not shape:
        raise RuntimeError("layer_norm: Expected normalized_shape to be at least 1-dimensional, "
                           "i.e., containing at least one element, but got normalized_shape = []")
    if x.ndim < len(shape) or tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise RuntimeError(f"layer_norm: Given normalized_shape={list(shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, shape))}], but got input of "
                           f"size {list(x.shape)}")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"layer_norm: expected a floating-point input, got {x.dtype}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is None:
            continue
        check_tensor(t, "layer_norm", name)
        if tuple(t.shape) != shape:
            raise RuntimeError(f"layer_norm: Expected {name} to be of same shape as "
                               f"normalized_shape, but got {name} of shape {list(t.shape)} and "
                               f"normalized_shape = {list(shape)}")
        if t.dtype is not _param_dtype(x, weight, bias):
            raise RuntimeError(f"layer_norm: expected {name} to have the input's dtype "
                               f"{x.dtype}, but got {t.dtype} (input of shape {list(x.shape)}, "
                               f"{name} of shape {list(t.shape)})")
    same_device("layer_norm", x, weight, bias)


@policy("layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.layer_norm: normalize over the trailing dims `normalized_shape`
    (biased variance), then scale by weight and shift by bias (either may be None).
    float16/bfloat16 inputs compute their statistics in float32 and return their own dtype.
    Unlike PyTorch, normalized_shape may also be a plain int. weight/bias have the input's
    dtype, or float32 with a float16/bfloat16 input (computed in float32, rounded once)."""
    return _layer_norm(input, normalized_shape, weight, bias, eps, None)


@policy("layer_norm")
def layer_norm_cast(input, normalized_shape, weight=None, bias=None, eps=1e-5, dtype=None):
    """layer_norm(input, ...).to(dtype) as one op (paragrad's): what a Linear under autocast
    reads of a norm before it, written by the norm itself, rounded once as the cast would
    round it, and its gradient taken back in that dtype. Where the cast and a separate float32
    output were two more passes over the activations (a GPT's ln_1 and ln_2 feed Linears)."""
    if dtype is not None and not (isinstance(dtype, dt.DType) and dtype.is_floating_point):
        raise TypeError(f"layer_norm_cast: dtype must be a floating-point paragrad dtype, got {dtype!r}")
    return _layer_norm(input, normalized_shape, weight, bias, eps, dtype)


def _layer_norm(x, normalized_shape, weight, bias, eps, out_dtype):
    shape = _shape_arg(normalized_shape)
    _check(x, shape, weight, bias)
    nd, eps = len(shape), float(eps)
    b = x._backend
    wd = None if weight is None else weight._data
    bd = None if bias is None else bias._data
    if out_dtype is x.dtype:
        out_dtype = None
    mixed = _param_dtype(x, weight, bias) is not x.dtype
    # kernels never see empty input, nor mixed parameters (the composition computes in float32)
    fast = b.fast("layer_norm") if x.numel() and not mixed else None
    if fast is not None:
        y, mean, rstd = fast(b.contiguous(x._data), None if wd is None else b.contiguous(wd),
                             None if bd is None else b.contiguous(bd), nd, eps,
                             **({} if out_dtype is None else {"out_dtype": out_dtype}))
    else:
        y, mean, rstd = _forward_composite(b, x._data, wd, bd, nd, eps, x.dtype)
        if out_dtype is not None:
            y = b.cast(y, out_dtype)
    out = _wrap(y, out_dtype or x.dtype, x._device)
    if autograd.needs_grad(x, weight, bias):
        node = NativeLayerNormBackward0() if out_dtype is None else _CAST()
        node.n_norm, node.eps, node.mixed = nd, eps, mixed
        node.pdtype = _param_dtype(x, weight, bias)
        node.saved = (x, weight, mean, rstd)
        record(node, (x, weight, bias), out)
    return out

