"""dtype and device conversion (`to`, `float()`, `cuda()`...), clone and contiguous."""
from __future__ import annotations

from .. import dtypes as dt
from ..autograd import Node, grad_mode, record
from ..backends import as_device, backend_for, device as Device
from ..tensor import Tensor, _wrap
from ._common import check_tensor
from .indexing.index_bounds import remember_host_values


class ToCopyBackward(Node):
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
    out = _wrap(data, dtype, dev)
    if not same_dev and not dtype.is_floating_point:
        remember_host_values(out, arr)          # integers: index bounds known without a host read
    if x._requires_grad and grad_mode._enabled and dtype.is_floating_point:
        node = ToCopyBackward()
        node.dtype, node.device = x.dtype, x._device
        record(node, (x,), out)
    return out


def to(x, *args, dtype=None, device=None, non_blocking=False, copy=False):
    """x.to(dtype), x.to(device), x.to(device, dtype), x.to(other), and keyword forms."""
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


class CloneBackward(Node):
    def backward(self, g):
        return g


def clone(input, memory_format=None):
    x = input
    check_tensor(x, "clone")
    b = x._backend
    out = _wrap(b.copy_(b.empty(tuple(x.shape), x.dtype, x._device.index), x._data), x.dtype, x._device)
    if x._requires_grad and grad_mode._enabled:
        record(CloneBackward(), (x,), out)
    return out


def contiguous(x, memory_format=None):
    if x.is_contiguous():
        return x
    return clone(x)
