"""conv2d (PyTorch's F.conv2d) as one recorded op, ConvolutionBackward0 (torch's name) giving
the input, weight and bias gradients. A backend's `conv2d` / `conv2d_backward` fast paths run it fused; otherwise it
composes primitives: im2col (pad, then one strided `slice` view per kernel tap, concatenated
into columns) and one batched `matmul` over the groups; the input gradient scatters the column
gradient back through the same tap views (the adjoint of im2col) and crops the padding.

Geometry shared by both paths and by the fast-path signatures (see backends/base.py): stride
and dilation are (h, w) pairs; padding is ((top, bottom), (left, right)), so padding='same'
with an odd total pads the extra row/column at the bottom/right, as PyTorch does."""
from __future__ import annotations


from ... import autograd
from ... import dtypes as dt
from ...autograd import Node, node_class, record, rename
from ...tensor import Tensor, _wrap
from .._common import as_int, check_tensor, kernel_layout, same_device
from ..autocast_policy import policy


class _Geom:
    """Everything about one convolution's shapes, computed once by the forward."""

    __slots__ = ("n", "c", "h", "w", "cout", "kh", "kw", "stride", "pads", "dil", "groups",
                 "ho", "wo", "batched")

    @property
    def hp(self):
        return self.h + self.pads[0][0] + self.pads[0][1]

    @property
    def wp(self):
        return self.w + self.pads[1][0] + self.pads[1][1]


def _pair(v, name):
    if as_int(v) is not None:
        return (as_int(v), as_int(v))
    if isinstance(v, (tuple, list)) and len(v) == 2 and all(as_int(e) is not None for e in v):
        return tuple(as_int(e) for e in v)
    raise RuntimeError(f"conv2d: expected {name} to be a single integer value or a list of 2 "
                       f"values to match the convolution dimensions, but got {name}={v!r}")


def _check(x, w, bias, stride, padding, dilation, groups):
    """Validate the arguments (PyTorch's rules and messages, prefixed 'conv2d: ') and return the
    geometry. Nothing is computed before this passes."""
    check_tensor(x, "conv2d")
    check_tensor(w, "conv2d", "weight")
    if bias is not None:
        check_tensor(bias, "conv2d", "bias")
    if x.ndim not in (3, 4):
        raise RuntimeError(f"conv2d: Expected 3D (unbatched) or 4D (batched) input to conv2d, but "
                           f"got input of size: {list(x.shape)}")
    if w.ndim != 4:
        raise RuntimeError(f"conv2d: expected a 4-D weight (out_channels, in_channels/groups, kH, "
                           f"kW), but got weight of size {list(w.shape)}")
    if as_int(groups) is None or groups <= 0:
        raise RuntimeError(f"conv2d: non-positive groups is not supported (got groups={groups!r})")
    groups = as_int(groups)
    stride, dil = _pair(stride, "stride"), _pair(dilation, "dilation")
    if min(stride) <= 0:
        raise RuntimeError(f"conv2d: non-positive stride is not supported, got stride={list(stride)}")
    if min(dil) <= 0:
        raise RuntimeError(f"conv2d: dilation should be greater than zero, but got {list(dil)}")
    cout, cg, kh, kw = w.shape
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0), (0, 0))
        elif padding == "same":
            if stride != (1, 1):
                raise RuntimeError(f"conv2d: padding='same' is not supported for strided "
                                   f"convolutions (got stride={list(stride)})")
            pads = tuple((t // 2, t - t // 2) for t in (dil[0] * (kh - 1), dil[1] * (kw - 1)))
        else:
            raise RuntimeError(f"conv2d: Invalid padding string: {padding!r} (expected 'valid', "
                               f"'same', an int or a pair of ints)")
    else:
        p = _pair(padding, "padding")
        if min(p) < 0:
            raise RuntimeError(f"conv2d: negative padding is not supported, got padding={list(p)}")
        pads = ((p[0], p[0]), (p[1], p[1]))
    xs = tuple(x.shape) if x.ndim == 4 else (1,) + tuple(x.shape)
    what = f"input{list(x.shape)}, weight of size {list(w.shape)}"
    if cout % groups:
        raise RuntimeError(f"conv2d: Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size {list(w.shape)} instead")
    if xs[1] != cg * groups:
        raise RuntimeError(f"conv2d: Given groups={groups}, weight of size {list(w.shape)}, "
                           f"expected input{list(x.shape)} to have {cg * groups} channels, but got "
                           f"{xs[1]} channels instead")
    if bias is not None and tuple(bias.shape) != (cout,):
        raise RuntimeError(f"conv2d: Given weight of size {list(w.shape)}, expected bias to be "
                           f"1-dimensional with {cout} elements, but got bias of size "
                           f"{list(bias.shape)} instead")
    dts = (x.dtype, w.dtype) + ((bias.dtype,) if bias is not None else ())
    if any(d is not x.dtype for d in dts):
        raise RuntimeError(f"conv2d: expected input, weight and bias of one dtype, got "
                           f"{', '.join(d.name for d in dts)} ({what})")
    if x.dtype is dt.bool_:
        raise RuntimeError(f"conv2d: not implemented for 'Bool' tensors ({what})")
    same_device("conv2d", x, w, bias)
    g = _Geom()
    g.n, g.c, g.h, g.w = xs
    g.cout, g.kh, g.kw = cout, kh, kw
    g.stride, g.pads, g.dil, g.groups, g.batched = stride, pads, dil, groups, x.ndim == 4
    ekh, ekw = dil[0] * (kh - 1) + 1, dil[1] * (kw - 1) + 1      # the dilated kernel's extent
    if g.hp < ekh or g.wp < ekw:
        raise RuntimeError(f"conv2d: Calculated padded input size per channel: ({g.hp} x {g.wp}). "
                           f"Kernel size: ({ekh} x {ekw}). Kernel size can't be greater than actual "
                           f"input size ({what}, padding={padding!r}, dilation={list(dil)})")
    g.ho = (g.hp - ekh) // stride[0] + 1
    g.wo = (g.wp - ekw) // stride[1] + 1
    return g


# ---- the composition of primitives (buffers in, buffers out) -------------------------------
def _tap_window(g, i, j, lead):
    """starts/stops/steps of kernel tap (i, j) in the padded (.., Hp, Wp) image: the strided
    (Ho, Wo) grid of pixels that tap multiplies."""
    h0, w0 = i * g.dil[0], j * g.dil[1]
    return ((0, 0, h0, w0), lead + (h0 + (g.ho - 1) * g.stride[0] + 1, w0 + (g.wo - 1) * g.stride[1] + 1),
            (1, 1) + g.stride)


def _im2col(b, x, g):
    """(N, C, H, W) -> columns (N, groups, C/groups * kH * kW, Ho * Wo), rows ordered like the
    weight's (c, i, j)."""
    if g.pads != ((0, 0), (0, 0)):
        x = b.pad(x, ((0, 0), (0, 0)) + g.pads, 0)
    taps = [b.reshape(b.slice(x, *_tap_window(g, i, j, (g.n, g.c))), (g.n, g.c, 1, g.ho, g.wo))
            for i in range(g.kh) for j in range(g.kw)]                 # views, (N, C, 1, Ho, Wo)
    cols = b.concat(taps, 2)                                           # (N, C, kH*kW, Ho, Wo)
    return b.reshape(cols, (g.n, g.groups, g.c // g.groups * g.kh * g.kw, g.ho * g.wo))


def _forward_composite(b, x, w, bias, g):
    cog = g.cout // g.groups
    w3 = b.reshape(w, (g.groups, cog, g.c // g.groups * g.kh * g.kw))  # (G, Cout/G, K)
    y = b.matmul(w3, _im2col(b, x, g))                                 # (N, G, Cout/G, L)
    y = b.reshape(y, (g.n, g.cout, g.ho, g.wo))
    if bias is not None:
        b.binary("add", y, b.reshape(bias, (1, g.cout, 1, 1)), out=y)
    return y


def _backward_composite(b, gy, x, w, g, dtype, device_index, need_dx, need_dw, need_db):
    cog = g.cout // g.groups
    g4 = b.reshape(gy, (g.n, g.groups, cog, g.ho * g.wo))              # (N, G, Cout/G, L)
    dx = dw = db = None
    if need_db:
        db = b.reduce("sum", gy, (0, 2, 3), False)
    if need_dw:
        cols = _im2col(b, x, g)                                        # (N, G, K, L)
        dw = b.matmul(g4, b.permute(cols, (0, 1, 3, 2)))               # (N, G, Cout/G, K)
        del cols                                    # freed before dX allocates its columns
        dw = b.reshape(b.reduce("sum", dw, (0,), False), (g.cout, g.c // g.groups, g.kh, g.kw))
    if need_dx:
        w3 = b.reshape(w, (g.groups, cog, g.c // g.groups * g.kh * g.kw))
        wt = b.permute(w3, (0, 2, 1))                                  # (G, K, Cout/G)
        dcols = b.reshape(b.matmul(wt, g4), (g.n, g.c, g.kh, g.kw, g.ho, g.wo))
        dxp = b.full((g.n, g.c, g.hp, g.wp), 0, dtype, device_index)
        for i in range(g.kh):      # the adjoint of each tap view: add its gradient back in place
            for j in range(g.kw):
                view = b.slice(dxp, *_tap_window(g, i, j, (g.n, g.c)))
                tap = b.reshape(b.slice(dcols, (0, 0, i, j, 0, 0), (g.n, g.c, i + 1, j + 1, g.ho, g.wo),
                                        (1,) * 6), (g.n, g.c, g.ho, g.wo))
                b.binary("add", view, tap, out=view)
        dx = dxp
        if g.pads != ((0, 0), (0, 0)):
            (pt, _), (pl, _) = g.pads
            dx = b.contiguous(b.slice(dxp, (0, 0, pt, pl), (g.n, g.c, pt + g.h, pl + g.w), (1,) * 4))
    return dx, dw, db


# ---- differentiable Tensor-op form, for create_graph (double backward) --------------------
def _backward_tensors(gy, x, w, g, need_dx, need_dw, need_db):
    """The composite backward written with recorded Tensor ops, so the gradients can be
    differentiated again (gradient penalties)."""
    from ..creation import zeros_like
    from ..movement.views import slice_op
    from ..movement.copies import cat, pad, stack
    if not g.batched:
        x, gy = x.unsqueeze(0), gy.unsqueeze(0)
    cog = g.cout // g.groups
    (pt, pb), (pl, pr) = g.pads
    g4 = gy.reshape(g.n, g.groups, cog, g.ho * g.wo)
    dx = dw = db = None
    if need_db:
        db = gy.sum((0, 2, 3))
    if need_dw:
        xp = pad(x, (pl, pr, pt, pb))
        taps = [slice_op(xp, *_tap_window(g, i, j, (g.n, g.c))).unsqueeze(2)
                for i in range(g.kh) for j in range(g.kw)]
        cols = cat(taps, 2).reshape(g.n, g.groups, -1, g.ho * g.wo)
        dw = (g4 @ cols.mT).sum(0).reshape(w.shape)
    if need_dx:
        dcols = (w.reshape(g.groups, cog, -1).mT @ g4).reshape(g.n, g.c, g.kh, g.kw, g.ho, g.wo)
        sh, sw = g.stride
        total = None
        for i in range(g.kh):
            for j in range(g.kw):
                t = dcols[:, :, i, j]                                  # (N, C, Ho, Wo)
                if sw > 1:      # put stride-1 zeros between columns, then between rows
                    t = stack([t] + [zeros_like(t)] * (sw - 1), -1).reshape(g.n, g.c, g.ho, -1)
                    t = pad(t, (0, 1 - sw))
                if sh > 1:
                    t = stack([t] + [zeros_like(t)] * (sh - 1), 3).reshape(g.n, g.c, -1, t.shape[-1])
                    t = pad(t, (0, 0, 0, 1 - sh))
                h0, w0 = i * g.dil[0], j * g.dil[1]
                t = pad(t, (w0, g.wp - w0 - t.shape[-1], h0, g.hp - h0 - t.shape[-2]))
                total = t if total is None else total + t
        dx = pad(total, (-pl, -pr, -pt, -pb))
    if dx is not None and not g.batched:
        dx = dx.squeeze(0)
    return dx, dw, db


class ConvolutionBackward0(Node):
    def backward(self, gy):
        x, w = self.saved
        g, edges = self.geom, self.next_edges
        need = (edges[0] is not None, edges[1] is not None, edges[2] is not None)
        if autograd.is_grad_enabled():
            return _backward_tensors(gy, x, w, g, *need)
        b = x._backend
        gd = kernel_layout(b, gy._data)
        xd = x._data
        if not g.batched:
            gd, xd = b.reshape(gd, (1,) + gd.shape), b.reshape(xd, (1,) + xd.shape)
        fast = b.fast("conv2d_backward")
        r = fast(gd, kernel_layout(b, xd), kernel_layout(b, w._data), g.stride, g.pads, g.dil, g.groups,
                 *need) if fast is not None else None
        # (a fast path may decline a case, e.g. a dtype its library lacks, by returning None)
        dx, dw, db = r if r is not None else _backward_composite(b, gd, xd, w._data, g, x.dtype,
                                                                  x._device.index, *need)
        if dx is not None and not g.batched:
            dx = b.reshape(dx, dx.shape[1:])
        return tuple(_wrap(d, x.dtype, x._device) if d is not None and n else None
                     for d, n in zip((dx, dw, db), need))


# torch runs an unbatched input as a batch of one and squeezes it back: its output's node is
# the squeeze's
_UNBATCHED = node_class(ConvolutionBackward0, "SqueezeBackward1")


@policy("conv2d")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv2d: input (N, C_in, H, W) or unbatched (C_in, H, W), weight
    (C_out, C_in/groups, kH, kW), bias (C_out,) or None; stride/dilation an int or a pair;
    padding an int, a pair, 'valid' or 'same' (stride 1 only; an odd total pads the extra at
    the bottom/right). Differs from PyTorch in that input, weight and bias must share one
    dtype (PyTorch's CPU kernel has the same rule; its error text differs), and error
    messages start with 'conv2d: '."""
    x = input
    g = _check(x, weight, bias, stride, padding, dilation, groups)
    b = x._backend
    xd = x._data if g.batched else b.reshape(x._data, (1,) + tuple(x.shape))
    bd = None if bias is None else bias._data
    fast = b.fast("conv2d")
    y = fast(kernel_layout(b, xd), kernel_layout(b, weight._data), None if bd is None else b.contiguous(bd),
             g.stride, g.pads, g.dil, g.groups) if fast is not None else None
    if y is None:       # no fast path, or it declined this case
        y = _forward_composite(b, xd, weight._data, bd, g)
    if not g.batched:
        y = b.reshape(y, y.shape[1:])
    out = _wrap(y, x.dtype, x._device)
    if autograd.needs_grad(x, weight, bias):
        node = ConvolutionBackward0() if g.batched else _UNBATCHED()
        node.geom = g
        node.saved = (x, weight)
        record(node, (x, weight, bias), out)
    return out


def _one(v, name):
    """A 1-D conv/pool argument as an int (an int or a 1-tuple, as PyTorch accepts)."""
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise RuntimeError(f"conv1d: expected {name} to be a single integer value or a list of 1 "
                               f"values to match the convolution dimensions, but got {name}={list(v)}")
        return v[0]
    return v


@policy("conv1d")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv1d: input (N, C_in, L) or (C_in, L), weight (C_out, C_in/groups,
    k): conv2d over a height-1 image. Error messages start with 'conv2d: '."""
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"conv1d(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if weight.ndim != 3 or input.ndim not in (2, 3):
        raise RuntimeError(f"conv1d: expected a 3-D weight and a 2-D or 3-D input, got input of "
                           f"shape {list(input.shape)} and weight of shape {list(weight.shape)}")
    pad = padding if isinstance(padding, str) else (0, _one(padding, "padding"))
    y = conv2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, _one(stride, "stride")), pad,
               (1, _one(dilation, "dilation")), groups)
    # torch's conv1d is one convolution node; unbatched, it ends in the squeeze of its batch dim
    return rename(y.squeeze(-2), "ConvolutionBackward0" if input.ndim == 3 else "SqueezeBackward1",
                  input, weight, bias)
