"""Memory formats (torch.memory_format): the order in which a tensor's elements lie in memory.
contiguous_format is row-major over the logical dims (N, C, H, W); channels_last keeps the
shape (N, C, H, W) but lays the elements out as (N, H, W, C), the order convolutions on tensor
cores want; channels_last_3d is the same for 5-D (N, C, D, H, W); preserve_format keeps what a
tensor has. A leaf module: it imports nothing of paragrad's."""
from __future__ import annotations


class memory_format:
    """A memory layout (contiguous_format, channels_last, channels_last_3d, preserve_format), as
    torch.memory_format."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"paragrad.{self.name}"

    def __reduce__(self):                # pickles as the module-level singleton
        return self.name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# the logical dims from slowest to fastest in memory, for the formats tied to a rank
_ORDER = {channels_last: (0, 2, 3, 1), channels_last_3d: (0, 2, 3, 4, 1)}
_RANK = {channels_last: 4, channels_last_3d: 5}


def dims_in_memory_order(fmt, ndim, op):
    """The permutation that lists a tensor's dims in fmt's memory order (slowest first)."""
    if fmt is contiguous_format:
        return tuple(range(ndim))
    if fmt not in _RANK:
        raise TypeError(f"{op}(): memory_format must be a paragrad.memory_format, got {fmt!r}")
    if ndim != _RANK[fmt]:
        raise RuntimeError(f"required rank {_RANK[fmt]} tensor to use {fmt.name} format")
    return _ORDER[fmt]


def is_dense_in(shape, strides, order):
    """Whether elements lie densely in `order` (dims slowest to fastest): torch's rule, where a
    dim of size 1 may have any stride."""
    expected = 1
    for d in reversed(order):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def empty_strides(shape, order, fmt):
    """torch's strides (in elements) for a new tensor with a size-0 dim, laid out in `order`
    (dims slowest first), where NumPy gives all zeros: row-major orders count a size-0 dim
    as 1, so (2, 3, 0, 5) gets (15, 5, 5, 1); the channels-last formats don't, so the same
    shape gets (0, 1, 15, 3)."""
    keep_zero = fmt in (channels_last, channels_last_3d)
    strides, step = [0] * len(shape), 1
    for d in reversed(order):
        strides[d] = step
        step *= shape[d] if keep_zero else max(shape[d], 1)
    return strides


def dense_order(shape, strides):
    """The dims of a buffer from slowest to fastest in memory (strides in elements) when its
    elements lie densely in some order (no gaps, no overlaps), else None."""
    order = sorted(range(len(shape)), key=lambda d: -strides[d])
    return order if is_dense_in(shape, strides, order) else None


def memory_order(shape, strides):
    """dense_order, or row-major order for a buffer that is not dense."""
    return dense_order(shape, strides) or list(range(len(shape)))


def laid_out(make, shape, order):
    """A new buffer of `shape` whose dims lie in memory in `order` (slowest first): make(dense
    shape) builds it row-major in that order, and a permutation gives the logical dims back."""
    buf = make(tuple(shape[d] for d in order))
    return buf if list(order) == sorted(order) else buf.transpose(tuple(order.index(d) for d in range(len(shape))))


def runs_channels_last(buf):
    """Whether a 4-D backend buffer (NumPy or CuPy array) lies densely channels-last, (N, H, W,
    C) in memory, by torch's rule: an activation of a model converted with
    .to(memory_format=channels_last), which NHWC kernels take as it is. A buffer that is both
    row-major and channels-last (one channel, a 1x1 map) is decided by the strides of its
    size-1 dims, as torch decides (`strides_rank_channels_last`)."""
    if buf.ndim != 4 or (buf.flags.c_contiguous and 1 not in buf.shape):
        return False            # (the usual row-major activation, decided at once)
    strides = [s // buf.itemsize for s in buf.strides]
    return is_dense_in(buf.shape, strides, _ORDER[channels_last]) and \
        strides_rank_channels_last(buf.shape, strides)


def strides_rank_channels_last(shape, strides):
    """torch's is_channels_last_strides_2d: the strides grow from C through W and H to N, a
    size-1 dim counting by its own stride, and N as fast as C (an (N, 1, 1, 1) tensor) counts
    as row-major. So (N, 1, H, W) with strides (HW, 1, W, 1) is channels-last and with
    (HW, HW, W, 1) row-major."""
    low = 0
    if strides[1] == 0:
        return False
    for d in (1, 3, 2, 0):
        if shape[d] == 0 or strides[d] < low or (d == 0 and low == strides[1]):
            return False
        low = strides[d] * shape[d] if shape[d] > 1 else strides[d]
    return True


def follow_channels_last(contiguous, y, *refs):
    """y (a 4-D buffer) laid out channels-last when any of refs runs channels-last
    (runs_channels_last), as torch's CPU kernels keep their input's layout; else y as it is.
    contiguous is the backend's row-major copy; a y already channels-last is not copied."""
    if y.ndim != 4 or not any(runs_channels_last(r) for r in refs) or runs_channels_last(y):
        return y
    return contiguous(y.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
