"""User-defined functions (torch.autograd.Function with its ctx) and the public entry points
`backward` and `grad`."""
from __future__ import annotations

from . import anomaly_mode
from .engine import _freed_error, run_backward
from .graph import RELEASED, Node, _versions, edge, needs_grad
from .grad_mode import no_grad


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
