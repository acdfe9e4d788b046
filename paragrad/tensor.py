"""Tensor: a backend buffer with a dtype and a device, plus the autograd fields.

This file holds the state and the methods that are not ops (inspection, conversion to Python
and NumPy, autograd entry points). The differentiable ops live in `ops/` and are attached as
methods by the table in `ops/methods.py`, so `x.exp()`, `x + y` and `x[0]` are defined there.
"""
from __future__ import annotations

import numpy as np

from . import autograd, capture
from . import dtypes as dt
from .backends import CPU, backend_for
from .memory_format import (channels_last, channels_last_3d, contiguous_format, empty_strides,
                            is_dense_in, preserve_format)


class Size(tuple):
    """torch.Size: a tuple of ints with numel(); slicing, + and * give Sizes again."""

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if type(i) is slice else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"paragrad.Size({list(self)})"


class Tensor:
    """A multi-dimensional array on a device (`cpu`, `cuda`) with a dtype, and autograd's fields
    (`requires_grad`, `grad`, `grad_fn`), as torch.Tensor. Make one with `paragrad.tensor(data)`
    or a factory (`zeros`, `randn`, ...); its methods are the functions of the `paragrad`
    namespace with the tensor first (`x.exp()` is `paragrad.exp(x)`), their in-place forms
    (`x.add_(y)`), the operators, indexing and views, as torch's.

    (For contributors: the methods defined in this class are the ones autograd and the backends
    need; every op method, and the legacy constructor `Tensor(data)`, is attached from the table
    in ops/methods.py, so this module imports nothing from ops/.)"""
    __slots__ = ("_data", "_backend", "_device", "dtype", "_requires_grad", "_grad", "grad_fn",
                 "_output_nr", "_acc", "_hooks", "_post_acc_hooks", "__weakref__", "__dict__", "_vc")

    # ---- basic properties -----------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def device(self):
        return self._device

    @property
    def is_cuda(self):
        return self._device.type == "cuda"

    @property
    def is_xpu(self):
        """False: paragrad has no Intel GPU backend (scripts test it beside is_cuda)."""
        return self._device.type == "xpu"

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    @property
    def grad(self):
        """The accumulated gradient (leaves, and non-leaves that called retain_grad)."""
        return self._grad

    @grad.setter
    def grad(self, value):
        # PyTorch's checks: a wrong .grad would only fail later, far from its cause
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"grad: assigned grad expected to be a Tensor or None but got "
                                f"grad of type {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(f"grad: attempting to assign a gradient of size "
                                   f"{list(value.shape)} to a tensor of size {list(self.shape)}. "
                                   f"Please ensure that the gradient and the tensor are the same size")
            if value.dtype is not self.dtype:
                raise RuntimeError(f"grad: attempting to assign a gradient with dtype "
                                   f"{value.dtype} to a tensor with dtype {self.dtype}")
            if value._device != self._device:
                raise RuntimeError(f"grad: attempting to assign a gradient on device "
                                   f"{value._device} to a tensor on device {self._device}")
        self._grad = value

    @property
    def data(self):
        """A detached alias of this tensor (shares its buffer); assigning replaces the buffer."""
        return self.detach()

    @data.setter
    def data(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"data: expected a Tensor, got {type(other).__name__}")
        self._data, self.dtype = other._data, other.dtype
        self._device, self._backend = other._device, other._backend
        self._vc = other._vc        # same buffer, same version counter

    @property
    def is_floating_point_dtype(self):
        return self.dtype.is_floating_point

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_dim(dim, self.ndim, "size")]

    def dim(self):
        return self._data.ndim

    def numel(self):
        return int(self._data.size)

    nelement = numel

    def element_size(self):
        return self.dtype.itemsize

    def stride(self, dim=None):
        """Strides in elements (as PyTorch)."""
        st = tuple(s // self.dtype.itemsize for s in self._data.strides)
        if not any(st) and self._data.size == 0 and self.ndim:
            # NumPy gives every array without elements zero strides; torch, an op's row-major ones
            st = tuple(empty_strides(self.shape, range(self.ndim), contiguous_format))
        return st if dim is None else st[_dim(dim, self.ndim, "stride")]

    def is_contiguous(self, memory_format=contiguous_format):
        """Whether the elements lie densely in memory_format's order (row-major by default;
        channels_last: (N, H, W, C) for a 4-D tensor, torch's rule)."""
        if memory_format is contiguous_format or memory_format is preserve_format:     # (torch's)
            return bool(self._data.flags.c_contiguous)
        if memory_format not in (channels_last, channels_last_3d):
            raise RuntimeError(f"is_contiguous(): unsupported memory format {memory_format!r}")
        order = (0, 2, 3, 1) if memory_format is channels_last else (0, 2, 3, 4, 1)
        return self.ndim == len(order) and is_dense_in(self.shape, self.stride(), order)

    # ---- to Python / NumPy ----------------------------------------------------------------
    def numpy(self, force=False):
        if self._requires_grad and not force:
            raise RuntimeError("numpy(): can't call numpy() on a Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if self._device.type != "cpu" and not force:
            raise TypeError(f"numpy(): can't convert {self._device} tensor to numpy. "
                            f"Use Tensor.cpu() to copy the tensor to host memory first.")
        return self._host("Tensor.numpy()")

    def _host(self, op):
        """The values as a NumPy array; `op` names the caller in the error pg.jit raises."""
        if self._device.type != "cpu":
            capture.forbid_sync(op)
        return self._backend.to_numpy(self._data)

    def __array__(self, dtype=None, copy=None):
        a = self._host("numpy.asarray(Tensor)")
        return a.astype(dtype) if dtype is not None else a


    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"item(): a Tensor with {self.numel()} elements cannot be "
                               f"converted to Scalar")
        return self._host("Tensor.item()").reshape(()).item()

    def tolist(self):
        return self._host("Tensor.tolist()").tolist()

    def __format__(self, spec):
        """A 0-d tensor formats as its value (f"{loss:.4f}"), as torch's; others as str()."""
        if self.ndim == 0:
            return self._scalar("format(Tensor)").__format__(spec)
        return object.__format__(self, spec)

    def __float__(self):
        return float(self._scalar("float(Tensor)"))

    def __int__(self):
        return int(self._scalar("int(Tensor)"))

    def _scalar(self, op):
        data = self._data
        if data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if self._device is CPU:     # (the buffer is the NumPy array: no host copy to make)
            return data.item()
        return self._host(op).reshape(()).item()

    def __index__(self):
        if self.dtype.is_floating_point or self.dtype is dt.bool_:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._scalar("using a Tensor as an index"))

    def __bool__(self):
        if self.numel() != 1:
            which = "no values" if self.numel() == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {which} is ambiguous")
        return bool(self._scalar("bool(Tensor) (Python control flow on a device value)"))

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __hash__(self):
        return id(self)

    # ---- copy / pickle --------------------------------------------------------------------
    def __deepcopy__(self, memo):
        """A copy of a leaf with its own buffer, requires_grad, .grad and attributes (as
        PyTorch); the backend object and the graph are never copied."""
        if self.grad_fn is not None:
            raise RuntimeError("deepcopy: only Tensors created explicitly by the user (graph "
                               "leaves) support the deepcopy protocol; detach() it first")
        import copy
        new = type(self).__new__(type(self))
        b = self._backend
        _init(new, b.copy_(b.empty(self._data.shape, self.dtype, self._device.index), self._data),
              self.dtype, self._device)
        new._requires_grad = self._requires_grad
        memo[id(self)] = new
        if self._grad is not None:
            new._grad = copy.deepcopy(self._grad, memo)
        if self.__dict__:
            new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def __reduce_ex__(self, protocol):
        # by value, through NumPy: the backend object and the graph stay out of the pickle
        arr = self._host("pickling a Tensor")
        return (_rebuild, (type(self), arr, self.dtype.name, str(self._device),
                           self._requires_grad, self.__dict__ or None))

    def __repr__(self):
        from .repr import tensor_repr
        return tensor_repr(self)

    # ---- autograd -------------------------------------------------------------------------
    def requires_grad_(self, requires_grad=True):
        requires_grad = bool(requires_grad)
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError("requires_grad_: you can only change requires_grad flags of leaf "
                                   "variables. If you want to use a computed variable in a subgraph "
                                   "that doesn't require differentiation use var_no_grad = var.detach().")
            return self
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError(f"requires_grad_: only Tensors of floating point dtype can require "
                               f"gradients, got {self.dtype}")
        self._requires_grad = requires_grad
        return self

    def detach(self):
        """A new tensor sharing this one's buffer (and version counter), outside the graph."""
        return view_of(_wrap(self._data, self.dtype, self._device), self)

    def _with_data(self, data):
        """A new tensor of this dtype and device around the backend buffer `data` (for the
        autograd engine, which builds tensors without importing this module)."""
        return _wrap(data, self.dtype, self._device)

    @property
    def _version(self):
        """How many in-place writes this tensor's buffer has seen (shared by its views), as
        PyTorch's: backward refuses saved tensors whose version moved since they were saved."""
        return self._vc[0]

    def detach_(self):
        if self.grad_fn is not None and getattr(self, "_is_view_of_graph", False):
            raise RuntimeError("detach_: can't detach views in-place")
        self.grad_fn, self._requires_grad = None, False
        return self

    def retain_grad(self):
        if not self._requires_grad:
            raise RuntimeError("retain_grad: can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None:
            return   # leaves keep their grad anyway
        import weakref
        node = self.grad_fn
        if node.retained is None:
            node.retained = {}
        node.retained[self._output_nr] = weakref.ref(self)

    @property
    def retains_grad(self):
        node = self.grad_fn
        return bool(node is not None and node.retained and self._output_nr in node.retained)

    def register_hook(self, hook):
        """Call hook(grad) when this tensor's gradient is computed; a returned tensor replaces
        the gradient. Returns a handle with .remove()."""
        if not self._requires_grad:
            raise RuntimeError("register_hook: cannot register a hook on a tensor that doesn't "
                               "require gradient")
        if self.grad_fn is None:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            node = self.grad_fn
            if node.out_hooks is None:
                node.out_hooks = {}
            hooks = node.out_hooks.setdefault(self._output_nr, [])
        hooks.append(hook)
        return _HookHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call hook(self) after backward has accumulated a gradient into this leaf's .grad
        (torch's): the hook reads or updates .grad in place and returns None. DistributedDataParallel
        uses it to start averaging a parameter's gradient as soon as it is final. Returns a
        handle with .remove()."""
        if not self._requires_grad:
            raise RuntimeError("register_post_accumulate_grad_hook: cannot register a hook on a "
                               "tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("register_post_accumulate_grad_hook: post accumulate grad hooks "
                               "cannot be registered on non-leaf tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = []
        self._post_acc_hooks.append(hook)
        return _HookHandle(self._post_acc_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) * gradient into every leaf's .grad (PyTorch semantics)."""
        root = self._root_grad(gradient, "backward")
        if retain_graph is None:
            retain_graph = create_graph
        autograd.run_backward([(self, root)], retain_graph, create_graph=create_graph,
                              inputs=inputs)

    def _root_grad(self, gradient, op):
        if not self._requires_grad:
            raise RuntimeError(f"{op}: element 0 of tensors does not require grad and does not "
                               f"have a grad_fn")
        if gradient is None:
            if self.numel() != 1:
                raise RuntimeError(f"{op}: grad can be implicitly created only for scalar outputs "
                                   f"(got shape {tuple(self.shape)})")
            return _wrap(self._backend.full(self._data.shape, 1, self.dtype, self._device.index),
                         self.dtype, self._device)
        if not isinstance(gradient, Tensor):      # a number or nested list, read as this tensor's dtype
            array = np.asarray(gradient, dtype=self.dtype.to_numpy())
            gradient = _wrap(self._backend.from_numpy(array, self.dtype, self._device.index),
                             self.dtype, self._device)
        if gradient.shape != self.shape:
            raise RuntimeError(f"{op}: Mismatch in shape: grad_output[0] has a shape of "
                               f"{tuple(gradient.shape)} and output[0] has a shape of {tuple(self.shape)}")
        return gradient

    @classmethod
    def zeros_for_grad(cls, shape, dtype, device):
        b = backend_for(device)
        return _wrap(b.full(tuple(shape), 0, dtype, device.index), dtype, device)


class _HookHandle:
    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _rebuild(cls, arr, dtype_name, device, requires_grad, attrs):
    """Unpickle a tensor (see Tensor.__reduce_ex__)."""
    from .backends import as_device
    dtype, dev = dt.get_dtype(dtype_name), as_device(device)
    t = cls.__new__(cls)
    _init(t, backend_for(dev).from_numpy(arr, dtype, dev.index), dtype, dev)
    t._requires_grad = requires_grad
    if attrs:
        t.__dict__.update(attrs)
    return t


_new = object.__new__
_cpu_backend = backend_for(CPU)


def _wrap(data, dtype, device=CPU):
    """The fast constructor every op uses: a Tensor around an existing backend buffer."""
    return _init(_new(Tensor), data, dtype, device)


def _init(t, data, dtype, device):
    """Fill a new Tensor's fields (also used by Tensor/Parameter constructors)."""
    t._data = data
    t.dtype = dtype
    t._device = device
    t._backend = _cpu_backend if device is CPU else backend_for(device)
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._output_nr = 0
    t._acc = None
    t._hooks = None
    t._post_acc_hooks = None
    t._vc = [0]
    return t


def _wrap_views(bufs, src):
    """Tensors around views of src's buffer (unbind's pieces): src's dtype, device and version
    counter; _init's fields written in one loop, no call per piece."""
    dtype, device, backend, vc = src.dtype, src._device, src._backend, src._vc
    out = []
    for data in bufs:
        t = _new(Tensor)
        t._data, t.dtype, t._device, t._backend, t._vc = data, dtype, device, backend, vc
        t._requires_grad, t._grad, t.grad_fn, t._output_nr = False, None, None, 0
        t._acc = t._hooks = t._post_acc_hooks = None
        out.append(t)
    return out


def view_of(out, src):
    """Mark `out` as sharing src's buffer: one version counter for both."""
    out._vc = src._vc
    return out


def bump_version(t):
    """Record an in-place write into t's buffer (seen by every view of it)."""
    t._vc[0] += 1


def rebind(t, out):
    """An in-place op inside a recorded graph: t takes the result's new buffer and grad_fn.
    Its old buffer (and what nodes saved of it) stays untouched, so it gets a counter of its
    own; views taken of t before keep the old values (a documented difference)."""
    t._data, t.grad_fn, t._output_nr, t._requires_grad = out._data, out.grad_fn, 0, out._requires_grad
    t._vc = [t._vc[0] + 1]
    return t


def zero_grads(tensors, set_to_none=True):
    """Module.zero_grad and Optimizer.zero_grad: drop each .grad, or zero it in place."""
    for p in tensors:
        if p.grad is not None:
            if set_to_none:
                p.grad = None
            else:
                p.grad = p.grad.detach()
                p.grad.zero_()


def _dim(d, ndim, op):
    """Normalize a possibly negative dim, with PyTorch's error for out-of-range values."""
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {d})")
    return d + n if d < 0 else d

