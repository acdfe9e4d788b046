"""The graph: Node (one recorded op, its saved values and the edges its input gradients flow
along), AccumulateGrad (a leaf's sink into .grad) and `record`, which every op calls to link its
output to a node. A node releases what it saved after backward (release_variables), so
activations die at backward, not when the output does."""
from __future__ import annotations

import weakref

from . import anomaly_mode, grad_mode


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
    # add_into(acc, g) -> the gradients for the inputs, or None to decline: input 0's is added
    # into `acc` instead, in place (the engine's own gradient buffer of that input, which
    # already holds the gradient of another use), and None stands in its place. A slice adds
    # only its piece (no zeros around it); layer_norm adds its dx (no separate sum).
    add_into = None
    # passes_grad = i, on nodes whose backward returns its incoming gradient itself, unchanged,
    # as input i's and keeps no reference to it (a residual add): see engine.py
    passes_grad = None

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


def node_class(base, name):
    """A subclass of node class `base` called `name`: torch's class name for one op's node
    (SqrtBackward0, SumBackward1), where paragrad shares one formula among several ops (every
    unary op's is UnaryBackward's). People print `t.grad_fn` and test `type(t.grad_fn).__name__`,
    so the name is the class's own. Made once per (base, name)."""
    cls = _named.get((base, name))
    if cls is None:
        cls = _named[(base, name)] = type(name, (base,), {"__module__": base.__module__,
                                                          "formula": base})
    return cls


_named = {}


def rename(out, name, *inputs):
    """Give the node that made `out` the class name torch gives the op that called this. A
    composite op (silu as x * sigmoid(x), mean as a sum divided) ends in its last step's node;
    torch names it for the op. The node keeps its formula (only its class name changes). A
    node that is not this op's own, because `out` came back through one of `inputs`
    unchanged, is left alone. Returns `out`."""
    fn = out.grad_fn
    if fn is None:
        return out
    for t in inputs:
        if t is not None and getattr(t, "grad_fn", None) is fn:
            return out
    fn.__class__ = node_class(getattr(type(fn), "formula", type(fn)), name)
    return out


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
    if not grad_mode._enabled:
        return False
    for t in tensors:
        if t is not None and t._requires_grad:
            return True
    return False


