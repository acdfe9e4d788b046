"""dtype and device conversion (`to`, `float()`, `cuda()`...), clone and contiguous."""
from __future__ import annotations

from .. import dtypes as dt
from ..autograd import Node, grad_mode, node_class, record, rename
from ..backends import as_device, backend_for, device as Device
from ..memory_format import contiguous_format, dims_in_memory_order, preserve_format
from ..tensor import Tensor, _wrap
from ._common import check_tensor
from .creation import laid_out_buffer, order_like
from .indexing.index_bounds import remember_host_values


class ToCopyBackward0(Node):
    def backward(self, g):
        return _convert(g, self.dtype, self.device, copy=False)


def _convert(x, dtype, dev, copy):
    same_dtype, same_dev = dtype is x.dtype, dev == x._device
    if same_dtype and same_dev and not copy:
        return x
    data = x._data
    if not same_dev:
        arr = x._host(f"Tensor.to({str(dev)!r})")
        data = backend_for(dev).from_numpy(arr, dtype, dev.index)
    elif not same_dtype:
        data = x._backend.cast(data, dtype)
    else:
        b = x._backend
        data = b.copy_(b.empty(tuple(x.shape), dtype, dev.index), data)
    if not (x._data.flags.c_contiguous and 1 not in x.shape):
        data = _in_layout_of(x, data, dtype, dev)
    out = _wrap(data, dtype, dev)
    if not same_dev and not dtype.is_floating_point:
        remember_host_values(out, arr)          # integers: index bounds known without a host read
    if x._requires_grad and grad_mode._enabled and dtype.is_floating_point:
        node = ToCopyBackward0()
        node.dtype, node.device = x.dtype, x._device
        record(node, (x,), out)
    return out


def _in_layout_of(x, data, dtype, dev):
    """data (x's values converted) laid out as x is: torch's preserve_format, which keeps a
    channels-last or transposed tensor's strides through .to(dtype), .cuda() and copies."""
    if [s // data.itemsize for s in data.strides] == list(x.stride()):
        return data                     # (a cast keeps the layout: the common case, no allocation)
    b = backend_for(dev)
    order, fmt, strides = order_like(x, preserve_format, "to")
    want = laid_out_buffer(b, lambda s: b.empty(s, dtype, dev.index), tuple(x.shape), order, fmt, strides)
    return data if want.strides == data.strides else b.copy_(want, data)


class ToCopyManyBackward(Node):
    """cast_many's casts as one node: the gradients that arrive are cast back in one call."""

    def backward(self, *grads):
        present = [g for g in grads if g is not None]
        if not grad_mode._enabled and len(present) > 1:
            fast = present[0]._backend.fast("cast_many")
            back = fast([g._data for g in present], self.dtype) if fast is not None and all(
                g.dtype is present[0].dtype for g in present) else None
            if back is not None:
                back = iter(back)
                return tuple([_wrap(next(back), self.dtype, g._device) if g is not None else None
                              for g in grads])
        return tuple([_convert(g, self.dtype, g._device, copy=False) if g is not None else None
                      for g in grads])


def cast_many(xs, dtype):
    """[x.to(dtype) for x in xs] for distinct floating tensors of one dtype on one device, as one
    op (autocast's casts of an op's inputs): one launch where the backend has one, and one
    autograd node whose backward casts the gradients back in one launch."""
    fast = xs[0]._backend.fast("cast_many") if len(xs) > 1 else None
    datas = fast([x._data for x in xs], dtype) if fast is not None else None
    if datas is None:
        return [_convert(x, dtype, x._device, copy=False) for x in xs]
    outs = [_wrap(d, dtype, x._device) for d, x in zip(datas, xs)]
    needing = [i for i, x in enumerate(xs) if x._requires_grad] if grad_mode._enabled else []
    if needing:     # (torch casts each alone: every output's node is a ToCopyBackward0)
        node = node_class(ToCopyManyBackward, "ToCopyBackward0")()
        node.dtype, node.n_outputs = xs[0].dtype, len(xs)
        record(node, xs, outs[needing[0]])
        for i in needing:
            outs[i].grad_fn, outs[i]._output_nr, outs[i]._requires_grad = node, i, True
    return outs


def to(x, *args, dtype=None, device=None, non_blocking=False, copy=False,
       memory_format=preserve_format):
    """x.to(dtype), x.to(device), x.to(device, dtype), x.to(other), and keyword forms;
    memory_format lays the result out in that order (channels_last, contiguous_format)."""
    check_tensor(x, "to")
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (str, Device)):
            device = a
        elif a is not None:
            dtype = a
    try:
        dtype = dt.get_dtype(dtype) if dtype is not None else x.dtype
        dev = as_device(device) if device is not None else x._device
    except (TypeError, RuntimeError) as e:
        raise type(e)(f"to(): {e}") from None
    if memory_format is not preserve_format:
        dims_in_memory_order(memory_format, x.ndim, "to")      # refuse a bad format before converting
        out = contiguous(_convert(x, dtype, dev, copy), memory_format)
        return rename(out, "ToCopyBackward0", x)     # (torch's copies in that layout at once)
    return _convert(x, dtype, dev, copy)


def _typed(dtype):
    def f(x):
        return to(x, dtype)
    f.__name__ = dtype.name
    return f


float_, double, half, bfloat16 = _typed(dt.float32), _typed(dt.float64), _typed(dt.float16), _typed(dt.bfloat16)
long, int_, short, bool_, byte = _typed(dt.int64), _typed(dt.int32), _typed(dt.int16), _typed(dt.bool_), _typed(dt.uint8)


# legacy tensor type names, as x.type() returns them ('paragrad.FloatTensor')
_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
               "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
               "bool": "Bool"}
_BY_TYPE_NAME = {v + "Tensor": k for k, v in _TYPE_NAMES.items()}


def type_(x, dtype=None, non_blocking=False):
    """x.type() names the tensor type ('paragrad.FloatTensor', 'paragrad.cuda.FloatTensor');
    x.type(dtype) converts, also from such a name."""
    if dtype is None:
        where = "" if x.device.type == "cpu" else x.device.type + "."
        return f"paragrad.{where}{_TYPE_NAMES[x.dtype.name]}Tensor"
    if isinstance(dtype, str) and dtype.rsplit(".", 1)[-1] in _BY_TYPE_NAME:
        parts = dtype.split(".")
        device = "cuda" if "cuda" in parts[:-1] else "cpu"
        return to(x, dtype=_BY_TYPE_NAME[parts[-1]], device=device)
    return to(x, dtype)


def cpu(x):
    return to(x, "cpu")


def cuda(x, device=None):
    return to(x, device if device is not None and not isinstance(device, int) else
              f"cuda:{device or 0}")


class PinMemoryBackward0(Node):
    def backward(self, g):
        return g


def _cuda_usable():
    from ..backends import is_available        # (pg.cuda.is_available's answer)
    return is_available("cuda")[0]


def pin_memory(x, device=None):
    """x's values in page-locked host memory, which the GPU reads by DMA, so that
    `.to("cuda", non_blocking=True)` of it needn't stage through a buffer of its own (x itself
    where it is pinned already), as torch.Tensor.pin_memory. A CPU tensor only, and a CUDA
    device must be there (torch's errors otherwise)."""
    check_tensor(x, "pin_memory")
    if x._device.type != "cpu":
        raise RuntimeError(f"cannot pin '{x.type()}' only dense CPU tensors can be pinned")
    if not _cuda_usable():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if is_pinned(x):
        return x
    from ..cuda.pinned import pinned_copy
    out = _wrap(pinned_copy(x._data), x.dtype, x._device)
    if x._requires_grad and grad_mode._enabled:
        record(PinMemoryBackward0(), (x,), out)
    return out


def is_pinned(x, device=None):
    """Whether x lies in page-locked host memory (False for a GPU tensor, and wherever no CUDA
    device is), as torch.Tensor.is_pinned."""
    check_tensor(x, "is_pinned")
    if x._device.type != "cpu":
        return False
    if not _cuda_usable():
        return False
    from ..cuda.pinned import is_pinned as pinned
    return pinned(x._data)


class CloneBackward0(Node):
    def backward(self, g):
        return g


def clone(input, memory_format=preserve_format):
    """A copy of input laid out as memory_format says; preserve_format (the default) keeps
    input's strides where its elements lie densely in some order (a transposed or
    channels-last tensor's copy is too), else channels-last where input's strides rank its
    channels fastest, else row-major: torch's rule, the one `empty_like` follows."""
    x = input
    check_tensor(x, "clone")
    b = x._backend
    if memory_format is preserve_format and x._data.flags.c_contiguous and 1 not in x.shape:
        data = b.empty(tuple(x.shape), x.dtype, x._device.index)      # the usual case, at once
    else:
        order, fmt, strides = order_like(x, memory_format, "clone")
        data = laid_out_buffer(b, lambda s: b.empty(s, x.dtype, x._device.index), tuple(x.shape),
                               order, fmt, strides)
    out = _wrap(b.copy_(data, x._data), x.dtype, x._device)
    if x._requires_grad and grad_mode._enabled:
        record(CloneBackward0(), (x,), out)
    return out


def contiguous(x, memory_format=contiguous_format):
    """x if its elements already lie densely in memory_format's order, else a copy laid out so."""
    if x.is_contiguous(memory_format):
        return x
    if memory_format is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return clone(x, memory_format)
