"""batch_norm as one recorded op: per-channel statistics over every dim but dim 1 of an
(N, C, *) input. Training mode normalizes with the batch statistics (biased variance) and
updates the running statistics in place (unbiased variance, as PyTorch); eval mode normalizes
with the running statistics. The backward is the closed form; under create_graph it is
recomputed with Tensor ops so second derivatives are right. A backend's `batch_norm` /
`batch_norm_backward` fast paths run the forward and backward fused (running-statistics update
included); otherwise the op composes primitives on buffers."""
from __future__ import annotations

from ... import autograd
from ... import dtypes as dt
from ...autograd import Node, no_grad, node_class, record
from ...tensor import _wrap, bump_version
from .._common import alias, check_tensor, kernel_layout, same_device
from .layer_norm import _centered_grad


def _geometry(x):
    """(reduction axes, keepdim stats shape (1, C, 1, ...), elements per channel)."""
    axes = (0,) + tuple(range(2, x.ndim))
    n = 1
    for a in axes:
        n *= x.shape[a]
    return axes, (1, x.shape[1]) + (1,) * (x.ndim - 2), n


class NativeBatchNormBackward0(Node):
    def backward(self, g):
        x, w, mean, rstd = self.saved[:4]
        need = tuple(e is not None for e in self.next_edges[:3])
        if autograd.is_grad_enabled():      # double backward: differentiable Tensor ops
            return _backward_tensors(g, x, w, mean, rstd, self.training, self.eps,
                                     self.param_dtype, *need)
        b = x._backend
        wd = None if w is None else w._data
        fast = b.fast("batch_norm_backward")
        grads = None
        if fast is not None:
            grads = fast(kernel_layout(b, g._data), kernel_layout(b, x._data),
                         None if wd is None else b.contiguous(wd), mean, rstd, self.training, *need)
        if grads is None:
            grads = _backward_composite(b, g._data, x._data, wd, mean, rstd, self.training,
                                        g.dtype, *need)
        dx, dw, db = grads      # dw, db in the compute dtype: cast to the parameters' dtype
        wrap = lambda d, dtype: None if d is None else _wrap(  # noqa: E731
            d if d.dtype == dtype.np else b.cast(d, dtype), dtype, x._device)
        return wrap(dx, x.dtype), wrap(dw, self.param_dtype), wrap(db, self.param_dtype)


class BatchNormReluBackward(NativeBatchNormBackward0):
    """relu(batch_norm(x) + residual): g through the ReLU's mask (the output's positives), then
    batch_norm's backward; the residual's gradient is the masked g itself."""

    def backward(self, g):
        y = self.saved[4]
        if autograd.is_grad_enabled():
            g = g * (y > 0)
        else:
            fast = g._backend.fast("relu_backward")
            g = _wrap(fast(g._data, y._data), g.dtype, g._device) if fast is not None else g * (y > 0)
        return super().backward(g) + ((g if self.next_edges[3] is not None else None),)


# the fused op's output is the ReLU's: torch's last op names it; torch answers an empty input
# with a clone of it
_BN_RELU = node_class(BatchNormReluBackward, "ReluBackward0")
_EMPTY = node_class(NativeBatchNormBackward0, "CloneBackward0")


def _param(b, p, shape, ct, dtype):
    """A (C,) parameter buffer as (1, C, 1, ...) in the compute dtype."""
    p = b.reshape(p, shape)
    return p if ct is dtype else b.cast(p, ct)


def _forward_composite(b, x, w, bias, rm, rv, training, eps, dtype):
    """(y, mean, rstd, var); mean/rstd are (1, C, 1, ...) in the compute dtype, var is the
    biased batch variance (training only, else None)."""
    ct = dt.opmath(dtype)
    axes, shape, n = _geometry(x)
    xf = x if ct is dtype else b.cast(x, ct)
    var = None
    if training:
        mean = b.binary("div", b.reduce("sum", xf, axes, True), n)
        xhat = b.binary("sub", xf, mean)                                  # a fresh buffer
        var = b.binary("div", b.reduce("sum", b.binary("mul", xhat, xhat), axes, True), n)
        rstd = b.unary("rsqrt", b.binary("add", var, eps))
    else:                                   # copies: the running buffers change in place later
        mean = b.cast(b.reshape(rm, shape), ct)
        rstd = b.cast(b.reshape(rv, shape), ct)
        rstd = b.unary("rsqrt", b.binary("add", rstd, eps, out=rstd), out=rstd)
        xhat = b.binary("sub", xf, mean)
    b.binary("mul", xhat, rstd, out=xhat)
    if w is not None:
        b.binary("mul", xhat, _param(b, w, shape, ct, dtype), out=xhat)
    if bias is not None:
        b.binary("add", xhat, _param(b, bias, shape, ct, dtype), out=xhat)
    y = xhat if ct is dtype else b.cast(xhat, dtype)
    return y, mean, rstd, var


def _backward_composite(b, g, x, w, mean, rstd, training, dtype, need_dx, need_dw, need_db):
    """Training: dx = w * rstd * (g - mean(g) - xhat * mean(g * xhat)), means over (N, *);
    eval: dx = w * rstd * g. Both: dw = sum of g * xhat, db = sum of g (per channel). dx in
    dtype, dw and db in the compute dtype."""
    ct = dt.opmath(dtype)
    axes, shape, n = _geometry(x)
    gf = g if ct is dtype else b.cast(g, ct)
    xhat = b.binary("sub", x if ct is dtype else b.cast(x, ct), mean)    # a fresh buffer
    b.binary("mul", xhat, rstd, out=xhat)
    dx = dw = db = None
    if need_dw:
        dw = b.reduce("sum", b.binary("mul", gf, xhat), axes, False)
    if need_db:
        db = b.reduce("sum", gf, axes, False)
    if need_dx:
        scale = rstd if w is None else b.binary("mul", rstd, _param(b, w, shape, ct, dtype))
        if training:
            dx = _centered_grad(b, gf, xhat, axes, n)
            b.binary("mul", dx, scale, out=dx)
        else:
            dx = b.binary("mul", gf, scale)
    if ct is not dtype and dx is not None:
        dx = b.cast(dx, dtype)
    return dx, dw, db


def _backward_tensors(g, x, w, mean, rstd, training, eps, param_dtype, need_dx, need_dw, need_db):
    """The same formulas with differentiable Tensor ops; training mode recomputes the batch
    statistics from x so that create_graph gives correct second derivatives."""
    dtype = x.dtype
    ct = dt.opmath(dtype)
    axes, shape, _ = _geometry(x)
    xf, gf = x.to(ct), g.to(ct)
    if training:
        xc = xf - xf.mean(axes, keepdim=True)
        rs = ((xc * xc).mean(axes, keepdim=True) + eps).rsqrt()
    else:                                   # running statistics are constants
        xc = xf - _wrap(mean, ct, x._device)
        rs = _wrap(rstd, ct, x._device)
    xhat = xc * rs
    dx = dw = db = None
    if need_dx:
        scale = rs if w is None else rs * w.to(ct).reshape(shape)
        if training:
            dx = scale * (gf - gf.mean(axes, keepdim=True)
                          - xhat * (gf * xhat).mean(axes, keepdim=True))
        else:
            dx = scale * gf
        dx = dx.to(dtype)
    if need_dw:
        dw = (gf * xhat).sum(axes).to(param_dtype)
    if need_db:
        db = gf.sum(axes).to(param_dtype)
    return dx, dw, db


def _check(x, rm, rv, weight, bias, training, eps):
    check_tensor(x, "batch_norm")
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected an input of shape (N, C, *) with at least 2 dims, "
                         f"got input of size {list(x.shape)}")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"batch_norm: expected a floating-point input, got {x.dtype}")
    c = x.shape[1]
    if (rm is None) != (rv is None):
        raise RuntimeError("batch_norm: running_mean and running_var must both be Tensors or "
                           "both be None")
    if rm is None and not training:
        raise RuntimeError("batch_norm: running_mean must be defined in evaluation mode "
                           "(pass training=True to use the batch statistics)")
    for name, t in (("running_mean", rm), ("running_var", rv), ("weight", weight),
                    ("bias", bias)):
        if t is None:
            continue
        check_tensor(t, "batch_norm", name)
        if t.ndim != 1 or t.shape[0] != c:
            raise RuntimeError(f"batch_norm: {name} should contain {c} elements not "
                               f"{t.numel()} (input of size {list(x.shape)}, {name} of size "
                               f"{list(t.shape)})")
        if name.startswith("running") and not t.dtype.is_floating_point:
            raise RuntimeError(f"batch_norm: expected {name} to be floating-point, got {t.dtype}")
        if not name.startswith("running") and t.dtype is not x.dtype and not (
                t.dtype is dt.float32 and x.dtype in (dt.float16, dt.bfloat16)):
            raise RuntimeError(f"batch_norm: expected {name} to have the input's dtype "
                               f"{x.dtype} (or float32 for a float16/bfloat16 input), but got "
                               f"{t.dtype} (input of size {list(x.shape)})")
    if weight is not None and bias is not None and weight.dtype is not bias.dtype:
        raise RuntimeError(f"batch_norm: expected weight and bias to have one dtype, got "
                           f"{weight.dtype} and {bias.dtype}")
    if training and not eps > 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if training:
        _, _, n = _geometry(x)
        if n == 1:
            raise ValueError(f"batch_norm: Expected more than 1 value per channel when training, "
                             f"got input size {list(x.shape)}")
    same_device("batch_norm", x, rm, rv, weight, bias)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """torch.nn.functional.batch_norm for an (N, C, *) input. With training, normalize with
    the batch statistics and (when given) update running_mean/running_var in place:
    r = (1 - momentum) * r + momentum * stat, with the unbiased batch variance. Otherwise use
    the running statistics. float16/bfloat16 inputs compute in float32 and may have float32
    weight/bias (torch's mixed type: what a convnet under autocast passes; the output keeps the
    input's dtype, the parameters' gradients theirs). A call that raises never touches the
    running statistics."""
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps, None, False)


def batch_norm_relu(input, running_mean, running_var, weight=None, bias=None, training=False,
                    momentum=0.1, eps=1e-5, residual=None):
    """relu(batch_norm(input, ...) + residual) (residual optional: a ResNet block's skip path)
    as one op (paragrad's): on a backend with the fused kernel the normalization, the add and
    the ReLU are one pass, where the three ops read and write the activations three times.
    Values and gradients are those of the three ops."""
    if residual is not None:
        check_tensor(residual, "batch_norm_relu", "residual")
        if tuple(residual.shape) != tuple(input.shape) or residual.dtype is not input.dtype:
            raise RuntimeError(f"batch_norm_relu: residual of shape {list(residual.shape)} and dtype "
                               f"{residual.dtype} must match the input's {list(input.shape)} and {input.dtype}")
        same_device("batch_norm_relu", input, residual)
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps, residual, True)


def _batch_norm(x, rm, rv, weight, bias, training, momentum, eps, residual, relu):
    training, eps = bool(training), float(eps)
    _check(x, rm, rv, weight, bias, training, eps)
    b = x._backend
    wd = None if weight is None else weight._data
    bd = None if bias is None else bias._data
    rmd = None if rm is None else rm._data
    rvd = None if rv is None else rv._data
    update = training and rm is not None and x.numel() > 0
    fast = b.fast("batch_norm") if x.numel() else None     # kernels never see empty input
    res = None
    if fast is not None:
        fused = {} if not relu else {"relu": True, "residual": None if residual is None else residual._data}
        res = fast(kernel_layout(b, x._data), None if wd is None else b.contiguous(wd),
                   None if bd is None else b.contiguous(bd), rmd, rvd, training,
                   float(momentum) if update else 0.0, eps, **fused)
    if res is not None:
        y, mean, rstd = res
        if update:                          # written in place by the kernel, as copy_ would
            bump_version(rm)
            bump_version(rv)
    else:
        y, mean, rstd, var = _forward_composite(b, x._data, wd, bd, rmd, rvd, training, eps,
                                                x.dtype)
        if update:
            _update_running(b, rm, rv, mean, var, float(momentum), _geometry(x)[2],
                            dt.opmath(x.dtype))
        if residual is not None:
            y = b.binary("add", y, residual._data, out=y)
        if relu:
            y = b.unary("relu", y, out=y)
    out = _wrap(y, x.dtype, x._device)
    if autograd.needs_grad(x, weight, bias, residual):
        node = _BN_RELU() if relu else NativeBatchNormBackward0() if x.numel() else _EMPTY()
        node.training, node.eps = training, eps
        node.param_dtype = (weight if weight is not None else bias if bias is not None else x).dtype
        # (and the output, whose positives are the ReLU's mask; an in-place change of it raises)
        node.saved = (x, weight, mean, rstd) + ((alias(out),) if relu else ())
        record(node, (x, weight, bias) + ((residual,) if relu else ()), out)
    return out


def _update_running(b, rm, rv, mean, var, momentum, n, ct):
    c = rm.shape[0]
    unbiased = b.binary("mul", b.reshape(var, (c,)), n / (n - 1))
    new_m = b.binary("add", b.binary("mul", b.cast(rm._data, ct), 1.0 - momentum),
                     b.binary("mul", b.reshape(mean, (c,)), momentum))
    new_v = b.binary("add", b.binary("mul", b.cast(rv._data, ct), 1.0 - momentum),
                     b.binary("mul", unbiased, momentum))
    with no_grad():                         # through copy_, so the version counters move
        rm.copy_(_wrap(new_m, ct, rm._device))
        rv.copy_(_wrap(new_v, ct, rv._device))
