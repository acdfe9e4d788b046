"""A module's forward and backward as captured CUDA graphs, one pair per call signature: what
pg.compile runs on CUDA (torch.compile's mode="reduce-overhead", cudagraph trees).

Per signature (each tensor argument's shape, dtype, device and requires_grad, the other
arguments' values, train/eval, grad mode, autocast, which parameters require grad):
  call 1  runs the module eagerly on the graph's side stream, its backward too (kernel
          compiles, GEMM handles and plans are made there, where the capture will look for them);
  call 2  records the forward into a graph, the arguments copied into static buffers, and runs
          it once; that call's backward records the backward into a second graph that reads the
          first one's memory (the saved activations), and runs it once;
  later   replay the forward graph, and at backward the backward graph.
Outputs are fresh tensors each call (copied out of the graph's static ones), so nothing a
caller keeps is overwritten by a later call. Gradients reach parameters and inputs through one
autograd node per call, and the engine accumulates them as eagerly (hooks, accumulation over
micro-batches, zero_grad(set_to_none)). Dropout draws anew on each replay (the generator state
lives on the device) and in-place parameter updates by any optimizer are seen by the next replay.

A graph reads the buffers the module's parameters and buffers held when it was recorded: where
one was replaced since (`p.data = ...`, `module.to(...)`, a new Parameter or buffer), the
signature's graphs are dropped and recorded anew, as torch's cudagraph trees re-record when a
static input's address changes (a replay would otherwise read memory the module no longer uses).

What capture can't take runs eagerly, for that signature only, with one warning naming why: a
host read or a data-dependent shape inside forward (CaptureSyncError), a tensor that requires
grad reached through a closure instead of an argument or parameter (its gradient would be
lost), unhashable arguments, more than MAX_SIGNATURES signatures. A forward called again while
the previous call's backward is still to come (the graph's activations are in use) runs eagerly.
"""
from __future__ import annotations

import warnings
import weakref

from . import autocast_state, capture
from .autograd import enable_grad, grad as autograd_grad, is_grad_enabled, no_grad
from .autograd.function import Function
from .autograd.graph import AccumulateGrad
from .jit import _graph_device, _replace, _signature, _static_copy
from .tensor import Tensor

MAX_SIGNATURES = 8


class CapturedModule:
    """Calls fn (default: the module itself) through per-signature graphs on CUDA, with the
    module's parameters as the leaves its backward differentiates (module None: no
    parameters); anything else runs fn eagerly."""

    def __init__(self, module, name=None, fn=None):
        self.module, self.fn = module, fn or module
        self.name = name or f"pg.compile({type(module).__name__})"
        self._signatures = {}       # key -> _Signature, or None: this signature runs eagerly
        self._warned = set()

    def __call__(self, *args, **kwargs):
        if capture.active():        # inside pg.jit: the outer capture records the eager call
            return self.fn(*args, **kwargs)
        tensors = []
        try:
            key = _signature((args, kwargs), tensors)
        except TypeError as e:
            return self._eager(None, str(e), args, kwargs)
        device = _graph_device(tensors)
        if device is None or any(t.device != device for t in tensors):
            return self.fn(*args, **kwargs)
        key, params = self._key(key)
        sig = self._signatures.get(key, False)
        if sig is None:
            return self.fn(*args, **kwargs)
        storage = self._storage(params)
        if sig is not False and not sig.reads(storage):
            del self._signatures[key]           # (its graphs read replaced buffers: record anew)
            sig = False
        if sig is False:
            sig, why = self._new_signature(key, device, params, storage)
            if sig is None:
                return self._eager(key, why, args, kwargs)
        try:
            return sig.call(args, kwargs, tensors)
        except _CantCapture as e:
            return self._eager(key, str(e), args, kwargs)

    def _key(self, arguments):
        """-> (the signature key of a call with these arguments' key, the module's parameters)."""
        params = list(self.module.parameters()) if self.module is not None else []
        return (arguments, getattr(self.module, "training", None), is_grad_enabled(), _autocast_key(),
                tuple(p.requires_grad for p in params)), params

    def _storage(self, params):
        """The buffers the module's parameters and buffers hold now (what a graph recorded now reads)."""
        if self.module is None:
            return ()
        return tuple(p._data for p in params) + tuple(b._data for b in self.module.buffers())

    def prime(self, args, warmup_calls, allow_unused_input):
        """make_graphed_callables' order: warmup_calls eager forward+backward calls on args
        (their gradients discarded, nothing accumulated), then the forward and backward graphs
        recorded at once. Raises what capture can't take instead of falling back."""
        tensors = []
        key, params = self._key(_signature((args, {}), tensors))
        device = _graph_device(tensors)
        sig, why = self._new_signature(key, device, params, self._storage(params))
        if sig is None:
            raise RuntimeError(f"{self.name}: {why}")
        wrt = sig.differentiated(tensors)
        for _ in range(warmup_calls):
            out = sig.call(args, {}, tensors)
            sig.calls = 0
            diff = [o for o in _flatten(out)[0] if isinstance(o, Tensor) and o.requires_grad]
            if diff and wrt:
                autograd_grad(diff, wrt, grad_outputs=[o.zeros_for_grad(o.shape, o.dtype, o.device) for o in diff],
                              allow_unused=True)
        sig.calls = 1
        try:
            out = sig.call(args, {}, tensors)
        except _CantCapture as e:
            raise RuntimeError(f"{self.name}: {e}") from None
        if sig.grad_outs and wrt:
            sig._backward([None] * len(sig.grad_outs), sig.generation)
            if not allow_unused_input and any(g is None for g in sig.grads):
                raise RuntimeError("make_graphed_callables: one of the differentiated Tensors appears to not "
                                   "have been used in the graph. Set allow_unused_input=True if this is the "
                                   "desired behavior.")
        del out

    def _new_signature(self, key, device, params, storage):
        """-> (a _Signature for key, None), or (None, why it can't have one)."""
        from .backends import backend_for
        if len(self._signatures) >= MAX_SIGNATURES:
            return None, f"more than {MAX_SIGNATURES} argument signatures (shapes, dtypes, modes) were seen"
        if self.fn is self.module and any(m._has_hooks() for m in self.module.modules()):
            return None, "the module has forward or backward hooks, whose Python a replayed graph would skip"
        graph = backend_for(device).step_graph(device.index)
        if graph is None:
            return None, f"{device} has no graphs"
        sig = self._signatures[key] = _Signature(self, device, params, graph, storage)
        return sig, None

    def _eager(self, key, why, args, kwargs):
        """Run this call eagerly; with a key, every later call of that signature too."""
        self._say_eager(key, why)
        return self.fn(*args, **kwargs)

    def give_up(self, sig, why):
        """sig's calls run eagerly from now on."""
        for key in [k for k, v in self._signatures.items() if v is sig]:
            self._say_eager(key, why)

    def _say_eager(self, key, why):
        """Mark key's signature eager (key None: only this call) and say why, once per reason."""
        if key is not None:
            self._signatures[key] = None
        if why not in self._warned:
            self._warned.add(why)
            # (stack: here, _eager, __call__, OptimizedModule.forward, Module.__call__, the caller)
            warnings.warn(f"{self.name} runs eagerly for this call signature: {why}", stacklevel=6)

    def reset(self):
        """Drop every graph (and the memory it holds); each signature's next call warms up again."""
        self._signatures.clear()


class _CantCapture(Exception):
    """Why a signature runs eagerly from now on."""


def _autocast_key():
    if not autocast_state.on:
        return None
    return tuple(sorted((d, autocast_state.dtypes.get(d)) for d, on in autocast_state.enabled.items() if on))


class _Signature:
    def __init__(self, owner, device, params, graph, storage):
        self.owner, self.device, self.params, self.graph = owner, device, params, graph
        self.storage = storage      # the module's buffers its graphs read (kept alive with them)
        self.backward_graph = None
        self.calls = 0
        self.statics = None         # the static input tensors the forward graph reads
        self.outs = None            # its output leaves (tensors: static buffers)
        self.diff = None            # per output leaf: whether it is differentiable
        self.rebuild = None         # output leaves -> the forward's output structure
        self.recorded = None        # the differentiable outputs' autograd graph, until backward is recorded
        self.grad_outs = None       # static gradients of the differentiable outputs
        self.grads = None           # static gradients of the inputs and parameters (the backward graph's)
        self.generation = 0         # forward runs of the graph: a backward needs its own forward's activations
        self.pending = None         # weak reference to the node of the graph's latest call

    def call(self, args, kwargs, tensors):
        self.calls += 1
        grad_on = is_grad_enabled()     # (autograd records this call)
        if self.calls == 1:
            return self._warm(args, kwargs, tensors, grad_on)
        if self.calls == 2:
            self._record(args, kwargs, tensors, grad_on)
        elif self._in_use():        # its backward is still to come: the activations are taken
            return self.owner.fn(*args, **kwargs)
        else:
            self.graph.replay([t._data for t in tensors])
        self.generation += 1
        fresh = [o.detach().clone() if isinstance(o, Tensor) else o for o in self.outs]
        if not grad_on:
            return self.rebuild(fresh)
        generation = self.generation
        return self.rebuild(_link(self, lambda grads: self._backward(grads, generation), fresh,
                                  self.diff, tensors, track=True))

    def reads(self, storage):
        """Whether the module's parameters and buffers still hold the buffers recorded."""
        return len(storage) == len(self.storage) and all(a is b for a, b in zip(storage, self.storage))

    def differentiated(self, tensors):
        """What a backward of the call differentiates: its tensors and the parameters that
        require grad, in that order (the order of the gradients the backward returns)."""
        return [t for t in tensors if t.requires_grad] + [p for p in self.params if p.requires_grad]

    def _in_use(self):
        node = self.pending() if self.pending is not None else None
        return node is not None and not node.done

    # ---- call 1: eager, on the graph's stream ---------------------------------------------
    def _warm(self, args, kwargs, tensors, grad_on):
        module = self.owner.fn
        if not grad_on:
            return self.graph.warmup(lambda: module(*args, **kwargs))
        inner = [t.detach().requires_grad_(t.requires_grad) for t in tensors]
        i_args, i_kwargs = _replace((args, kwargs), iter(inner))
        with enable_grad():
            out = self.graph.warmup(lambda: module(*i_args, **i_kwargs))
        leaves, rebuild = _flatten(out)
        diff = [isinstance(o, Tensor) and o.requires_grad for o in leaves]
        outs = [o for o, d in zip(leaves, diff) if d]
        wrt = self.differentiated(inner)

        def backward(grads):
            g = [x if x is not None else o.zeros_for_grad(o.shape, o.dtype, o.device) for o, x in zip(outs, grads)]
            return self.graph.warmup(lambda: autograd_grad(outs, wrt, grad_outputs=g, allow_unused=True))
        return rebuild(_link(self, backward, leaves, diff, tensors, track=False))

    # ---- call 2: record ---------------------------------------------------------------------
    def _record(self, args, kwargs, tensors, grad_on):
        self.statics = [_static_copy(t) for t in tensors]
        s_args, s_kwargs = _replace((args, kwargs), iter(self.statics))
        module = self.owner.fn

        def forward():
            with enable_grad() if grad_on else no_grad():
                out = module(*s_args, **s_kwargs)
            leaves, rebuild = _flatten(out)
            self.diff = [isinstance(o, Tensor) and o.requires_grad for o in leaves]
            if grad_on:        # (raised here, the capture is dropped before anything runs)
                _check_closed(leaves, self.statics, self.params)
                self.recorded = [o for o, d in zip(leaves, self.diff) if d]
            return [o.detach() if isinstance(o, Tensor) else o for o in leaves], rebuild
        try:
            self.outs, self.rebuild = self.graph.capture(
                forward, self.owner.name, [(s._data, t._data) for s, t in zip(self.statics, tensors)])
        except capture.CaptureSyncError as e:
            raise _CantCapture(str(e).split(" reads a device value")[0] + " reads a device value on the host "
                               "(a host read or a data-dependent shape)") from None
        except _CantCapture:
            raise
        except Exception as e:      # (nothing ran: the call runs eagerly and says why)
            raise _CantCapture(f"recording its forward failed ({type(e).__name__}: {e})") from None
        if grad_on:
            self.grad_outs = [o.zeros_for_grad(o.shape, o.dtype, o.device) for o in self.recorded]

    def _backward(self, grads, generation):
        if generation != self.generation:
            raise RuntimeError(
                f"{self.owner.name}: backward of a call whose activations a later call of the same "
                f"signature has overwritten in the captured graph; call backward before the next call")
        for static, g in zip(self.grad_outs, grads):
            if g is None:
                static.zero_()
            else:
                static.copy_(g)
        if self.backward_graph is not None:
            self.backward_graph.replay()
        else:
            wrt = self.differentiated(self.statics)

            def backward():     # (retain_graph: a failed capture leaves the graph for the eager fallback)
                return autograd_grad(self.recorded, wrt, grad_outputs=self.grad_outs, allow_unused=True,
                                     retain_graph=True)
            graph = self.graph.sibling()        # (the warm-up's stream: its GEMM handles and plans)
            try:
                self.grads = graph.capture(backward, self.owner.name + " backward", pool=self.graph.pool)
            except Exception as e:     # recording failed, nothing ran: this call's backward runs eagerly
                self.owner.give_up(self, f"recording its backward failed ({e})")
                return autograd_grad(self.recorded, wrt, grad_outputs=self.grad_outs, allow_unused=True)
            self.backward_graph = graph
            self.recorded = None        # (the Python graph is spent; the backward graph reads its buffers)
        # The next replay overwrites these buffers: a parameter whose .grad exists adds them into
        # it, anything else gets a copy (the engine would adopt a buffer it sees no other owner
        # of as a .grad, which the next replay would then overwrite)
        leaves = [None] * sum(s.requires_grad for s in self.statics) + [p for p in self.params if p.requires_grad]
        return [g if g is None or (leaf is not None and leaf.grad is not None) else g.clone()
                for g, leaf in zip(self.grads, leaves)]


def _link(sig, backward, leaves, diff, tensors, track):
    """leaves with the differentiable ones (diff[i]) made outputs of one node whose backward is
    backward(their gradients) -> the gradients of the call's inputs and parameters that require
    grad. track: remember the node as the graph's latest call."""
    inputs = sig.differentiated(tensors)
    outs = [o.detach() for o, d in zip(leaves, diff) if d]
    if not outs or not inputs:
        return [o.detach() if isinstance(o, Tensor) else o for o in leaves]
    linked = iter(_Call.apply(backward, len(outs), *inputs, *outs))
    node = None
    result = []
    for o, d in zip(leaves, diff):
        if d:
            o = next(linked)
            node = o.grad_fn
        result.append(o.detach() if isinstance(o, Tensor) and not d else o)
    node.done = False
    if track:
        sig.pending = weakref.ref(node)
    return result


class _Call(Function):
    """One call's node: its inputs are the call's inputs and parameters (so the engine sends
    their gradients on), its outputs the call's differentiable outputs."""

    @staticmethod
    def forward(ctx, backward, n_out, *tensors):
        ctx.run, ctx.n_in = backward, len(tensors) - n_out
        ctx.set_materialize_grads(False)
        return tuple(t.detach() for t in tensors[ctx.n_in:])

    @staticmethod
    def backward(ctx, *grads):
        in_grads = ctx.run(grads)
        ctx.done = True
        return (None, None) + tuple(in_grads) + (None,) * len(grads)


def _flatten(obj):
    """-> (the leaves of a tuple/list/dict structure: tensors and other values, rebuild(leaves))."""
    leaves = []

    def walk(o):
        if type(o) in (tuple, list):
            parts = [walk(x) for x in o]
            return lambda it: type(o)(p(it) for p in parts)
        if isinstance(o, tuple) and hasattr(o, "_fields"):      # a named tuple
            parts = [walk(x) for x in o]
            return lambda it: type(o)(*[p(it) for p in parts])
        if isinstance(o, dict):
            parts = {k: walk(v) for k, v in o.items()}
            return lambda it: type(o)((k, p(it)) for k, p in parts.items())
        leaves.append(o)
        return next
    build = walk(obj)
    return leaves, lambda new: build(iter(new))


def _check_closed(outs, statics, params):
    """Raise _CantCapture if the recorded graph reaches a tensor requiring grad that is neither
    an argument nor a parameter: the backward graph would leave its gradient out."""
    allowed = {id(t) for t in statics} | {id(p) for p in params}
    seen, stack = set(), [o.grad_fn for o in outs if isinstance(o, Tensor) and o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is AccumulateGrad:
            if id(node.variable) not in allowed:
                raise _CantCapture(f"forward reads a tensor of shape {tuple(node.variable.shape)} that requires "
                                   "grad and is neither an argument nor a parameter of the module")
            continue
        stack.extend(e[0] for e in node.next_edges if e is not None)
