"""Whole-step capture: `step = pg.jit(train_step)` runs a training step as one CUDA graph.

Per signature of the arguments (each tensor's shape, dtype, device and requires_grad; every
other argument's value):
  call 1  runs fn eagerly (allocations, kernel compiles, GEMM plans, optimizer state);
  call 2  records fn into a CUDA graph on a side stream, with the tensor arguments copied into
          static buffers that the graph reads, and runs the graph once;
  later   replay the graph, which starts by copying the tensor arguments into those buffers.
A new signature goes through the same two calls and gets its own graph. Calls whose tensors
are all on the CPU run fn eagerly: there is nothing to capture.

What a captured function may do: anything that only launches device work — forward, backward,
optimizer steps (their learning rates and step counts live on the device), gradient clipping,
random draws (their generator state lives on the device, so each replay draws anew), in-place
updates of tensors it closes over (parameters, BatchNorm statistics). What it may not do: read
a device value on the host (`.item()`, `bool(t)`, printing, data-dependent shapes such as
`nonzero`): that raises paragrad.capture.CaptureSyncError naming the op. Host-side Python runs
only at capture: its side effects (counters, appends, LR scheduler steps, which raise) are not
repeated by a replay.

The outputs of a replayed call are the same tensor objects each time, overwritten by the next
call: copy (`.clone()`) what you want to keep. The tensors the function reads without taking
them as arguments (model parameters, a dataset on the device) must stay alive and in place
(in-place updates are fine; rebinding `model.weight = new` is not seen by the graph).
"""
from __future__ import annotations

import functools

from . import capture
from .memory_format import laid_out, memory_order
from .tensor import Tensor, _wrap


class jit:
    """step = paragrad.jit(fn): fn runs eagerly on its first call per signature, is captured
    into a CUDA graph on the second and replayed from then on (the module docstring says what
    fn may do inside; calls whose tensors are all on the CPU run eagerly). One graph per
    signature; a signature past max_graphs raises (pass changing values as tensors, not as
    Python numbers). graph_nodes() counts the latest graph's nodes; reset() drops them all."""

    def __init__(self, fn, max_graphs=16):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.max_graphs = max_graphs
        self._entries = {}      # signature -> _Entry
        self._last = None       # the entry of the latest call

    def __call__(self, *args, **kwargs):
        tensors = []
        signature = _signature((args, kwargs), tensors)
        device = _graph_device(tensors)
        if device is None:
            return self.fn(*args, **kwargs)
        if any(t.device != device for t in tensors):
            raise RuntimeError(
                f"pg.jit({self.__name__}): tensor arguments on {device} and "
                f"{next(t.device for t in tensors if t.device != device)}; a graph reads its inputs "
                f"on its own device (a CPU tensor would be captured as a constant), so move them all there")
        entry = self._entries.get(signature)
        if entry is None:
            if len(self._entries) >= self.max_graphs:
                raise RuntimeError(
                    f"pg.jit({self.__name__}): {len(self._entries) + 1} different argument "
                    f"signatures, more than max_graphs={self.max_graphs}; each one captures a graph "
                    f"of its own. Pass changing values as tensors (static shapes), not as Python "
                    f"numbers. This call: {_describe(signature)}")
            entry = _Entry(device)
            if entry.graph is None:         # a backend without graphs: nothing to capture
                return self.fn(*args, **kwargs)
            self._entries[signature] = entry
        self._last = entry
        return entry.call(self.fn, self.__name__, args, kwargs, tensors)

    def graph_nodes(self):
        """The number of nodes (kernels, copies, memsets) of the latest call's CUDA graph."""
        if self._last is None or self._last.calls < 2:
            raise RuntimeError(f"pg.jit({self.__name__}): no graph captured yet (a graph is "
                               f"recorded by the second call with CUDA tensors of one signature)")
        return self._last.graph.num_nodes()

    def reset(self):
        """Drop every captured graph (and the memory they hold); the next call warms up again."""
        self._entries.clear()
        self._last = None


class _Entry:
    def __init__(self, device):
        from .backends import backend_for
        self.graph = backend_for(device).step_graph(device.index)
        self.calls = 0
        self.statics = None
        self.out = None

    def call(self, fn, name, args, kwargs, tensors):
        self.calls += 1
        if self.calls == 1:
            return self.graph.warmup(lambda: fn(*args, **kwargs))
        capture.sync_device_state()     # learning rates changed on the host since the last call
        if self.calls == 2:
            self.statics = [_static_copy(t) for t in tensors]
            s_args, s_kwargs = _replace((args, kwargs), iter(self.statics))
            inputs = [(s._data, t._data) for s, t in zip(self.statics, tensors)]
            try:
                self.out = self.graph.capture(lambda: fn(*s_args, **s_kwargs), name, inputs)
            except BaseException:
                self.calls = 1          # the next call tries the capture again
                raise
            return self.out
        self.graph.replay([t._data for t in tensors])
        return self.out


def _graph_device(tensors):
    """The device whose graph would run this call: the first non-CPU tensor's, else None."""
    return next((t.device for t in tensors if t.device.type != "cpu"), None)


def _static_copy(t):
    """The graph's input buffer for argument t, laid out as t is when t is dense in some order
    of its dims (a channels-last batch stays channels-last, so the captured ops see the layout
    the eager call saw), else row-major."""
    b = t._backend
    order = memory_order(t.shape, t.stride())
    buf = b.copy_(laid_out(lambda s: b.empty(s, t.dtype, t.device.index), t.shape, order), t._data)
    s = _wrap(buf, t.dtype, t.device)
    s._requires_grad = t._requires_grad
    return s


def _signature(obj, tensors):
    """A hashable key for the arguments, collecting their tensors (in order) into `tensors`."""
    if isinstance(obj, Tensor):
        tensors.append(obj)
        return ("tensor", tuple(obj.shape), obj.dtype.name, str(obj.device), obj.requires_grad)
    if isinstance(obj, (tuple, list)):
        return (type(obj).__name__,) + tuple(_signature(o, tensors) for o in obj)
    if isinstance(obj, dict):
        return ("dict",) + tuple((k, _signature(v, tensors)) for k, v in sorted(obj.items()))
    try:
        hash(obj)
    except TypeError:
        raise TypeError(f"pg.jit: an argument of type {type(obj).__name__} is neither a Tensor, a "
                        f"tuple/list/dict of them, nor hashable: it can't key a captured graph") from None
    return ("value", type(obj).__name__, obj)


def _replace(obj, statics):
    """obj with its tensors replaced, in order, by the static buffers."""
    if isinstance(obj, Tensor):
        return next(statics)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_replace(o, statics) for o in obj)
    if isinstance(obj, dict):
        return {k: _replace(obj[k], statics) for k in sorted(obj)}
    return obj


def _describe(signature):
    return repr(signature)[:300]
