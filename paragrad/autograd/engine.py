"""The backward engine: run_backward walks the graph's edges in topological order with an
explicit queue (no recursion, so chains of any length work), calls each node's backward, sums
the gradients meeting at one input, runs tensor hooks and writes .grad on leaves.

Gradients meeting at one input add into a buffer the engine made itself, in place (`fresh`),
and a node that can add its first input's gradient into such a buffer (`add_into`: a slice
written into zeros adds just its slice, layer_norm adds its dx) does so instead of returning it.
A node that hands its incoming gradient on unchanged (`passes_grad`, a residual add) keeps the
buffer the engine's, so the gradients of a residual stream sum in one buffer all the way down.
Anomaly mode (anomaly_mode.py) adds forward tracebacks and NaN checks.

Two extension points serve code that acts on finished gradients (DistributedDataParallel):
a leaf's post-accumulate-grad hooks run right after its .grad is updated, and callbacks queued
with `queue_callback` during a backward run once that backward has finished."""
from __future__ import annotations

from .. import autocast_state
from ..memory_format import dense_order
from . import anomaly_mode, grad_mode
from .graph import RELEASED, AccumulateGrad, _check_versions, edge


# one list of queued callbacks per backward in progress (a hook may run a backward of its own)
_final_callbacks = []


def queue_callback(callback):
    """Run callback() when the backward pass in progress finishes, after every gradient has
    been accumulated (torch's `Variable._execution_engine.queue_callback`). Only valid during a
    backward (from a hook); callbacks run in the order queued, and one may queue another. A
    backward that raises runs none of them."""
    if not _final_callbacks:
        raise RuntimeError("queue_callback: final callbacks can only be installed during backward pass.")
    _final_callbacks[-1].append(callback)


def _run_callbacks(callbacks):
    i = 0
    while i < len(callbacks):       # (a callback may queue more)
        callbacks[i]()
        i += 1


def _freed_error(node):
    return RuntimeError(
        f"Trying to backward through the graph a second time (or directly access saved tensors "
        f"after they have already been freed) at {node.name()}. Saved intermediate values of the "
        f"graph are freed when you call .backward() or autograd.grad(). Specify "
        f"retain_graph=True if you need to backward through the graph a second time.")


def _check_saved(node):
    """Raise if the node's saved tensors are freed or were modified in place since."""
    # a custom Function raises only if its backward reads ctx.saved_tensors, as torch
    if node.saved is RELEASED and not node.user_code:
        raise _freed_error(node)
    if node.versions:
        _check_versions(node)


def _call(node, grads):
    """One node's backward formula: the gradients for its inputs, as a tuple."""
    _check_saved(node)
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
    prev_mode = grad_mode._enabled
    grad_mode._enabled = create_graph
    autocast_was = autocast_state.pause()      # backward formulas are not autocast (torch's rule)
    # ids of gradient tensors that something outside the engine may hold (roots, what hooks
    # saw, what user code returned) or that a .grad already owns: a leaf must copy these
    # before adopting them, since its .grad is later updated in place
    claimed = set()
    callbacks = []
    _final_callbacks.append(callbacks)
    try:
        if inputs is None:
            result = _run(roots, retain_graph, capture, create_graph, claimed)
        else:
            inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
            if not inputs:
                raise RuntimeError("backward: 'inputs' argument to backward() cannot be empty.")
            grads = _run(roots, retain_graph, [edge(t) for t in inputs], create_graph, claimed)
            for t, g in zip(inputs, grads):
                if g is not None:
                    _accumulate(t, g, claimed, create_graph)
            result = None
        for t, _ in roots:     # what the graph saved is freed now, not at the next launch
            t._backend.launch_pending()
        _run_callbacks(callbacks)
        return result
    finally:
        _final_callbacks.pop()
        grad_mode._enabled = prev_mode
        autocast_state.resume(autocast_was)


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
        # (what this node takes is no longer the engine's alone; one it passes on unchanged
        # becomes the engine's again below, if nothing outside saw it)
        taken = fresh.pop(id(grads[0]), None) if fresh and grads[0] is not None else None
        if fresh:
            for g in grads[1:]:
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
        elif node.add_into is not None and not create_graph and not anomaly and (
                in_grads := _add_in_place(node, grads, buffers, fresh)) is not None:
            pass                                # (input 0's gradient is in its buffer already)
        else:
            in_grads = anomaly_mode.checked_call(_call, node, grads) if anomaly else _call(node, grads)
            if node.user_code:      # a custom Function may return tensors the user keeps
                claimed.update(id(g) for g in in_grads)
        if not retain_graph and node.saved is not RELEASED:
            node.release_variables()
        # the engine's buffer handed on unchanged stays the engine's (no hook, retain_grad or
        # autograd.grad result holds it: those claim it or take it from `grads` above)
        passed = taken if (taken is not None and node.passes_grad is not None and wanted is None
                           and in_grads[node.passes_grad] is taken and id(taken) not in claimed) else None

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
                    if (node.add_into is not None and not create_graph) or g is passed:
                        fresh[id(g)] = g        # (a buffer its formula made, or the one passed on)
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


def _add_in_place(node, grads, buffers, fresh):
    """The gradients for `node`'s inputs when it (an add_into node) added input 0's into the
    buffer already waiting there, which the engine made and nothing else holds; else None."""
    e = node.next_edges[0] if node.next_edges else None
    if e is None or grads[0] is None:
        return None
    slot = buffers.get(e[0])
    acc = slot[e[1]] if slot is not None else None
    if acc is None or fresh.get(id(acc)) is not acc:
        return None
    _check_saved(node)
    return node.add_into(acc, grads[0])


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
        g = _in_leaf_layout(g, t)
        # with create_graph keep the gradient's own graph (double backward)
        t._grad = g if create_graph else _owned(g, claimed)
    elif create_graph or old.requires_grad or not old._backend.owns_memory(old._data):
        t._grad = old + g
    else:
        # in place, as PyTorch: a reference to .grad taken earlier sees the sum (optimizers
        # and captured CUDA graphs rely on the buffer staying the same)
        old._backend.binary("add", old._data, g._data, out=old._data)
    claimed.add(id(t._grad))
    if t._post_acc_hooks:
        for hook in tuple(t._post_acc_hooks):       # (a hook may remove itself)
            r = hook(t)
            if r is not None:       # (torch's two errors: a tensor, and anything else)
                if hasattr(r, "grad_fn"):
                    raise RuntimeError("Tensor post accumulate grad hooks should return None.")
                raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")


def _in_leaf_layout(g, t):
    """g laid out as torch's gradient layout contract says for leaf t's new .grad: with t's
    strides where t lies densely in some order (a channels-last weight gets a channels-last
    .grad, which its optimizer step then reads in one order), else row-major."""
    if g._data.flags.c_contiguous and t._data.flags.c_contiguous:
        return g                                        # the usual case, decided at once
    order = dense_order(t.shape, t.stride())
    if order is None:
        return g.contiguous()
    strides = g.stride()
    if all(n == 1 or a == b for n, a, b in zip(t.shape, strides, t.stride())):
        return g
    back = [order.index(d) for d in range(t.ndim)]
    return g.permute(*order).contiguous().permute(*back)    # dense in t's order


def _owned(g, claimed):
    """g itself if nothing else holds its buffer, else a private copy (so an in-place update
    of one .grad can't show up in another, or in a gradient the user passed in)."""
    if id(g) in claimed or g.requires_grad or not g._backend.owns_memory(g._data):
        return g.detach().clone()
    return g


