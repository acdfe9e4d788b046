"""F's convolutions (PyTorch's torch.nn.functional conv forms): conv1d / conv2d (the ops), the
transposed convolutions and unfold / fold (im2col / col2im), the latter composed from
differentiable paragrad ops so every backend runs them and autograd gives the gradients:

- conv_transpose2d is the adjoint of conv2d: the input is upsampled by zero insertion (stride),
  padded by dilation*(k-1) - padding on each side (negative amounts crop; output_padding adds
  rows/columns at the bottom/right), then convolved at stride 1 with the spatially flipped
  kernel whose in/out channel axes are swapped per group. Routing through conv2d keeps its
  fast (cuDNN) path on CUDA. A backend with the conv_transpose2d fast path (the CPU) computes
  it as conv2d's input gradient instead, without the inserted zeros (at stride 2 they are
  three quarters of the composition's products); its backward is a conv2d and conv2d's weight
  gradient, and under create_graph the composition's, recomputed.
- unfold gathers one strided slice view per kernel tap; fold is its adjoint: each tap's block
  is zero-inserted by the stride, padded into place and summed."""
from __future__ import annotations

from ... import autograd
from ...autograd import Node, enable_grad, node_class, record, rename
from ...ops import conv2d, pad, stack
from ...ops._common import as_int, kernel_layout
from ...ops.neural.conv import conv1d
from ...ops.movement.views import slice_op
from ...tensor import Tensor, _wrap
from ...ops.autocast_policy import policy
from ...ops.neural.pool import keeps_channels_last


def _tuple(v, n, name, op):
    """An int or an n-sequence of ints as an n-tuple (PyTorch's message otherwise)."""
    if as_int(v) is not None:
        return (as_int(v),) * n
    if isinstance(v, (tuple, list)) and len(v) == n and all(as_int(e) is not None for e in v):
        return tuple(as_int(e) for e in v)
    raise RuntimeError(f"{op}: expected {name} to be a single integer value or a list of {n} values "
                       f"to match the convolution dimensions, but got {name}={v!r}")


def _check_tensor(t, name, op):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")


def _zero_insert(x, s, dim):
    """Put s-1 zeros after every element along `dim` (a negative dim), dropping the trailing
    ones: size n -> (n-1)*s + 1. (.., n, ..) -> (.., n, s, ..) by padding a new axis, then merge."""
    if s == 1:
        return x
    x = x.unsqueeze(dim)                                    # the new axis sits right after `dim`
    widths = [0, 0] * (-dim - 1) + [0, s - 1]               # F.pad order: last dim first
    x = pad(x, widths)
    shape = list(x.shape)
    d = x.ndim + dim - 1                                    # index of the original axis
    x = x.reshape(*shape[:d], shape[d] * s, *shape[d + 2:])
    widths = [0, 0] * (-dim - 1) + [0, 1 - s]
    return pad(x, widths)


@policy("conv_transpose2d")
@keeps_channels_last          # (its zero-inserted conv2d input is row-major; torch keeps the layout)
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """torch.nn.functional.conv_transpose2d: input (N, C_in, H, W) or unbatched (C_in, H, W),
    weight (C_in, C_out/groups, kH, kW), bias (C_out,) or None. Output size per spatial dim:
    (H - 1)*stride - 2*padding + dilation*(kH - 1) + output_padding + 1. Error messages start
    with 'conv_transpose2d: '."""
    op = "conv_transpose2d"
    _check_tensor(input, "input", op)
    _check_tensor(weight, "weight", op)
    if bias is not None:
        _check_tensor(bias, "bias", op)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"{op}: Expected 3D (unbatched) or 4D (batched) input to {op}, but got "
                           f"input of size: {list(input.shape)}")
    if weight.ndim != 4:
        raise RuntimeError(f"{op}: expected a 4-D weight (in_channels, out_channels/groups, kH, kW), "
                           f"but got weight of size {list(weight.shape)}")
    s, p = _tuple(stride, 2, "stride", op), _tuple(padding, 2, "padding", op)
    op_, d = _tuple(output_padding, 2, "output_padding", op), _tuple(dilation, 2, "dilation", op)
    if as_int(groups) is None or groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported (got groups={groups!r})")
    g = as_int(groups)
    if min(s) <= 0:
        raise RuntimeError(f"{op}: non-positive stride is not supported, got stride={list(s)}")
    if min(p) < 0:
        raise RuntimeError(f"{op}: negative padding is not supported, got padding={list(p)}")
    if min(d) <= 0:
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got {list(d)}")
    if min(op_) < 0 or any(o >= max(si, di) for o, si, di in zip(op_, s, d)):
        raise RuntimeError(f"{op}: output padding must be smaller than either stride or dilation, "
                           f"but got output_padding_height: {op_[0]} output_padding_width: {op_[1]} "
                           f"stride_height: {s[0]} stride_width: {s[1]} dilation_height: {d[0]} "
                           f"dilation_width: {d[1]}")
    batched = input.ndim == 4
    x = input if batched else input.unsqueeze(0)
    cin, cog, kh, kw = weight.shape
    if cin % g:
        raise RuntimeError(f"{op}: Given groups={g}, expected weight to be divisible by {g} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")
    if x.shape[1] != cin:
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(input.shape)} to have {cin} channels, but got {x.shape[1]} "
                           f"channels instead")
    cout = cog * g
    if bias is not None and tuple(bias.shape) != (cout,):
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"bias to be 1-dimensional with {cout} elements, but got bias of size "
                           f"{list(bias.shape)} instead")
    h, w = x.shape[2], x.shape[3]
    ho = (h - 1) * s[0] - 2 * p[0] + d[0] * (kh - 1) + op_[0] + 1
    wo = (w - 1) * s[1] - 2 * p[1] + d[1] * (kw - 1) + op_[1] + 1
    if ho <= 0 or wo <= 0:
        raise RuntimeError(f"{op}: Given input size per channel: ({h} x {w}). Calculated output size "
                           f"per channel: ({ho} x {wo}). Output size is too small")
    geom = (s, p, op_, d, g)
    y = _by_input_grad(x, weight, bias, geom, (ho, wo))
    if y is not None:
        return y if batched else y.squeeze(0)
    y = _transposed_composite(x, weight, bias, geom)
    # torch's is one convolution node; unbatched, it ends in the squeeze of its batch dim
    return rename(y if batched else y.squeeze(0), "ConvolutionBackward0" if batched else "SqueezeBackward1",
                  input, weight, bias)


def _transposed_composite(x, weight, bias, geom):
    """conv_transpose2d of a 4-D x by zero insertion and a stride-1 conv2d (module docstring)."""
    s, p, op_, d, g = geom
    cin, cog, kh, kw = weight.shape
    # the equivalent stride-1 convolution's weight: per group swap in/out, flip kH and kW
    wt = weight.reshape(g, cin // g, cog, kh, kw).transpose(1, 2).reshape(cog * g, cin // g, kh, kw)
    wt = wt.flip((2, 3))
    xu = _zero_insert(_zero_insert(x, s[1], -1), s[0], -2)    # (N, C_in, (H-1)*sH+1, (W-1)*sW+1)
    eh, ew = d[0] * (kh - 1) - p[0], d[1] * (kw - 1) - p[1]   # per-side padding (may crop)
    if eh >= 0 and ew >= 0 and op_ == (0, 0):
        return conv2d(xu, wt, bias, 1, (eh, ew), d, g)         # symmetric: conv2d pads itself
    return conv2d(pad(xu, (ew, ew + op_[1], eh, eh + op_[0])), wt, bias, 1, 0, d, g)


def _by_input_grad(x, weight, bias, geom, out_hw):
    """conv_transpose2d of a 4-D x through the backend's conv_transpose2d fast path, or None
    (no fast path; mixed dtypes or devices, which the composition's conv2d refuses by name)."""
    b = x._backend
    fast = b.fast("conv_transpose2d")
    if fast is None or any(t is not None and (t.dtype is not x.dtype or t.device != x.device) for t in (weight, bias)):
        return None
    s, p, _, d, g = geom
    pads = ((p[0], p[0]), (p[1], p[1]))
    y = fast(kernel_layout(b, x._data), kernel_layout(b, weight._data), s, pads, d, g, out_hw)
    if y is None:
        return None
    if bias is not None:
        y = b.binary("add", y, b.reshape(bias._data, (1, -1, 1, 1)), out=y)
    out = _wrap(y, x.dtype, x._device)
    if autograd.needs_grad(x, weight, bias):
        node = _TransposedConvolution()
        node.geom, node.pads, node.saved = geom, pads, (x, weight)
        record(node, (x, weight, bias), out)
    return out


class _TransposedBackward(Node):
    """conv_transpose2d's gradients when the forward took the fast path: dx = conv2d(gy, w)
    and dw = conv2d's weight gradient with x as the output gradient, through the backend's
    conv2d fast paths; under create_graph (or where one declines) the composition's, recomputed
    from the saved input and weight."""

    def backward(self, gy):
        x, w = self.saved
        s, _, _, d, g = self.geom
        need = tuple(e is not None for e in self.next_edges)
        db = gy.sum((0, 2, 3)) if need[2] else None
        wrt = [t for t, n in zip((x, w), need) if n]
        if not wrt:
            return None, None, db
        if not autograd.is_grad_enabled():
            b = gy._backend
            conv, conv_backward = b.fast("conv2d"), b.fast("conv2d_backward")
            gd, wd = kernel_layout(b, gy._data), kernel_layout(b, w._data)
            dx = conv(gd, wd, None, s, self.pads, d, g) if need[0] and conv else None
            r = conv_backward(kernel_layout(b, x._data), gd, wd, s, self.pads, d, g, False, True,
                              False) if need[1] and conv_backward else None
            dw = r[1] if r is not None else None
            if (dx is not None or not need[0]) and (dw is not None or not need[1]):
                wrap = lambda t, like: None if t is None else _wrap(t, like.dtype, like._device)  # noqa: E731
                return wrap(dx, x), wrap(dw, w), db
        with enable_grad():
            y = _transposed_composite(x, w, None, self.geom)
        grads = iter(autograd.grad(y, wrt, gy, create_graph=autograd.is_grad_enabled()))
        return (next(grads) if need[0] else None), (next(grads) if need[1] else None), db


_TransposedConvolution = node_class(_TransposedBackward, "ConvolutionBackward0")


@policy("conv_transpose1d")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """torch.nn.functional.conv_transpose1d: input (N, C_in, L) or (C_in, L), weight (C_in,
    C_out/groups, k): conv_transpose2d over a height-1 image."""
    op = "conv_transpose1d"
    _check_tensor(input, "input", op)
    _check_tensor(weight, "weight", op)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{op}: Expected 2D (unbatched) or 3D (batched) input to {op}, but got "
                           f"input of size: {list(input.shape)}")
    if weight.ndim != 3:
        raise RuntimeError(f"{op}: expected a 3-D weight (in_channels, out_channels/groups, k), but "
                           f"got weight of size {list(weight.shape)}")
    one = [_tuple(v, 1, n, op)[0] for v, n in ((stride, "stride"), (padding, "padding"),
                                               (output_padding, "output_padding"),
                                               (dilation, "dilation"))]
    y = conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, one[0]), (0, one[1]),
                         (0, one[2]), groups, (1, one[3]))
    return rename(y.squeeze(-2), "ConvolutionBackward0" if input.ndim == 3 else "SqueezeBackward1",
                  input, weight, bias)


# ---- unfold / fold ------------------------------------------------------------------------------
def _fold_args(kernel_size, dilation, padding, stride, op):
    k, d = _tuple(kernel_size, 2, "kernel_size", op), _tuple(dilation, 2, "dilation", op)
    p, s = _tuple(padding, 2, "padding", op), _tuple(stride, 2, "stride", op)
    if min(k) <= 0:
        raise RuntimeError(f"{op}: kernel size should be greater than zero, but got kernel_size={k}")
    if min(d) <= 0:
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got dilation={d}")
    if min(p) < 0:
        raise RuntimeError(f"{op}: padding should be non-negative, but got padding={p}")
    if min(s) <= 0:
        raise RuntimeError(f"{op}: stride should be greater than zero, but got stride={s}")
    return k, d, p, s


def _blocks(h, w, k, d, p, s):
    """The number of sliding-block positions along H and W."""
    return ((h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1,
            (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold (im2col): (N, C, H, W) or (C, H, W) -> (N, C*kH*kW, L) or
    (C*kH*kW, L), rows ordered (c, i, j), L = the number of block positions (row-major)."""
    op = "unfold"
    _check_tensor(input, "input", op)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"{op}: Input Error: Only 3D or 4D input Tensors are supported (got "
                           f"{input.ndim}D)")
    k, d, p, s = _fold_args(kernel_size, dilation, padding, stride, op)
    batched = input.ndim == 4
    x = input if batched else input.unsqueeze(0)
    n, c, h, w = x.shape
    ho, wo = _blocks(h, w, k, d, p, s)
    if ho < 1 or wo < 1:
        raise RuntimeError(f"{op}: Given input with spatial size ({h}, {w}), kernel_size={k}, "
                           f"dilation={d}, padding={p}, calculated shape of the array of sliding "
                           f"blocks as ({ho}, {wo}), but its components must be at least one.")
    if p != (0, 0):
        x = pad(x, (p[1], p[1], p[0], p[0]))
    taps = []
    for i in range(k[0]):       # one strided view per kernel tap: the (Ho, Wo) pixels it reads
        for j in range(k[1]):
            h0, w0 = i * d[0], j * d[1]
            taps.append(slice_op(x, (0, 0, h0, w0), (n, c, h0 + (ho - 1) * s[0] + 1,
                                                     w0 + (wo - 1) * s[1] + 1), (1, 1) + s))
    cols = stack(taps, 2).reshape(n, c * k[0] * k[1], ho * wo)   # (N, C, kH*kW, Ho, Wo) merged
    return rename(cols if batched else cols.squeeze(0), "Im2ColBackward0", input)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold (col2im), the adjoint of unfold: (N, C*kH*kW, L) or (C*kH*kW, L)
    -> (N, C, H, W) or (C, H, W), overlapping block values summed."""
    op = "fold"
    _check_tensor(input, "input", op)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{op}: Expected 2D or 3D (batched) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    osz = _tuple(output_size, 2, "output_size", op)
    k, d, p, s = _fold_args(kernel_size, dilation, padding, stride, op)
    batched = input.ndim == 3
    x = input if batched else input.unsqueeze(0)
    n, ck, L = x.shape
    if ck % (k[0] * k[1]):
        raise RuntimeError(f"{op}: Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={ck} and kernel_size={k}")
    ho, wo = _blocks(osz[0], osz[1], k, d, p, s)
    if ho < 1 or wo < 1:
        raise RuntimeError(f"{op}: Given output_size={osz}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, calculated shape of the array of sliding "
                           f"blocks as ({ho}, {wo}), but its components must be at least one.")
    if L != ho * wo:
        raise RuntimeError(f"{op}: Given output_size={osz}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, expected size of input's dimension 2 to match "
                           f"the calculated number of sliding blocks {ho} * {wo} = {ho * wo}, but got "
                           f"input.size(2)={L}.")
    c = ck // (k[0] * k[1])
    hp, wp = osz[0] + 2 * p[0], osz[1] + 2 * p[1]
    cols = x.reshape(n, c, k[0], k[1], ho, wo)
    cols = _zero_insert(_zero_insert(cols, s[1], -1), s[0], -2)  # taps' pixels at stride spacing
    bh, bw = cols.shape[-2], cols.shape[-1]
    total = None
    for i in range(k[0]):       # each tap's block padded into place in the padded image, summed
        for j in range(k[1]):
            h0, w0 = i * d[0], j * d[1]
            t = pad(cols[:, :, i, j], (w0, wp - w0 - bw, h0, hp - h0 - bh))
            total = t if total is None else total + t
    if p != (0, 0):
        total = pad(total, (-p[1], -p[1], -p[0], -p[0]))
    return rename(total if batched else total.squeeze(0), "Col2ImBackward0", input)
