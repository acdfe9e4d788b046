"""2-D pooling (PyTorch's F.max_pool2d, F.avg_pool2d, F.adaptive_avg_pool2d), each one recorded
op. They compose primitives: pad (with the dtype's lowest value for max, zeros for avg), then
one strided `slice` view per kernel tap, combined tap by tap (compare/where for max, add for
avg); a loop over the kH*kW taps, never over pixels or channels.

Geometry that depends only on the shapes (which taps of which window fall inside the input,
each tap's flat input position, the averaging divisors) is computed once on the host with
NumPy as small (Ho, Wo)-sized maps and uploaded with `from_numpy`.

max_pool2d's gradient goes to the first maximum of each window (PyTorch's tie rule; a NaN
counts as a maximum, the last NaN winning, as PyTorch's CPU kernel). Its backward is one
`scatter_add` of the output gradient at the saved flat indices. avg_pool2d and
adaptive_avg_pool2d are linear and separable: y = A_h @ x @ A_w^T with (Ho, H) and (Wo, W)
averaging matrices; adaptive pooling (windows of varying size) runs on exactly that form, and
the double-backward (create_graph) form of avg_pool2d uses it too.

The rest of PyTorch's pooling is composed from differentiable Tensor ops (gradients from
autograd): adaptive max pooling (with indices), power-average (LP) pooling and max unpooling.
adaptive_max_pool2d walks the kernel taps of the largest window, as max_pool2d does: per tap
one gather of every window's element at that tap (windows shorter than the largest repeat their
last element), combined with PyTorch's rule (the first maximum wins, a NaN always takes over).

Layout: torch's CPU pooling and upsampling kernels keep a channels-last input's layout in their
output and input gradient. `keeps_channels_last` gives the ops here (and interpolate) that rule
around their row-major compositions: a copy of the output, and one of the input gradient.
"""
from __future__ import annotations

import functools

import numpy as np

from ... import autograd
from ... import dtypes as dt
from ...autograd import Node, record, rename
from ...tensor import _wrap
from ...memory_format import channels_last, runs_channels_last
from .._common import alias, as_int, check_tensor, kernel_layout
from ..creation import tensor, zeros
from ..elementwise.binary import where
from ..autocast_policy import policy


class ChannelsLastGradBackward(Node):
    """An identity whose gradient is laid out channels-last: the input side of an op whose
    composition computes row-major, so its input gradient lies as torch's kernel gives it."""
    def backward(self, g):
        return g.contiguous(memory_format=channels_last)


def keeps_channels_last(op):
    """op(input, ...) with torch's layout rule for a 4-D CPU input that runs channels-last
    (runs_channels_last): 4-D outputs (indices too) and the input gradient channels-last."""
    @functools.wraps(op)
    def wrapped(input, *args, **kwargs):
        if getattr(input, "ndim", 0) != 4 or not runs_channels_last(input._data):
            return op(input, *args, **kwargs)
        x = input
        if autograd.needs_grad(input):
            x = alias(input)
            node = ChannelsLastGradBackward()
            node.saved = ()
            record(node, (input,), x)
        r = op(x, *args, **kwargs)
        if isinstance(r, tuple):
            return tuple(_relaid(t) if t.ndim == 4 else t for t in r)
        return _relaid(r) if r.ndim == 4 else r
    return wrapped


def _relaid(t):
    """t copied channels-last, its node keeping the op's name (torch's kernel writes that
    layout itself; its 1x1 adaptive average is a mean re-strided in place: AsStridedBackward1)."""
    out = t.contiguous(memory_format=channels_last)
    if t.grad_fn is None:
        return out
    name = type(t.grad_fn).__name__
    return rename(out, "AsStridedBackward1" if name == "MeanBackward1" else name)


def _pair(v, name, op, default=None):
    if v is None or (isinstance(v, (tuple, list)) and len(v) == 0):
        if default is not None:
            return default
    elif as_int(v) is not None:
        return (as_int(v), as_int(v))
    elif isinstance(v, (tuple, list)) and len(v) in (1, 2) and all(as_int(e) is not None for e in v):
        return (as_int(v[0]), as_int(v[-1]))
    extra = "be omitted, " if default is not None else ""
    raise RuntimeError(f"{op}: {name} must either {extra}be a single int, or a tuple of two "
                       f"ints (got {name}={v!r})")


def _out_size(n, k, s, p, d, ceil):
    """PyTorch's pooling_output_shape: in ceil mode the last window must start inside the
    input or its left padding."""
    span = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    o = span // s + 1                     # floor division, as PyTorch (span may be negative)
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


class _Geom:
    __slots__ = ("n", "c", "h", "w", "k", "s", "p", "d", "ho", "wo", "batched", "pads")


def _check(op, x, kernel_size, stride, padding, dilation, ceil_mode, avg):
    check_tensor(x, op)
    k = _pair(kernel_size, "kernel_size", op)
    s = _pair(stride, "stride", op, default=k)
    p = _pair(padding, "padding", op)
    d = _pair(dilation, "dilation", op)
    shape = list(x.shape)
    if x.ndim not in (3, 4) or any(n == 0 for n in shape[-3:]):
        raise RuntimeError(f"{op}: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got: {shape}")
    if x.dtype is dt.bool_ or (avg and not x.dtype.is_floating_point):
        raise RuntimeError(f"{op}: not implemented for '{x.dtype.name}' tensors (input {shape})")
    if min(k) <= 0:
        raise RuntimeError(f"{op}: kernel size should be greater than zero, but got kH: {k[0]} "
                           f"kW: {k[1]}")
    if min(s) <= 0:
        raise RuntimeError(f"{op}: stride should be greater than zero, but got dH: {s[0]} dW: {s[1]}")
    if min(d) <= 0:
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got dilationH: {d[0]} "
                           f"dilationW: {d[1]}")
    if min(p) < 0:
        raise RuntimeError(f"{op}: pad must be non-negative, but got pad: {list(p)}")
    for pi, ki, di in zip(p, k, d):
        if pi > (ki // 2 if avg else ((ki - 1) * di + 1) // 2):
            raise RuntimeError(f"{op}: pad should be at most half of "
                               f"{'' if avg else 'effective '}kernel size, but got pad={pi}, "
                               f"kernel_size={ki}{'' if avg else f' and dilation={di}'} "
                               f"(input {shape})")
    g = _Geom()
    g.batched = x.ndim == 4
    g.n, g.c, g.h, g.w = shape if g.batched else [1] + shape
    g.k, g.s, g.p, g.d = k, s, p, d
    g.ho = _out_size(g.h, k[0], s[0], p[0], d[0], ceil_mode)
    g.wo = _out_size(g.w, k[1], s[1], p[1], d[1], ceil_mode)
    if g.ho < 1 or g.wo < 1:
        raise RuntimeError(f"{op}: Given input size: ({g.c}x{g.h}x{g.w}). Calculated output size: "
                           f"({g.c}x{g.ho}x{g.wo}). Output size is too small (kernel_size={list(k)}, "
                           f"stride={list(s)}, padding={list(p)}, dilation={list(d)})")
    # the last window may reach past the right padding in ceil mode: pad that far
    g.pads = tuple((pi, max(0, (o - 1) * si + (ki - 1) * di + 1 - n - pi))
                   for n, o, ki, si, pi, di in zip((g.h, g.w), (g.ho, g.wo), k, s, p, d))
    return g


def _taps(g):
    """(i, j, starts, stops, steps) of each kernel tap's (Ho, Wo) view of the padded image."""
    for i in range(g.k[0]):
        for j in range(g.k[1]):
            h0, w0 = i * g.d[0], j * g.d[1]
            yield i, j, (0, 0, h0, w0), (g.n, g.c, h0 + (g.ho - 1) * g.s[0] + 1,
                                         w0 + (g.wo - 1) * g.s[1] + 1), (1, 1) + g.s


def _positions(n, o, k, s, p, d):
    """(k, o) input position of tap i of window o along one axis (may lie in the padding)."""
    return np.arange(o)[None, :] * s - p + np.arange(k)[:, None] * d


def _unbatch(b, y, g):
    return y if g.batched else b.reshape(y, y.shape[1:])


# ---- max ------------------------------------------------------------------------------------
def _max_forward(b, x, g, dtype, dev):
    """(values, flat int64 indices into H*W), both (N, C, Ho, Wo)."""
    fill = float("-inf") if dtype.is_floating_point else int(np.iinfo(dtype.np).min)
    xp = b.pad(x, ((0, 0), (0, 0)) + g.pads, fill)
    ph, pw = _positions(g.h, g.ho, g.k[0], g.s[0], g.p[0], g.d[0]), \
        _positions(g.w, g.wo, g.k[1], g.s[1], g.p[1], g.d[1])
    vh, vw = (ph >= 0) & (ph < g.h), (pw >= 0) & (pw < g.w)
    # per tap: is it inside the input (Ho, Wo), and its flat input position
    valid = b.from_numpy(vh[:, None, :, None] & vw[None, :, None, :], dt.bool_, dev)
    pos = b.from_numpy(ph[:, None, :, None] * g.w + pw[None, :, None, :], dt.int64, dev)
    full = (g.n, g.c, g.ho, g.wo)
    cur = idx = in_pad = None
    for i, j, st, sp, sd in _taps(g):
        v = b.slice(xp, st, sp, sd)                                   # (N, C, Ho, Wo) view
        ok = b.reshape(b.slice(valid, (i, j, 0, 0), (i + 1, j + 1, g.ho, g.wo), (1,) * 4),
                       (g.ho, g.wo))
        at = b.reshape(b.slice(pos, (i, j, 0, 0), (i + 1, j + 1, g.ho, g.wo), (1,) * 4),
                       (g.ho, g.wo))
        if cur is None:
            cur = b.copy_(b.empty(full, dtype, dev), v)
            idx = b.contiguous(b.expand(at, full))
            in_pad = b.unary("not", ok)                    # (Ho, Wo): best so far is padding
            continue
        upd = b.binary("gt", v, cur)
        if dtype.is_floating_point:
            upd = b.binary("or", upd, b.unary("isnan", v))
        # a real -inf (or the integer minimum) must still beat a padded one
        upd = b.binary("or", upd, b.binary("and", in_pad, ok))
        in_pad = b.binary("and", in_pad, b.unary("not", ok))
        cur = b.where(upd, v, cur)
        idx = b.where(upd, at, idx)
    return cur, idx


def _max_backward_buf(b, gy, idx, g, dtype, dev):
    fast = b.fast("max_pool2d_backward")
    full = (g.n, g.c, g.ho, g.wo)                   # unbatched input: (C, Ho, Wo) -> batch of 1
    dx = fast(kernel_layout(b, b.reshape(gy, full)), kernel_layout(b, b.reshape(idx, full)), g.h, g.w, g.k,
              g.s, g.p, g.d) if fast else None
    if dx is not None:
        return dx
    dx = b.full((g.n, g.c, g.h * g.w), 0, dtype, dev)
    b.scatter_add(dx, b.reshape(b.contiguous(idx), (g.n, g.c, g.ho * g.wo)),
                  b.reshape(b.contiguous(gy), (g.n, g.c, g.ho * g.wo)), 2)
    return b.reshape(dx, (g.n, g.c, g.h, g.w))


class MaxPool2DWithIndicesBackward0(Node):
    def backward(self, gy):
        (idx,) = self.saved
        g = self.geom
        if autograd.is_grad_enabled():       # double backward: scatter_add is differentiable
            from ..creation import zeros
            lead = (g.n, g.c) if g.batched else (g.c,)
            i2, g2 = idx.reshape(*lead, g.ho * g.wo), gy.reshape(*lead, g.ho * g.wo)
            z = zeros(*lead, g.h * g.w, dtype=gy.dtype, device=gy.device)
            return z.scatter_add(-1, i2, g2).reshape(*lead, g.h, g.w)
        b = gy._backend
        x = _max_backward_buf(b, gy._data, idx._data, g, gy.dtype, gy._device.index)
        return _wrap(_unbatch(b, x, g), gy.dtype, gy._device)


@keeps_channels_last
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """torch.nn.functional.max_pool2d over (N, C, H, W) or (C, H, W) input. Indices (with
    return_indices) are flat positions in each H*W plane, int64, as PyTorch. Error messages
    start with 'max_pool2d: '."""
    x = input
    g = _check("max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode, avg=False)
    b, dev = x._backend, x._device.index
    xd = x._data if g.batched else b.reshape(x._data, (1,) + tuple(x.shape))
    fast = b.fast("max_pool2d")
    r = fast(xd, g.k, g.s, g.p, g.d, g.ho, g.wo) if fast else None
    y, idx = r if r is not None else _max_forward(b, xd, g, x.dtype, dev)
    out = _wrap(_unbatch(b, y, g), x.dtype, x._device)
    ind = _wrap(_unbatch(b, idx, g), dt.int64, x._device)
    if autograd.needs_grad(x):
        node = MaxPool2DWithIndicesBackward0()
        node.geom = g
        node.saved = (_wrap(ind._data, dt.int64, x._device),)
        record(node, (x,), out)
    return (out, ind) if return_indices else out


# ---- average --------------------------------------------------------------------------------
def _avg_divisor(n, o, k, s, p, count_include_pad):
    """Per window along one axis: PyTorch's divisor factor (window clipped to the padded
    input, or to the input itself without count_include_pad), and the clipped window."""
    start = np.arange(o) * s - p
    end = np.minimum(start + k, n + p)
    size = end - start
    lo, hi = np.maximum(start, 0), np.minimum(end, n)
    return (size if count_include_pad else hi - lo), lo, hi


def _avg_matrices(g, count_include_pad, divisor_override, np_dtype):
    """(Ho, H) and (Wo, W) matrices with y = A_h @ x @ A_w^T."""
    mats = []
    for n, o, k, s, p in ((g.h, g.ho, g.k[0], g.s[0], g.p[0]), (g.w, g.wo, g.k[1], g.s[1], g.p[1])):
        div, lo, hi = _avg_divisor(n, o, k, s, p, count_include_pad)
        r = np.arange(n)[None, :]
        member = (r >= lo[:, None]) & (r < hi[:, None])
        mats.append(member / (1.0 if divisor_override else div[:, None]))
    if divisor_override:
        mats[1] = mats[1] / divisor_override
    return [m.astype(np_dtype) for m in mats]


class AvgPool2DBackward0(Node):
    def backward(self, gy):
        g = self.geom
        b, dev = gy._backend, gy._device.index
        if autograd.is_grad_enabled():       # double backward: the separable matmul form
            ah, aw = (_wrap(b.from_numpy(m, gy.dtype, dev), gy.dtype, gy._device)
                      for m in _avg_matrices(g, self.cip, self.dov, np.float64))
            return ah.mT @ gy @ aw
        cd = dt.opmath(gy.dtype)
        gd = b.cast(gy._data, cd) if cd is not gy.dtype else gy._data
        if not g.batched:
            gd = b.reshape(gd, (1,) + tuple(gd.shape))
        gs = b.binary("div", gd, b.from_numpy(self.divisor, cd, dev))      # (N, C, Ho, Wo)
        dxp = b.full((g.n, g.c, g.h + sum(g.pads[0]), g.w + sum(g.pads[1])), 0, cd, dev)
        for _, _, st, sp, sd in _taps(g):        # the adjoint of each tap view, in place
            view = b.slice(dxp, st, sp, sd)
            b.binary("add", view, gs, out=view)
        (pt, _), (pl, _) = g.pads
        dx = b.contiguous(b.slice(dxp, (0, 0, pt, pl), (g.n, g.c, pt + g.h, pl + g.w), (1,) * 4))
        if cd is not gy.dtype:
            dx = b.cast(dx, gy.dtype)
        return _wrap(_unbatch(b, dx, g), gy.dtype, gy._device)


@keeps_channels_last
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """torch.nn.functional.avg_pool2d over (N, C, H, W) or (C, H, W) floating input (PyTorch's
    CPU kernel also takes int64; this one raises). float16/bfloat16 accumulate in float32.
    Error messages start with 'avg_pool2d: '."""
    x = input
    g = _check("avg_pool2d", x, kernel_size, stride, padding, 1, ceil_mode, avg=True)
    if divisor_override is not None and (as_int(divisor_override) is None or divisor_override == 0):
        raise RuntimeError(f"avg_pool2d: divisor must be not zero (got divisor_override="
                           f"{divisor_override!r})")
    b, dev = x._backend, x._device.index
    dh, _, _ = _avg_divisor(g.h, g.ho, g.k[0], g.s[0], g.p[0], count_include_pad)
    dw, _, _ = _avg_divisor(g.w, g.wo, g.k[1], g.s[1], g.p[1], count_include_pad)
    divisor = (np.full((g.ho, g.wo), divisor_override, np.float64) if divisor_override
               else (dh[:, None] * dw[None, :]).astype(np.float64))     # (Ho, Wo)
    cd = dt.opmath(x.dtype)
    xd = x._data if g.batched else b.reshape(x._data, (1,) + tuple(x.shape))
    if cd is not x.dtype:
        xd = b.cast(xd, cd)
    xp = b.pad(xd, ((0, 0), (0, 0)) + g.pads, 0)
    acc = None
    for _, _, st, sp, sd in _taps(g):
        v = b.slice(xp, st, sp, sd)                                   # (N, C, Ho, Wo) view
        acc = b.copy_(b.empty((g.n, g.c, g.ho, g.wo), cd, dev), v) if acc is None \
            else b.binary("add", acc, v, out=acc)
    y = b.binary("div", acc, b.from_numpy(divisor, cd, dev))
    if cd is not x.dtype:
        y = b.cast(y, x.dtype)
    out = _wrap(_unbatch(b, y, g), x.dtype, x._device)
    if autograd.needs_grad(x):
        node = AvgPool2DBackward0()
        node.geom, node.divisor = g, divisor
        node.cip, node.dov = count_include_pad, divisor_override
        node.saved = ()
        record(node, (x,), out)
    return out


# ---- adaptive average -----------------------------------------------------------------------
def _adaptive_matrix(n, o, np_dtype):
    """(o, n): row r averages input [floor(r*n/o), ceil((r+1)*n/o)), PyTorch's windows."""
    r = np.arange(o)
    lo, hi = (r * n) // o, -((-(r + 1) * n) // o)
    c = np.arange(n)[None, :]
    m = (c >= lo[:, None]) & (c < hi[:, None])
    return (m / np.maximum(hi - lo, 1)[:, None]).astype(np_dtype)


class AdaptiveAvgPool2DBackward0(Node):
    def backward(self, gy):
        ah, aw = self.mats                                          # (Ho, H), (Wo, W) buffers
        b, dt_ = gy._backend, gy.dtype
        if autograd.is_grad_enabled():
            ah_t, aw_t = (_wrap(m, self.cd, gy._device).to(dt_) for m in (ah, aw))
            return ah_t.mT @ gy @ aw_t
        gd = b.cast(gy._data, self.cd) if self.cd is not dt_ else gy._data
        dx = b.matmul(b.permute(ah, (1, 0)), b.matmul(gd, aw))      # (.., H, W)
        return _wrap(b.cast(dx, dt_) if self.cd is not dt_ else dx, dt_, gy._device)


def adaptive_output_size(op, x, output_size):
    """(Ho, Wo) of adaptive pooling: output_size an int or a pair whose None entries keep the
    input's size; x (N, C, H, W) or (C, H, W) with non-zero H and W."""
    check_tensor(x, op)
    shape = list(x.shape)
    if x.ndim not in (3, 4) or any(n == 0 for n in shape[-2:]):
        raise RuntimeError(f"{op}: Expected 3D or 4D tensor with non-zero sizes for the last two "
                           f"dimensions, but got input of size {shape}")
    osz = (output_size, output_size) if as_int(output_size) is not None or output_size is None \
        else output_size
    if not isinstance(osz, (tuple, list)) or len(osz) != 2 or \
            any(o is not None and (as_int(o) is None or o < 0) for o in osz):
        raise RuntimeError(f"{op}: output_size must be an int >= 0, None, or a pair of them "
                           f"(got output_size={output_size!r}, input {shape})")
    return (shape[-2] if osz[0] is None else as_int(osz[0]),
            shape[-1] if osz[1] is None else as_int(osz[1]))


@keeps_channels_last
def adaptive_avg_pool2d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool2d over (N, C, H, W) or (C, H, W) floating input;
    output_size an int or a pair whose None entries keep the input's size. Output window r
    of n -> o averages [floor(r*n/o), ceil((r+1)*n/o)), as PyTorch. Equal windows (o divides
    n, global pooling included) are a mean over them; otherwise it is A_h @ x @ A_w^T, so
    float results may differ from PyTorch's in the last bits."""
    x = input
    op = "adaptive_avg_pool2d"
    ho, wo = adaptive_output_size(op, x, output_size)
    shape = list(x.shape)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}: not implemented for '{x.dtype.name}' tensors (input {shape})")
    h, w = shape[-2:]
    if ho and wo and h % ho == 0 and w % wo == 0:    # equal windows (global pooling too): a mean
        y = x.reshape(*shape[:-2], ho, h // ho, wo, w // wo).mean((-3, -1))      # (.., Ho, Wo)
        # torch's 1x1 output is a mean over H and W; others its pooling kernel
        return rename(y, "MeanBackward1" if ho == wo == 1 else "AdaptiveAvgPool2DBackward0", x)
    b, dev = x._backend, x._device.index
    cd = dt.opmath(x.dtype)
    ah = b.from_numpy(_adaptive_matrix(shape[-2], ho, np.float64), cd, dev)     # (Ho, H)
    aw = b.from_numpy(_adaptive_matrix(shape[-1], wo, np.float64), cd, dev)     # (Wo, W)
    xd = b.cast(x._data, cd) if cd is not x.dtype else x._data
    y = b.matmul(ah, b.matmul(xd, b.permute(aw, (1, 0))))                       # (.., Ho, Wo)
    out = _wrap(b.cast(y, x.dtype) if cd is not x.dtype else y, x.dtype, x._device)
    if autograd.needs_grad(x):
        node = AdaptiveAvgPool2DBackward0()
        node.mats, node.cd = (ah, aw), cd
        node.saved = ()
        record(node, (x,), out)
    return out


__all__ = ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"]


# ---- 1-D pooling: the 2-D ops over a height-1 image -----------------------------------------
def _one(v, name, op):
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise RuntimeError(f"{op}: {name} must be a single int, or a tuple of one int (got {name}={v!r})")
        return v[0]
    return v


def _squeezed(y, input):
    """A 1-D form's result: the 2-D op's over a height-1 image, its height squeezed out (torch's
    1-D forms are that composition too, ending in SqueezeBackward1)."""
    return rename(y.squeeze(-2), "SqueezeBackward1", input)


def _check1d(op, x):
    check_tensor(x, op)
    if x.ndim not in (2, 3):
        raise RuntimeError(f"{op}: Expected 2D or 3D (batch mode) tensor for input, but got: "
                           f"{list(x.shape)}")


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """torch.nn.functional.max_pool1d over (N, C, L) or (C, L); indices index L."""
    _check1d("max_pool1d", input)
    k = _one(kernel_size, "kernel_size", "max_pool1d")
    s = k if stride is None or stride == () or stride == [] else _one(stride, "stride", "max_pool1d")
    out = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _one(padding, "padding", "max_pool1d")),
                     (1, _one(dilation, "dilation", "max_pool1d")), ceil_mode, return_indices)
    if return_indices:
        return _squeezed(out[0], input), out[1].squeeze(-2)
    return _squeezed(out, input)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Average pooling over L of (N, C, L) or (C, L) floating input, the avg_pool2d of a height-1
    image; as torch.nn.functional.avg_pool1d. Integer input raises RuntimeError (torch's CPU
    kernel takes int64)."""
    _check1d("avg_pool1d", input)
    k = _one(kernel_size, "kernel_size", "avg_pool1d")
    s = k if stride is None or stride == () or stride == [] else _one(stride, "stride", "avg_pool1d")
    return _squeezed(avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _one(padding, "padding", "avg_pool1d")),
                                ceil_mode, count_include_pad), input)


def adaptive_avg_pool1d(input, output_size):
    """Adaptive average pooling of (N, C, L) or (C, L) floating input to output_size along L
    (adaptive_avg_pool2d of a height-1 image); as torch.nn.functional.adaptive_avg_pool1d."""
    _check1d("adaptive_avg_pool1d", input)
    return _squeezed(adaptive_avg_pool2d(input.unsqueeze(-2), (1, _one(output_size, "output_size",
                                                                        "adaptive_avg_pool1d"))), input)


def _windows(n, o):
    """Start and end (exclusive) of each of o adaptive windows over n: [floor(r n / o),
    ceil((r + 1) n / o))."""
    r = np.arange(o)
    return (r * n) // o, -((-(r + 1) * n) // o)


@keeps_channels_last
def adaptive_max_pool2d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool2d over (N, C, H, W) or (C, H, W); indices (with
    return_indices) are flat positions in each H*W plane, int64."""
    x = input
    ho, wo = adaptive_output_size("adaptive_max_pool2d", x, output_size)
    if x.dtype is dt.bool_:
        raise RuntimeError(f"adaptive_max_pool2d: not implemented for 'bool' tensors (input {list(x.shape)})")
    h, w = x.shape[-2:]
    lead = tuple(x.shape[:-2])
    flat = x.reshape(*lead, h * w)                                        # (.., H*W)
    (hs, he), (ws, we) = _windows(h, ho), _windows(w, wo)
    best = idx = None
    for a in range(int((he - hs).max()) if ho else 0):
        rows = np.minimum(hs + a, he - 1)                                 # (Ho,) clipped: repeats
        for b in range(int((we - ws).max()) if wo else 0):
            cols = np.minimum(ws + b, we - 1)
            pos = tensor((rows[:, None] * w + cols[None, :]).reshape(-1), dtype=dt.int64,
                         device=x.device)                                 # (Ho*Wo,)
            v = flat.gather(-1, pos.expand(*lead, ho * wo))               # (.., Ho*Wo)
            if best is None:
                best, idx = v, pos.expand(*lead, ho * wo)
                continue
            take = (v > best) | v.isnan() if x.dtype.is_floating_point else v > best
            best, idx = where(take, v, best), where(take, pos, idx)
    if best is None:                                                      # an empty output
        best = zeros(*lead, ho * wo, dtype=x.dtype, device=x.device)
        idx = zeros(*lead, ho * wo, dtype=dt.int64, device=x.device)
    out = rename(best.reshape(*lead, ho, wo), "AdaptiveMaxPool2DBackward0", x)   # (torch's: one node)
    return (out, idx.reshape(*lead, ho, wo).contiguous()) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool1d over (N, C, L) or (C, L)."""
    check_tensor(input, "adaptive_max_pool1d")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d: Expected 2D or 3D tensor, but got input of size "
                           f"{list(input.shape)}")
    o = as_int(output_size[0] if isinstance(output_size, (tuple, list)) and len(output_size) == 1
               else output_size)
    if o is None or o < 0:
        raise RuntimeError(f"adaptive_max_pool1d: output_size must be one int >= 0 (got {output_size!r})")
    r = adaptive_max_pool2d(input.unsqueeze(-2), (1, o), return_indices)
    return (_squeezed(r[0], input), r[1].squeeze(-2)) if return_indices else _squeezed(r, input)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool2d: (sum over each window of x^p)^(1/p), as PyTorch composes
    it (average pool of x^p, times the window size; the sign kept through a ReLU of |.|)."""
    kh, kw = _pair(kernel_size, "kernel_size", "lp_pool2d")
    out = avg_pool2d(input.pow(norm_type), (kh, kw), stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(kh * kw).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch.nn.functional.lp_pool1d over (N, C, L) or (C, L)."""
    k = as_int(kernel_size[0] if isinstance(kernel_size, (tuple, list)) else kernel_size)
    s = k if stride is None else as_int(stride[0] if isinstance(stride, (tuple, list)) else stride)
    out = avg_pool2d(input.pow(norm_type).unsqueeze(-2), (1, k), (1, s), 0, ceil_mode).squeeze(-2)
    return (out.sign() * out.abs().relu()).mul(k).pow(1.0 / norm_type)


@policy("max_unpool2d")
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch.nn.functional.max_unpool2d: zeros of the pooled-from size with each input value
    written at its index (flat in each output plane), the partial inverse of max_pool2d."""
    op = "max_unpool2d"
    check_tensor(input, op)
    check_tensor(indices, op, "indices")
    if input.ndim not in (3, 4) or tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}: Expected 3D or 4D input and indices of the same shape, got input "
                           f"{list(input.shape)} and indices {list(indices.shape)}")
    if indices.dtype is not dt.int64:
        raise RuntimeError(f"{op}: expected indices to have type Long, but got {indices.dtype}")
    k = _pair(kernel_size, "kernel_size", op)
    s = _pair(stride, "stride", op, default=k)
    p = _pair(padding, "padding", op)
    size = [(n - 1) * si - 2 * pi + ki for n, ki, si, pi in zip(input.shape[-2:], k, s, p)]
    if output_size is not None:
        want = [as_int(v) for v in tuple(output_size)[-2:]]
        for d, (got, lo) in enumerate(zip(want, size)):
            if not lo - s[d] < got < lo + s[d]:
                raise ValueError(f"{op}: invalid output_size {list(output_size)} (dim {d} must be "
                                 f"between {lo - s[d]} and {lo + s[d]}, exclusive)")
        size = want
    lead = tuple(input.shape[:-2])
    out = zeros(*lead, size[0] * size[1], dtype=input.dtype, device=input.device)
    flat_i = indices.reshape(*lead, -1)
    if flat_i.numel() and (int(flat_i.min()) < 0 or int(flat_i.max()) >= size[0] * size[1]):
        raise RuntimeError(f"{op}: Found an invalid max index {int(flat_i.max())} (output volumes are "
                           f"of size {size[0]}x{size[1]})")
    return rename(out.scatter(-1, flat_i, input.reshape(*lead, -1)).reshape(*lead, *size),
                  "MaxUnpool2DBackward0", input)     # (torch's: one node)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch.nn.functional.max_unpool1d over (N, C, L) or (C, L)."""
    one = lambda v: (1, as_int(v[0] if isinstance(v, (tuple, list)) else v))  # noqa: E731
    k = one(kernel_size)
    osz = None if output_size is None else (1, as_int(tuple(output_size)[-1]))
    return _squeezed(max_unpool2d(input.unsqueeze(-2), indices.unsqueeze(-2), k,
                                  None if stride is None else one(stride), (0, one(padding)[1]), osz), input)
