"""softmax and log_softmax: the first ops with a backend fast path (a fused kernel), used when
the backend provides one and composed from primitives otherwise."""
from __future__ import annotations

from ... import autocast_state, autograd, capture
from ... import dtypes as dt
from ...autograd import Node, grad_mode, record
from ...tensor import _wrap
from .._common import alias, check_tensor, dim_arg
from ..indexing.index_bounds import known, out_of_range
from ..autocast_policy import cast


class SoftmaxBackward0(Node):
    log = False

    def backward(self, g):
        (y,) = self.saved
        if autograd.is_grad_enabled():       # double backward: differentiable composite
            x = self.x
            y = (x.log_softmax if self.log else x.softmax)(self.dim)
        else:
            fast = g._backend.fast("log_softmax_backward" if self.log else "softmax_backward")
            if fast is not None:
                return _wrap(fast(y._data, g._data, self.dim), g.dtype, g._device)
        dtype = g.dtype                         # float16/bfloat16: computed in float32
        g, y = g.to(dt.opmath(dtype)), y.to(dt.opmath(dtype))
        if self.log:
            return (g - y.exp() * g.sum(self.dim, keepdim=True)).to(dtype)
        gy = g * y
        return (gy - y * gy.sum(self.dim, keepdim=True)).to(dtype)


class LogSoftmaxBackward0(SoftmaxBackward0):
    log = True


_HALF = ("float16", "bfloat16")


def _cpu_half(b, x, d, log, dtype):
    """The forms where torch's CPU kernels round a float16/bfloat16 input's intermediates to its
    dtype (elsewhere, like the fast paths and CUDA's, they compute in float32 and round once):
    log_softmax over the last dim rounds the row's sum of exp(x - max), then its log, before
    the subtraction; softmax over another dim rounds exp(x - max) before the division."""
    def rounded(a):
        return b.cast(b.cast(a, dtype), dt.float32)
    xf = b.cast(x, dt.float32)
    shifted = b.binary("sub", xf, b.reduce("max", xf, (d,), True))
    e = b.unary("exp", shifted)
    total = b.reduce("sum", e, (d,), True)
    if log:
        y = b.binary("sub", shifted, rounded(b.unary("log", rounded(total))))
    else:
        y = b.binary("div", rounded(e), total)
    return b.cast(y, dtype)


def _softmax(name, x, dim, dtype, log):
    check_tensor(x, name)
    if dim is None:
        raise TypeError(f"{name}(): argument 'dim' must be given (implicit dim is deprecated)")
    if dtype is not None:
        x = x.to(dt.get_dtype(dtype))
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating-point input, got {x.dtype}")
    d = dim_arg(dim, x.ndim, name)
    if x.ndim == 0 or x.numel() == 0:    # a scalar is its own softmax group; empty stays empty
        with autograd.no_grad():
            out = x * 0 if log else x * 0 + 1
    elif x.dtype.name in _HALF and x._device.type == "cpu" and log == (d == x.ndim - 1):
        out = _wrap(_cpu_half(x._backend, x._data, d, log, x.dtype), x.dtype, x._device)
    else:
        fast = x._backend.fast(name)
        if fast is not None:
            out = _wrap(fast(x._data, d), x.dtype, x._device)
        else:
            with autograd.no_grad():
                wide = x.to(dt.opmath(x.dtype))      # float16/bfloat16: computed in float32
                shifted = wide - wide.amax(d, keepdim=True)
                if log:
                    out = shifted - shifted.exp().sum(d, keepdim=True).log()
                else:
                    e = shifted.exp()
                    out = e / e.sum(d, keepdim=True)
                out = out.to(x.dtype)
    if x._requires_grad and grad_mode._enabled:
        node = LogSoftmaxBackward0() if log else SoftmaxBackward0()
        node.dim, node.saved, node.x = d, (alias(out),), x
        record(node, (x,), out)
    return out


def softmax(input, dim=None, dtype=None):
    """exp(x) / sum(exp(x)) along dim (floating inputs; dtype casts first), as torch.softmax."""
    if autocast_state.on and dtype is None:     # paragrad.amp: the dtype this op runs in
        input, = cast("softmax", input)
    x = input
    return _softmax("softmax", x, dim, dtype, log=False)


def log_softmax(x, dim=None, dtype=None):
    """log(softmax(x)) along dim, computed as x - max - log(sum(exp(x - max))), as torch.log_softmax."""
    if autocast_state.on and dtype is None:     # paragrad.amp: the dtype this op runs in
        x, = cast("log_softmax", x)
    return _softmax("log_softmax", x, dim, dtype, log=True)


class NllLossBackward0(Node):
    """cross_entropy_indices' node: torch's cross_entropy is log_softmax then nll_loss, and
    its output's node is the nll_loss's."""
    upcast = False          # half logits, float32 loss (cross_entropy_indices)

    def backward(self, g):
        x, target = self.saved
        b = x._backend
        if not autograd.is_grad_enabled():
            fast = b.fast("cross_entropy_backward")
            if fast is not None and self.lse is not None:
                return _wrap(fast(x._data, target._data, self.lse, g._data, self.count, self.mean,
                                  self.ignore_index), x.dtype, x._device)
        valid = target != self.ignore_index
        safe = target.masked_fill(~valid, 0)
        if autograd.is_grad_enabled():       # double backward: the differentiable composite
            xc = x.float() if self.upcast else x
            picked = xc.log_softmax(1).gather(1, safe.unsqueeze(1)).squeeze(1)
            loss = -(picked * valid).sum()
            return _grad_of(loss / valid.sum().to(xc.dtype) if self.mean else loss, x, g)
        # the gradient scale: g, over the number of counted rows for a mean (no counted
        # row: count 0 and every row ignored -> a zero gradient, as PyTorch)
        count = b.cast(self.count, x.dtype)
        scale = b.binary("div", g._data, b.binary("maximum", count, 1)) if self.mean else g._data
        fast = b.fast("softmax")
        p = fast(x._data, 1) if fast is not None else _softmax_buf(b, x._data)
        # d loss / d x = (softmax(x) - onehot(target)) * valid * scale
        minus_one = b.full(tuple(target.shape) + (1,), -1, x.dtype, x._device.index)
        b.scatter_add(p, b.reshape(safe._data, tuple(target.shape) + (1,)), minus_one, 1)
        b.binary("mul", p, b.binary("mul", b.reshape(b.cast(valid._data, x.dtype), (-1, 1)), scale), out=p)
        return _wrap(p, x.dtype, x._device)


def _grad_of(loss, x, g):
    return autograd.grad(loss, x, g, create_graph=True)[0]


def _softmax_buf(b, x):
    e = b.unary("exp", b.binary("sub", x, b.reduce("max", x, (1,), True)))
    return b.binary("div", e, b.reduce("sum", e, (1,), True), out=e)


def check_targets(target, n, ignore_index, op="cross_entropy"):
    """Every target is a class index in [0, n) or ignore_index, else IndexError: a host read
    of the targets' range unless it is known (labels uploaded from the host and gathered)."""
    known_range = known(target)
    # ignore_index next to [0, n) (-1 as makemore pads, or n) widens the valid range by one
    low, high = (-1 if ignore_index == -1 else 0), (n if ignore_index == n else n - 1)
    if known_range is not None and low <= known_range[0] and known_range[1] <= high:
        return
    bad = out_of_range(target, low, high)
    if bad is not None and bad == ignore_index:     # an ignore_index outside: check the others
        bad = out_of_range(target.masked_fill(target == ignore_index, 0), 0, n - 1)
    if bad is not None:
        raise IndexError(f"{op}: Target {bad} is out of bounds for {n} classes")


def cross_entropy_indices(x, target, ignore_index=-100, reduction="mean", upcast=False):
    """Cross-entropy of logits x (N, C) against class indices (N,) as one op: the loss is
    logsumexp(x_i) - x_i[target_i] averaged over non-ignored rows; the backward is one
    softmax pass. (nn.functional.cross_entropy routes its common case here.) A backend's
    `cross_entropy` fast path does the forward in one kernel. upcast (half logits, with the
    backend's fast paths only): the float32 loss of x.float(), and its gradient cast back to
    x's dtype, without the casts' passes (autocast's cross-entropy)."""
    b = x._backend
    n = x.shape[1]
    if target.numel() and not capture.active():     # (no host reads inside pg.jit)
        check_targets(target, n, ignore_index)
    fast = b.fast("cross_entropy")
    mean = reduction == "mean"
    lse_rows = None
    if fast is not None:
        extra = {"out_dtype": dt.float32} if upcast else {}
        loss, count, lse_rows = fast(x._data, target._data, ignore_index, mean, **extra)  # (), (), (N,)
    else:
        valid_b = b.binary("ne", target._data, ignore_index)                   # (N,) bool
        safe_b = b.where(valid_b, target._data, b.full((), 0, target.dtype, x._device.index))
        xd = x._data
        vf = b.cast(valid_b, x.dtype)
        m = b.reduce("max", xd, (1,), True)                                # (N, 1)
        lse = b.binary("add", b.unary("log", b.reduce("sum", b.unary("exp", b.binary("sub", xd, m)),
                                                      (1,), True)), m)      # (N, 1)
        picked = b.gather(xd, b.reshape(safe_b, (-1, 1)), 1)               # (N, 1)
        per_row = b.binary("mul", b.reshape(b.binary("sub", lse, picked), (-1,)), vf)
        total = b.reduce("sum", per_row, (0,), False)
        count = b.reduce("sum", vf, (0,), False)
        loss = b.binary("div", total, count) if mean else total
    out = _wrap(loss, dt.float32 if upcast else x.dtype, x._device)
    if x._requires_grad and grad_mode._enabled:
        node = NllLossBackward0()
        node.saved = (x, target)
        node.mean, node.count, node.lse, node.ignore_index = mean, count, lse_rows, ignore_index
        node.upcast = upcast
        record(node, (x,), out)
    return out
