"""What a graph holds after backward: every node releases the tensors (and backend buffers) it
kept for its formula, its inputs included, unless retain_graph; the output stays alive.

Each case builds its graph inside a function, so once it returns the test holds only the
leaves, the output and weak references to everything the graph's nodes hold.
"""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn.functional as F

from tests.helpers import check_raises


def _is_buffer(v):
    return isinstance(v, pg.Tensor) or type(v).__name__ == "ndarray"


def _held(v, depth=0):
    """Tensors and arrays inside one node attribute (through tuples, lists and dicts)."""
    if _is_buffer(v):
        yield v
    elif depth < 3 and isinstance(v, (tuple, list)):
        for e in v:
            yield from _held(e, depth + 1)
    elif depth < 3 and isinstance(v, dict):
        for e in v.values():
            yield from _held(e, depth + 1)


def _nodes(y):
    seen, stack = {}, [y.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen[id(n)] = n
        stack.extend(e[0] for e in n.next_edges if e is not None)
    return list(seen.values())


def _graph_refs(y, leaves):
    """Weak references to every tensor and buffer the graph's nodes hold, except the leaves
    the caller keeps (and their buffers), which must stay, and attention's cached causal
    bias, which outlives any one graph."""
    from paragrad.ops.neural.attention import _causal_cache
    keep = {id(t) for t in leaves} | {id(t._data) for t in leaves} | set(map(id, _causal_cache.values()))
    refs = []
    for node in _nodes(y):
        if type(node).__name__ == "AccumulateGrad":
            continue
        for name, v in vars(node).items():
            for t in _held(v):
                if id(t) not in keep and _weakrefable(t):
                    refs.append((f"{node.name()}.{name}", weakref.ref(t)))
    return refs


def _weakrefable(t):
    """Tensors and NumPy arrays are; a device array may not be (the node scan still checks it)."""
    try:
        weakref.ref(t)
        return True
    except TypeError:
        return False


class _Twice(pg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2


def _inter(x):
    """A non-leaf copy of x, so the op under test sees an intermediate activation."""
    return x * 1.5


def _cases():
    r = np.random.default_rng(0)

    def leaf(*shape, device):
        return pg.tensor(r.standard_normal(shape).astype(np.float32), device=device,
                         requires_grad=True)

    def c(name, shapes, fn):
        return pytest.param(shapes, fn, id=name)

    return [
        c("exp", [(3, 4)], lambda x: _inter(x).exp()),
        c("relu_tanh", [(3, 4)], lambda x: _inter(x).relu().tanh()),
        c("gelu_sigmoid", [(3, 4)], lambda x: F.gelu(_inter(x)).sigmoid()),
        c("add", [(3, 4), (3, 4)], lambda x, w: _inter(x) + _inter(w)),
        c("residual_add", [(3, 4)], lambda x: (lambda h: h + h.relu())(_inter(x))),
        c("sub_mul_div", [(3, 4), (3, 4)], lambda x, w: (_inter(x) - _inter(w)) * _inter(w) / (_inter(x).abs() + 1)),
        c("pow_maximum", [(3, 4), (3, 4)], lambda x, w: pg.maximum(_inter(x) ** 3, _inter(w))),
        c("where", [(3, 4), (3, 4)], lambda x, w: pg.where(_inter(x) > 0, _inter(x), _inter(w))),
        c("sum_mean", [(3, 4)], lambda x: _inter(x).sum(0) + _inter(x).mean(0)),
        c("max_var_std_prod", [(3, 4)], lambda x: _inter(x).max(1).values + _inter(x).var(1) + _inter(x).std(1) + _inter(x).prod(1)),
        c("logsumexp_norm", [(3, 4)], lambda x: _inter(x).logsumexp(1) + _inter(x).norm(dim=1)),
        c("matmul_linear", [(3, 4), (5, 4)], lambda x, w: _inter(x) @ _inter(w).t() + F.linear(_inter(x), w)),
        c("movement", [(3, 4)], lambda x: pg.cat([_inter(x).reshape(4, 3).t(), _inter(x).t()[None].expand(2, 4, 3)[0].permute(1, 0)]).flip(0)),
        c("slice_pad_stack", [(3, 4)], lambda x: pg.stack([F.pad(_inter(x)[1:, ::2], (1, 1)), F.pad(_inter(x)[:2, 1::2], (1, 1))])),
        c("indexing", [(3, 4)], lambda x: _inter(x)[pg.tensor([0, 2, 2])] + _inter(x).gather(1, pg.tensor([[0], [1], [3]])).index_select(0, pg.tensor([1, 0, 2]))),
        c("softmax_log_softmax", [(3, 4)], lambda x: _inter(x).softmax(-1) + F.log_softmax(_inter(x), -1)),
        c("cross_entropy", [(3, 4)], lambda x: F.cross_entropy(_inter(x), pg.tensor([0, 3, 1], device=x.device))),
        c("layer_norm", [(3, 4), (4,), (4,)], lambda x, w, b: F.layer_norm(_inter(x), (4,), w, b)),
        c("batch_norm", [(4, 3, 2, 2), (3,), (3,)], lambda x, w, b: F.batch_norm(_inter(x), None, None, w, b, training=True)),
        c("conv2d_pool", [(2, 3, 6, 6), (4, 3, 3, 3)], lambda x, w: F.max_pool2d(F.conv2d(_inter(x), w, padding=1), 2) + F.avg_pool2d(F.conv2d(_inter(x), w, padding=1), 2)),
        c("embedding", [(10, 4)], lambda w: F.embedding(pg.tensor([[1, 2], [4, 1]], device=w.device), _inter(w))),
        c("attention", [(1, 2, 5, 4), (1, 2, 5, 4), (1, 2, 5, 4)],
          lambda q, k, v: F.scaled_dot_product_attention(_inter(q), _inter(k), _inter(v), is_causal=True)),
        c("attention_mask", [(1, 2, 5, 4), (1, 2, 5, 4)],
          lambda q, k: F.scaled_dot_product_attention(_inter(q), _inter(k), _inter(k), attn_mask=pg.ones(5, 5, dtype=pg.bool, device=q.device).tril())),
        c("dropout", [(3, 4)], lambda x: F.dropout(_inter(x), 0.5)),
        c("custom_function", [(3, 4)], lambda x: _Twice.apply(_inter(x))),
    ], leaf


CASES, _leaf = _cases()


@pytest.mark.parametrize("shapes,fn", CASES)
def test_backward_releases_everything_the_graph_saved(shapes, fn, device):
    leaves = [_leaf(*s, device=device) for s in shapes]
    y = fn(*leaves).sum()
    refs = _graph_refs(y, leaves)      # empty for ops that save nothing (movement)
    y.backward()
    alive = [name for name, r in refs if r() is not None]
    assert not alive, f"still held after backward: {alive}"
    held = [f"{n.name()}.{k}" for n in _nodes(y) if type(n).__name__ != "AccumulateGrad"
            for k, v in vars(n).items() if any(True for _ in _held(v))]
    assert not held, f"nodes still hold buffers: {held}"
    assert y.grad_fn is not None and y.item() == y.item()    # the output itself lives on
    assert all(t.grad is not None for t in leaves)


@pytest.mark.parametrize("shapes,fn", CASES[:8])
def test_retain_graph_keeps_what_the_graph_saved(shapes, fn, device):
    leaves = [_leaf(*s, device=device) for s in shapes]
    y = fn(*leaves).sum()
    refs = _graph_refs(y, leaves)
    y.backward(retain_graph=True)
    assert all(r() is not None for _, r in refs)
    first = [t.grad.clone() for t in leaves]
    y.backward()            # works, accumulates, then frees
    for t, g in zip(leaves, first):
        np.testing.assert_allclose(t.grad.cpu().numpy(), 2 * g.cpu().numpy(), rtol=1e-5, atol=1e-6)
    assert not [name for name, r in refs if r() is not None]


def test_autograd_grad_releases_too(device):
    x = _leaf(3, 4, device=device)
    h = x * 2
    hr = weakref.ref(h)
    y = (h * h).sum()
    del h
    (g,) = pg.autograd.grad(y, x)
    assert hr() is None
    np.testing.assert_allclose(g.cpu().numpy(), 8 * x.detach().cpu().numpy(), rtol=1e-6)


def test_the_issue_example_frees_the_intermediate_at_backward(device):
    # h = x*2; y = (h*h).sum(); del h; y.backward(): h must not wait for y to die
    x = _leaf(3, 4, device=device)
    h = x * 2
    hr = weakref.ref(h)
    y = (h * h).sum()
    del h
    assert hr() is not None     # the graph needs it until backward
    y.backward()
    assert hr() is None and y.grad_fn is not None


def test_residual_add_buffer_freed_at_backward(device):
    """The memory itself: a residual add's activations are freed at backward (by refcount,
    no collection needed), not when the output dies."""
    x = _leaf(256, 512, device=device)
    h = x * 2
    bufs = [weakref.ref(h._data)] if _weakrefable(h._data) else [weakref.ref(h)]
    y = (h + h.relu()).sum()
    del h
    gc.disable()
    try:
        y.backward()
        assert all(r() is None for r in bufs)
    finally:
        gc.enable()


def test_create_graph_double_backward_still_works(device):
    x = pg.tensor([0.5, -1.0, 2.0], device=device, requires_grad=True)
    xt = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    for lib, t in ((pg, x), (torch, xt)):
        y = (t * t * t + (t + t).exp()).sum()
        (g,) = lib.autograd.grad(y, t, create_graph=True)
        g.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-5)


# ---- a second backward without retain_graph: allowed exactly where torch allows it ---------------
class _SavesUnused:
    """A custom Function that saves its input but never reads it: torch lets a second backward
    through (it raises only when ctx.saved_tensors is read) and keeps the ctx's other fields."""

    @staticmethod
    def make(lib, read):
        class Fn(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                ctx.scale, ctx.kept = 2.0, x * 3
                return x * 2

            @staticmethod
            def backward(ctx, g):
                if read:
                    ctx.saved_tensors
                return g * ctx.scale
        return Fn


SECOND = {
    "add": lambda L, x, w: x + w,
    "add_self": lambda L, x, w: x + x,
    "sub": lambda L, x, w: x - w,
    "add_broadcast": lambda L, x, w: x + w[0],
    "add_scalar": lambda L, x, w: x + 1,
    "mul": lambda L, x, w: x * w,
    "mul_scalar": lambda L, x, w: x * 2,
    "exp": lambda L, x, w: x.exp(),
    "relu": lambda L, x, w: x.relu(),
    "sum": lambda L, x, w: x.sum(0),
    "reshape_t_slice": lambda L, x, w: x.reshape(4, 3).t()[1:],
    "cat_expand_permute": lambda L, x, w: L.cat([x, w])[None].expand(2, 6, 4).permute(2, 1, 0),
    "index": lambda L, x, w: x[L.tensor([0, 2])],
    "where": lambda L, x, w: L.where(x > 0, x, w),
    "matmul": lambda L, x, w: x @ w.t(),
    "softmax": lambda L, x, w: x.softmax(-1),
    "dropout": lambda L, x, w: L.nn.functional.dropout(x, 0.5),
    "residual": lambda L, x, w: (lambda h: h + h)(x + w),
    "fn_saves_unused": lambda L, x, w: _SavesUnused.make(L, read=False).apply(x),
    "fn_saves_read": lambda L, x, w: _SavesUnused.make(L, read=True).apply(x),
}


def _second_backward(lib, fn, device=None):
    kw = {"device": device} if device else {}
    x = lib.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 7 - 0.5, requires_grad=True, **kw)
    w = lib.tensor(np.ones((3, 4), dtype=np.float32), requires_grad=True, **kw)
    y = fn(lib, x, w).sum()
    y.backward()
    first = x.grad.clone()
    try:
        y.backward()
    except RuntimeError as e:
        assert "Trying to backward through the graph a second time" in str(e)
        return "raises", None
    return "works", (x.grad - 2 * first).abs().max().item()


@pytest.mark.parametrize("name", list(SECOND))
def test_second_backward_allowed_exactly_where_torch_allows_it(name, device):
    p, p_err = _second_backward(pg, SECOND[name], device)
    t, _ = _second_backward(torch, SECOND[name])
    assert p == t, f"{name}: paragrad {p}, torch {t}"
    if p == "works":
        assert p_err < 1e-5         # the second pass gives the same gradient again


def test_custom_function_ctx_keeps_its_own_fields_after_backward(device):
    def saved_after_backward(lib, x):
        y = _SavesUnused.make(lib, read=False).apply(x)
        y.sum().backward()
        ctx = y.grad_fn
        assert ctx.scale == 2.0 and ctx.kept.shape == (2,)       # what the user set stays
        ctx.saved_tensors                                        # what it saved is freed
    check_raises(saved_after_backward, np.array([1.0, 2.0], np.float32), device=device, requires_grad=True,
                 match="backward through the graph a second time", error=RuntimeError)
