"""Reverse-mode autograd: graph nodes, grad mode, and the backward engine.

Each differentiable op that sees an input requiring grad records a `Node` as its output's
`grad_fn`. A node knows, for each input, the edge `(node, output_index)` its gradient flows
to: the input's own `grad_fn`, or an `AccumulateGrad` node for a leaf. `run_backward` walks
those edges in topological order with an explicit queue (no recursion, so chains of any length
work) and writes `.grad` on leaves. Without retain_graph, each node then releases every
tensor and buffer it held (`Node.release_variables`), so activations die at backward, not
when the output does. Gradients meeting at one input add into a buffer the engine made
itself, in place, and a node whose gradient is a slice written into zeros (`add_into`) adds
just its slice there. Anomaly mode (`anomaly_mode.py`) adds forward tracebacks and NaN checks.

This module never imports `tensor.py`: it sees tensors only through the attributes
`grad_fn`, `_output_nr`, `_requires_grad`, `_grad` (`.grad` without the setter's checks),
`_acc`, `_hooks`, `_vc` and a few methods (`_with_data` wraps a buffer).
Gradients themselves are Tensors; backward formulas are written with Tensor ops and run
with grad mode off.

In order below: grad mode (no_grad, enable_grad, inference_mode, set_grad_enabled); graph
nodes (Node, AccumulateGrad, and `record`, which every op calls); the engine (run_backward
and its helpers: hooks, accumulation into .grad); user-defined functions (Function and its
ctx) and the public `backward` / `grad`.
"""
from __future__ import annotations

import functools
import sys
import weakref

from . import anomaly_mode
from .anomaly_mode import (detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled,
                           set_detect_anomaly)

# torch's module path, torch.autograd.anomaly_mode, for `import paragrad.autograd.anomaly_mode`
sys.modules[__name__ + ".anomaly_mode"] = anomaly_mode

# ---- grad mode -----------------------------------------------------------------------------
_grad_enabled = True


def is_grad_enabled() -> bool:
    return _grad_enabled


class _GradMode:
    """Base for no_grad / enable_grad / set_grad_enabled: a context manager and a decorator."""

    _mode = True

    def __enter__(self):
        global _grad_enabled
        self._prev = _grad_enabled
        _grad_enabled = self._mode

    def __exit__(self, *exc):
        global _grad_enabled
        _grad_enabled = self._prev
        return False

    def __call__(self, fn):
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper


class _BareDecoratable(_GradMode):
    """Also usable as a bare decorator (`@no_grad` as well as `@no_grad()`), as in PyTorch."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        if not callable(orig_func):
            raise TypeError(f"{cls.__name__}() takes no arguments (or a function to decorate)")
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        """Nothing to set: the mode is the class's `_mode` (orig_func was handled in __new__)."""


class no_grad(_BareDecoratable):
    """Disable graph recording inside the block (or the decorated function)."""
    _mode = False


class enable_grad(_BareDecoratable):
    """Enable graph recording inside the block, e.g. within a no_grad region."""
    _mode = True


class inference_mode(_GradMode):
    """Same as no_grad in paragrad (PyTorch's extra inference-tensor checks do not exist here).
    `inference_mode(False)` enables grad mode, as PyTorch's does."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)          # used as a bare decorator: @inference_mode

    def __init__(self, mode=True):
        self._mode = not mode


class set_grad_enabled(_GradMode):
    """`set_grad_enabled(False)` takes effect at once, like PyTorch, and also works as a
    context manager that restores the previous mode on exit."""

    def __init__(self, mode: bool):
        global _grad_enabled
        self._mode = bool(mode)
        self._prev = _grad_enabled
        _grad_enabled = self._mode

    def __enter__(self):
        pass  # already switched in __init__; __exit__ restores

    def __call__(self, fn):
        global _grad_enabled
        _grad_enabled = self._prev   # used as a decorator: don't change the mode now
        return super().__call__(fn)


# ---- graph nodes ---------------------------------------------------------------------------
RELEASED = object()   # marks saved tensors freed after a backward pass without retain_graph


class Node:
    """One recorded op. Subclasses implement `backward(grad)` (one output) returning the
    gradient for each input, a single value when the op has one input. They keep tensors
    needed for backward in `self.saved`; that and any other tensor or buffer attribute is
    freed after backward unless retain_graph (`release_variables`)."""

    n_outputs = 1
    saved = None
    next_edges = ()
    out_hooks = None        # {output_index: [hook, ...]} for non-leaf Tensor.register_hook
    retained = None         # {output_index: weakref to the tensor} for retain_grad
    user_code = False       # backward is user code (custom Function): see _owned
    versions = ()           # versions of the saved tensors when they were saved
    # add_into(acc, g) -> bool, on nodes whose input gradient is g written into zeros (a
    # slice's, a view's): add it into the engine's own gradient buffer `acc` instead, in place
    add_into = None

    def backward(self, *grads):
        raise NotImplementedError(f"{type(self).__name__} has no backward")

    def release_variables(self):
        """Drop every tensor and buffer the node holds for its formula, `saved` and its inputs
        alike, after a backward without retain_graph (torch's `release_variables`). A node
        that held any is marked released, so another backward through it raises; one that
        held only shapes and flags stays usable, as torch's AddBackward0 does."""
        d = self.__dict__
        held = None
        for k, v in d.items():
            kind = _kinds.get(type(v))      # _holds_buffer inlined for the usual plain fields
            if kind is False or k in _STRUCTURAL:
                continue
            if kind is True or _holds_buffer(v):
                held = [k] if held is None else held + [k]
        if held:
            for k in held:
                del d[k]
            self.saved, self.versions = RELEASED, ()

    def name(self):
        return type(self).__name__

    @property
    def metadata(self) -> dict:
        """A dict kept with the node (torch's); anomaly mode stores the forward traceback
        under "traceback_"."""
        d = self.__dict__.get("_metadata")
        if d is None:
            d = self._metadata = {}
        return d

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"

    @property
    def next_functions(self):
        return tuple((e[0], e[1]) if e is not None else (None, 0) for e in self.next_edges)


# node fields that are the graph itself, never released
_STRUCTURAL = frozenset(("next_edges", "n_outputs", "out_hooks", "retained", "versions", "name",
                         "_metadata"))


def _holds_buffer(v, depth=0):
    """Does v hold device memory: a tensor or a backend array (NumPy's or CuPy's ndarray),
    possibly inside tuples, lists or dicts? Shapes, dtypes, numbers and functions don't."""
    kind = _kinds.get(type(v))
    if kind is None:
        kind = _kinds[type(v)] = _kind(type(v))
    if kind is True or kind is False:
        return kind
    if depth < 3:
        for e in (v.values() if kind == "map" else v):
            k = _kinds.get(type(e))         # inline for the usual tensors, numbers and None
            if k is True or (k is not False and _holds_buffer(e, depth + 1)):
                return True
    return False


_kinds = {}     # type -> True (a buffer), False, "seq" or "map" (look inside): once per type


def _kind(tp):
    if issubclass(tp, (tuple, list)):
        return "seq"
    if issubclass(tp, dict):
        return "map"
    if issubclass(tp, type):        # a class object, e.g. Tensor itself
        return False
    return (hasattr(tp, "_data") and hasattr(tp, "grad_fn")) or tp.__name__ == "ndarray"


class AccumulateGrad(Node):
    """The sink for a leaf tensor: runs its hooks and adds the gradient into `.grad`."""

    def __init__(self, variable):
        self.variable = variable

    def name(self):
        return "AccumulateGrad"


def accumulator(t) -> AccumulateGrad:
    """The one AccumulateGrad of a leaf (weakly cached on it, so the graph keeps it alive)."""
    ref = t._acc
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._acc = weakref.ref(acc)
    return acc


def edge(t):
    """Where the gradient of tensor `t` goes: (node, output_index), or None."""
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        return (accumulator(t), 0)
    return None


def record(node, inputs, out):
    """Attach `node` as out's grad_fn with edges to `inputs`. Call only when grad mode is on
    and some input requires grad (and after setting node.saved)."""
    # (list comprehensions: a generator costs more than these one to three items)
    node.next_edges = tuple([edge(t) if t is not None else None for t in inputs])
    if node.saved:
        node.versions = _versions(node.saved)
    if anomaly_mode._enabled:
        node.metadata["traceback_"] = anomaly_mode.forward_traceback()
    out.grad_fn = node
    out._requires_grad = True
    return out


def _versions(saved):
    """The version of every saved tensor now, to detect in-place writes before backward."""
    return tuple([t._vc[0] if hasattr(t, "_vc") else None for t in saved])


def _check_versions(node):
    for t, v in zip(node.saved, node.versions):
        if v is not None and t._vc[0] != v:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{t.dtype} {list(t.shape)}] is at version {t._vc[0]}; "
                f"expected version {v} instead (in {node.name()}).")


def needs_grad(*tensors) -> bool:
    """Should an op on these tensors record a node?"""
    if not _grad_enabled:
        return False
    for t in tensors:
        if t is not None and t._requires_grad:
            return True
    return False


# ---- the engine ----------------------------------------------------------------------------
def _freed_error(node):
    return RuntimeError(
        f"Trying to backward through the graph a second time (or directly access saved tensors "
        f"after they have already been freed) at {node.name()}. Saved intermediate values of the "
        f"graph are freed when you call .backward() or autograd.grad(). Specify "
        f"retain_graph=True if you need to backward through the graph a second time.")


def _call(node, grads):
    """One node's backward formula: the gradients for its inputs, as a tuple."""
    # a custom Function raises only if its backward reads ctx.saved_tensors, as torch
    if node.saved is RELEASED and not node.user_code:
        raise _freed_error(node)
    if node.versions:
        _check_versions(node)
    in_grads = node.backward(*grads)
    return in_grads if isinstance(in_grads, tuple) else (in_grads,)


def _same_buffer_kind(a, b):
    """Two gradients that add as buffers: one dtype, backend, device and shape."""
    return (a.dtype is b.dtype and a._backend is b._backend and a._device == b._device
            and a._data.shape == b._data.shape)


def _sum_grads(a, b, create_graph):
    """Two gradients arriving at one output, summed. Without create_graph (nothing to
    record) two of one dtype, shape and device add as buffers: the Tensor op's promotion,
    checks and graph bookkeeping cost more than the addition of small ones."""
    if a is None:
        return b
    if b is None:
        return a
    if not create_graph and _same_buffer_kind(a, b):
        return a._with_data(a._backend.binary("add", a._data, b._data))
    return a + b


def run_backward(roots, retain_graph=False, capture=None, create_graph=False, inputs=None):
    """Propagate gradients from `roots`, a list of (tensor, grad) pairs.

    Without `capture`, leaf gradients are accumulated into `.grad`. With `capture` (a list of
    edges), nothing is written anywhere and the gradients arriving at those edges are returned
    in the same order (None where nothing arrived). With `inputs` (tensors, leaves or not),
    only their `.grad` is accumulated (backward(inputs=...)). With `create_graph`, the
    backward formulas themselves are recorded, so the gradients can be differentiated again.
    """
    global _grad_enabled
    prev_mode = _grad_enabled
    _grad_enabled = create_graph
    # ids of gradient tensors that something outside the engine may hold (roots, what hooks
    # saw, what user code returned) or that a .grad already owns: a leaf must copy these
    # before adopting them, since its .grad is later updated in place
    claimed = set()
    try:
        if inputs is None:
            return _run(roots, retain_graph, capture, create_graph, claimed)
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if not inputs:
            raise RuntimeError("backward: 'inputs' argument to backward() cannot be empty.")
        grads = _run(roots, retain_graph, [edge(t) for t in inputs], create_graph, claimed)
        for t, g in zip(inputs, grads):
            if g is not None:
                _accumulate(t, g, claimed, create_graph)
    finally:
        _grad_enabled = prev_mode


def _run(roots, retain_graph, capture, create_graph, claimed):
    buffers = {}        # node -> list of gradients per output (summed as they arrive)
    start = []
    for t, g in roots:
        e = edge(t)
        if e is None:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        node, idx = e
        slot = buffers.setdefault(node, [None] * node.n_outputs)
        slot[idx] = _sum_grads(slot[idx], g, create_graph)
        claimed.add(id(g))
        start.append(node)

    # count, for every reachable node, how many edges point at it
    deps = {}
    seen = set(start)
    stack = list(seen)
    while stack:
        node = stack.pop()
        for e in node.next_edges:
            if e is None:
                continue
            child = e[0]
            deps[child] = deps.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)

    wanted = None
    if capture is not None:
        wanted = {}
        for i, e in enumerate(capture):
            if e is not None:
                wanted.setdefault((e[0], e[1]), []).append(i)
        results = [None] * len(capture)

    anomaly = anomaly_mode._enabled
    # gradient buffers the engine made and nothing else holds (id -> tensor, which also keeps
    # the id from being reused): later gradients for the same input add into them in place
    # (no new buffer per sum), and an add_into node adds its slice there. An RNN that reads
    # emb[:, t] at every step then fills one (B, T, D) gradient, not T zero-filled ones summed.
    fresh = {}
    ready = [n for n in dict.fromkeys(start) if deps.get(n, 0) == 0]
    while ready:
        node = ready.pop()
        grads = buffers.pop(node, None) or [None] * node.n_outputs
        if fresh:       # (what this node takes is no longer the engine's alone)
            for g in grads:
                if g is not None:
                    fresh.pop(id(g), None)

        # tensor hooks first (on this node's non-leaf outputs, or on the leaf it accumulates
        # into), so both .grad and autograd.grad see the gradient the hooks return; then
        # retain_grad
        if node.out_hooks:
            for idx, hooks in node.out_hooks.items():
                if grads[idx] is not None:
                    grads[idx] = _run_hooks(hooks, grads[idx], claimed)
        elif type(node) is AccumulateGrad and node.variable._hooks and grads[0] is not None:
            grads[0] = _run_hooks(node.variable._hooks, grads[0], claimed)
        if wanted is not None:
            for idx in range(node.n_outputs):
                for i in wanted.get((node, idx), ()):
                    results[i] = grads[idx]
        elif node.retained:
            for idx, ref in node.retained.items():
                t = ref()
                if t is not None and grads[idx] is not None:
                    # out of place, as PyTorch: a retained .grad read earlier keeps its value
                    t._grad = _owned(grads[idx], claimed) if t._grad is None else t._grad + grads[idx]
                    claimed.add(id(t._grad))

        if isinstance(node, AccumulateGrad):
            if wanted is None and grads[0] is not None:
                _accumulate(node.variable, grads[0], claimed, create_graph)
            continue

        if grads.count(None) == len(grads):      # nothing flows here: skip the formula
            in_grads = (None,) * len(node.next_edges)
        elif node.add_into is not None and not create_graph and _added_in_place(node, grads, buffers, fresh):
            in_grads = (None,)                  # (already in the input's gradient buffer)
        else:
            in_grads = anomaly_mode.checked_call(_call, node, grads) if anomaly else _call(node, grads)
            if node.user_code:      # a custom Function may return tensors the user keeps
                claimed.update(id(g) for g in in_grads)
        if not retain_graph and node.saved is not RELEASED:
            node.release_variables()

        for e, g in zip(node.next_edges, in_grads):
            if e is None:
                continue
            child, idx = e
            if g is not None:
                slot = buffers.get(child)
                if slot is None:
                    slot = buffers[child] = [None] * child.n_outputs
                old = slot[idx]
                if old is None:
                    slot[idx] = g
                    if node.add_into is not None and not create_graph:
                        fresh[id(g)] = g        # (a zero-filled buffer its formula made)
                elif fresh.get(id(old)) is old and _same_buffer_kind(old, g):
                    old._backend.binary("add", old._data, g._data, out=old._data)     # in place
                else:
                    slot[idx] = new = _sum_grads(old, g, create_graph)
                    if not create_graph:
                        fresh.pop(id(old), None)
                        fresh[id(new)] = new
            deps[child] -= 1
            if deps[child] == 0:
                ready.append(child)
    return results if capture is not None else None


def _added_in_place(node, grads, buffers, fresh):
    """Whether `node` (an add_into node) added its input gradient into the buffer already
    waiting at its input, which the engine made and nothing else holds."""
    e = node.next_edges[0] if len(node.next_edges) == 1 else None
    if e is None or grads[0] is None:
        return False
    slot = buffers.get(e[0])
    acc = slot[e[1]] if slot is not None else None
    return acc is not None and fresh.get(id(acc)) is acc and node.add_into(acc, grads[0])


def _run_hooks(hooks, g, claimed):
    for hook in tuple(hooks):       # a hook may remove itself while running
        claimed.add(id(g))          # the hook may keep a reference to what it was given
        r = hook(g)
        if r is not None:
            g = r
    claimed.add(id(g))
    return g


def _accumulate(t, g, claimed, create_graph):
    """Add g into leaf t's .grad: dtype/shape checked, never aliasing a buffer that something
    else also holds (so in-place updates of .grad stay local)."""
    if g.shape != t.shape:
        raise RuntimeError(f"backward: gradient of shape {tuple(g.shape)} does not match its "
                           f"leaf of shape {tuple(t.shape)}")
    if g.dtype is not t.dtype:
        g = g.to(t.dtype)
    old = t._grad
    if old is None:
        # with create_graph keep the gradient's own graph (double backward)
        t._grad = g if create_graph else _owned(g, claimed)
    elif create_graph or old.requires_grad or not old._backend.owns_memory(old._data):
        t._grad = old + g
    else:
        # in place, as PyTorch: a reference to .grad taken earlier sees the sum (optimizers
        # and captured CUDA graphs rely on the buffer staying the same)
        old._backend.binary("add", old._data, g._data, out=old._data)
    claimed.add(id(t._grad))


def _owned(g, claimed):
    """g itself if nothing else holds its buffer, else a private copy (so an in-place update
    of one .grad can't show up in another, or in a gradient the user passed in)."""
    if id(g) in claimed or g.requires_grad or not g._backend.owns_memory(g._data):
        return g.detach().clone()
    return g


# ---- user-defined functions ------------------------------------------------------------------
class FunctionCtx(Node):
    """The `ctx` of a custom `Function`: also its graph node (as in PyTorch)."""

    user_code = True

    def __init__(self, fn_cls):
        self._cls = fn_cls
        self.saved = None
        self.needs_input_grad = ()
        self.materialize_grads = True
        self._non_differentiable = set()
        self._out_meta = []
        self._in_meta = ()

    def name(self):
        return self._cls.__name__ + "Backward"

    def save_for_backward(self, *tensors):
        self.saved = tensors

    def release_variables(self):
        """Only what save_for_backward kept: fields the user set on ctx stay, as in torch."""
        if self.saved is not None:
            self.saved, self.versions = RELEASED, ()

    @property
    def saved_tensors(self):
        if self.saved is RELEASED:
            raise _freed_error(self)
        return self.saved or ()

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = value

    def backward(self, *grads):
        if self.materialize_grads:
            grads = tuple(g if g is not None or meta is None else make_zeros(*meta)
                          for g, meta in zip(grads, self._out_meta))
        r = self._cls.backward(self, *grads)
        r = r if isinstance(r, tuple) else (r,)
        n = len(self.next_edges)
        if len(r) != n and not (len(r) > n and all(g is None for g in r[n:])):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                               f"gradients (expected {n}, got {len(r)})")
        return tuple(_fit(self, i, g, meta) if g is not None and meta is not None else None
                     for i, (g, meta) in enumerate(zip(r[:n], self._in_meta)))


def _fit(ctx, i, g, meta):
    """A user backward's gradient made to match its input, as PyTorch validates it: summed
    over broadcast dimensions, cast to the input's dtype; an incompatible shape raises."""
    shape, dtype = meta
    if g.shape != shape:
        lead = g.ndim - len(shape)
        if lead < 0 or any(s != 1 and s != gs for s, gs in zip(shape, g.shape[lead:])):
            raise RuntimeError(f"Function {ctx.name()} returned an invalid gradient at index {i} - "
                               f"got {list(g.shape)} but expected shape compatible with {list(shape)}")
        axes = tuple(range(lead)) + tuple(lead + k for k, s in enumerate(shape)
                                          if s == 1 and g.shape[lead + k] != 1)
        g = (g.sum(dim=axes, keepdim=True) if axes else g).reshape(shape)
    return g if g.dtype is dtype else g.to(dtype)


def make_zeros(cls, shape, dtype, device):
    return cls.zeros_for_grad(shape, dtype, device)


class Function:
    """Custom differentiable functions, PyTorch style:

        class Exp(Function):
            @staticmethod
            def forward(ctx, x): y = x.exp(); ctx.save_for_backward(y); return y
            @staticmethod
            def backward(ctx, g): (y,) = ctx.saved_tensors; return g * y
        Exp.apply(x)
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("Function subclasses must implement forward")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("Function subclasses must implement backward")

    # The newer PyTorch style: forward(*args) without ctx, and setup_context(ctx, inputs, output)
    # filling the ctx. Subclasses that override setup_context use it.
    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("Function subclasses whose forward takes no ctx must implement "
                                  "setup_context(ctx, inputs, output)")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx(cls)
        tensor_args = [a if hasattr(a, "grad_fn") else None for a in args]
        ctx.needs_input_grad = tuple(a is not None and a.requires_grad for a in tensor_args)
        with no_grad():
            if cls.setup_context is Function.setup_context:
                out = cls.forward(ctx, *args, **kwargs)
            else:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
        track = needs_grad(*tensor_args)
        outs = out if isinstance(out, tuple) else (out,)
        fixed = []
        for o in outs:
            if hasattr(o, "grad_fn") and any(o is a for a in tensor_args):
                o = o.detach()   # an input returned as-is becomes a new tensor of its own
            fixed.append(o)
        if track:
            ctx.next_edges = tuple(edge(a) if a is not None else None for a in tensor_args)
            if ctx.saved:
                ctx.versions = _versions(ctx.saved)
            if anomaly_mode._enabled:
                ctx.metadata["traceback_"] = anomaly_mode.forward_traceback()
            ctx._in_meta = tuple((a.shape, a.dtype) if a is not None else None for a in tensor_args)
            ctx.n_outputs = len(fixed)
            for i, o in enumerate(fixed):
                if hasattr(o, "grad_fn"):
                    ctx._out_meta.append((type(o), o.shape, o.dtype, o.device))
                    if o.dtype.is_floating_point and id(o) not in ctx._non_differentiable:
                        o.grad_fn, o._output_nr, o._requires_grad = ctx, i, True
                else:
                    ctx._out_meta.append(None)
        return tuple(fixed) if isinstance(out, tuple) else fixed[0]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """torch.autograd.backward: sum of tensors[i] * grad_tensors[i], accumulated into leaves
    (or only into `inputs`)."""
    tensors = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    elif not isinstance(grad_tensors, (list, tuple)):
        grad_tensors = [grad_tensors]
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"backward: got {len(grad_tensors)} grad_tensors for {len(tensors)} tensors")
    if retain_graph is None:
        retain_graph = create_graph
    run_backward([(t, t._root_grad(g, "backward")) for t, g in zip(tensors, grad_tensors)],
                 retain_graph=bool(retain_graph), create_graph=create_graph, inputs=inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """torch.autograd.grad: gradients of outputs w.r.t. inputs, returned rather than stored.
    Unused inputs raise unless allow_unused (then None), or get zeros with materialize_grads."""
    if materialize_grads and allow_unused is False:
        raise ValueError("grad: Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    single = not isinstance(inputs, (list, tuple))
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif not isinstance(grad_outputs, (list, tuple)):
        grad_outputs = [grad_outputs]
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("grad: one of the differentiated Tensors does not require grad")
    roots = [(o, o._root_grad(g, "grad")) for o, g in zip(outputs, grad_outputs)]
    if retain_graph is None:
        retain_graph = create_graph
    res = run_backward(roots, retain_graph=bool(retain_graph), capture=[edge(t) for t in inputs],
                       create_graph=create_graph)
    for i, (r, t) in enumerate(zip(res, inputs)):
        if r is None:
            if not allow_unused:
                raise RuntimeError("grad: One of the differentiated Tensors appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
            if materialize_grads:
                res[i] = t.zeros_for_grad(t.shape, t.dtype, t.device)
    return tuple(res)
