"""Autograd semantics, one test per rule, each checked against what torch does.

Every test builds the same computation in paragrad and in torch (CPU) and compares gradients,
flags and errors. Values come from small fixed arrays so failures are easy to read.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import paragrad as pg

from tests.helpers import check_raises

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=np.float32)


def both(a=X, requires_grad=True, device="cpu", dtype="float32"):
    """The same values as a paragrad and a torch tensor."""
    a = np.asarray(a, dtype=dtype)
    return (pg.tensor(a, device=device, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def close(p, t, atol=1e-6, rtol=1e-5):
    """Compare a paragrad tensor (or None) with a torch tensor (or None): shape, dtype, values."""
    if t is None:
        assert p is None, "torch gives None here"
        return
    assert p is not None, "paragrad gives None where torch gives a tensor"
    assert tuple(p.shape) == tuple(t.shape)
    assert p.dtype.name == str(t.dtype).replace("torch.", "")
    np.testing.assert_allclose(p.detach().cpu().numpy(), t.detach().numpy(), atol=atol, rtol=rtol)


# ---- the graph is built per op, per call ---------------------------------------------------------
def test_dynamic_graph_follows_python_control_flow(device):
    def f(x, lib):
        y = x * 2
        if float(y.detach().sum()) > 0:         # a data-dependent branch: each call records what ran
            y = y.exp()
        else:
            y = y * y
        return y.sum()

    for vals in (X, -np.abs(X)):
        p, t = both(vals, device=device)
        f(p, pg).backward()
        f(t, torch).backward()
        close(p.grad, t.grad)
    p, _ = both(device=device)
    assert (p * 2).grad_fn is not (p * 2).grad_fn      # a new node for every op call


def test_scalar_backward_without_gradient(device):
    p, t = both(device=device)
    (p * p).sum().backward()
    (t * t).sum().backward()
    close(p.grad, t.grad)
    # a 1-element non-0-d output also gets an implicit gradient of ones
    p, t = both([3.0], device=device)
    (p * p).backward()
    (t * t).backward()
    close(p.grad, t.grad)


def test_nonscalar_backward_needs_gradient(device):
    p, t = both(device=device)
    x = {pg: p, torch: t}
    check_raises(lambda L: (x[L] * 2).backward(), match="grad can be implicitly created only for scalar outputs")
    assert p.grad is None


def test_backward_with_explicit_gradient(device):
    p, t = both(device=device)
    g = np.arange(6, dtype=np.float32).reshape(2, 3)
    (p * p).backward(gradient=pg.tensor(g, device=device))
    (t * t).backward(gradient=torch.tensor(g))
    close(p.grad, t.grad)
    x = {pg: p, torch: t}
    check_raises(lambda L: (x[L] * 2).backward(L.ones(3, device=x[L].device)), match="Mismatch in shape")


def test_backward_without_requires_grad_raises(device):
    check_raises(lambda L, x: x.sum().backward(), X, device=device, match="does not require grad")


def test_second_backward_needs_retain_graph(device):
    p, t = both(device=device)
    lp, lt = (p * p).sum(), (t * t).sum()       # mul saves its inputs for backward
    lp.backward()
    lt.backward()
    loss = {pg: lp, torch: lt}
    check_raises(lambda L: loss[L].backward(),
                 match="backward through the graph a second time.*retain_graph=True")


def test_retain_graph_allows_second_backward_and_accumulates(device):
    p, t = both(device=device)
    lp, lt = (p * p).sum(), (t * t).sum()
    for _ in range(2):
        lp.backward(retain_graph=True)
        lt.backward(retain_graph=True)
    close(p.grad, t.grad)
    lp.backward()     # a last one without retain_graph still works
    lt.backward()
    close(p.grad, t.grad)


def test_leaf_grad_accumulates_across_calls(device):
    p, t = both(device=device)
    for k in range(3):
        (p * (k + 1)).sum().backward()
        (t * (k + 1)).sum().backward()
        close(p.grad, t.grad)
    p.grad = None
    t.grad = None
    p.exp().sum().backward()
    t.exp().sum().backward()
    close(p.grad, t.grad)


def test_long_chain_has_no_recursion_limit():
    """100,000 recorded ops: the engine walks the graph without recursion, and freeing the
    graph afterwards doesn't recurse either."""
    n = 100_000
    x = pg.tensor([1.0, 2.0], requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.0001
    y.sum().backward()
    del y
    expected = np.float32(1.0)
    for _ in range(n):              # the same float32 products torch and paragrad form
        expected = np.float32(expected * np.float32(1.0001))
    np.testing.assert_allclose(x.grad.cpu().numpy(), [expected, expected], rtol=1e-6)
    z = x
    for _ in range(n):
        z = z + 1.0
    z.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [expected + 1, expected + 1], rtol=1e-6)


# ---- grad mode -----------------------------------------------------------------------------------
def test_no_grad_and_enable_grad(device):
    p, _ = both(device=device)
    assert pg.is_grad_enabled()
    with pg.no_grad():
        assert not pg.is_grad_enabled()
        y = p * 2
        with pg.enable_grad():
            assert pg.is_grad_enabled()
            z = p * 2
        assert not pg.is_grad_enabled()
    assert pg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    assert z.requires_grad and z.grad_fn is not None


def test_grad_mode_decorators(device):
    p, _ = both(device=device)

    @pg.no_grad()
    def f(x):
        return x * 2

    @pg.no_grad                     # torch also accepts the bare decorator
    def g(x):
        return x * 2

    @pg.enable_grad()
    def h(x):
        return x * 2

    assert not f(p).requires_grad and not g(p).requires_grad
    with pg.no_grad():
        assert h(p).requires_grad
    assert pg.is_grad_enabled()
    assert f.__name__ == "f"


def test_set_grad_enabled_forms(device):
    p, _ = both(device=device)
    pg.set_grad_enabled(False)          # as a function: takes effect at once, like torch
    try:
        assert not pg.is_grad_enabled()
        assert not (p * 2).requires_grad
    finally:
        pg.set_grad_enabled(True)
    assert pg.is_grad_enabled()
    with pg.set_grad_enabled(False):    # as a context manager: restored on exit
        assert not (p * 2).requires_grad
    assert pg.is_grad_enabled()
    with pg.no_grad():
        with pg.set_grad_enabled(True):
            assert (p * 2).requires_grad
        assert not pg.is_grad_enabled()

    @pg.set_grad_enabled(False)         # as a decorator: doesn't change the mode when applied
    def f(x):
        return x * 2

    assert pg.is_grad_enabled()
    assert not f(p).requires_grad
    assert pg.is_grad_enabled()


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with pg.no_grad():
            raise ValueError
    assert pg.is_grad_enabled()


def test_inference_mode(device):
    p, _ = both(device=device)
    with pg.inference_mode():
        assert not pg.is_grad_enabled()
        assert not (p * 2).requires_grad
    for lib in (pg, torch):
        with lib.no_grad():
            with lib.inference_mode(False):     # re-enables grad mode, as torch does
                assert lib.is_grad_enabled()

    @pg.inference_mode()
    def f(x):
        return x * 2

    @pg.inference_mode
    def g(x):
        return x * 2

    assert not f(p).requires_grad and not g(p).requires_grad
    assert pg.is_grad_enabled()


# ---- detach --------------------------------------------------------------------------------------
def test_detach_shares_data(device):
    p, t = both(device=device)
    for x in (p, t):
        y = x * 2
        d = y.detach()
        assert not d.requires_grad and d.grad_fn is None and d.is_leaf
        d.add_(1)                       # in place on the detached alias: y sees it
        assert float(y.detach()[0, 0]) == float(d[0, 0]) == 2.0
        assert y.requires_grad


def test_detach_inplace(device):
    p, t = both(device=device)
    for x in (p, t):
        y = x * 2
        assert y.detach_() is y
        assert not y.requires_grad and y.grad_fn is None and y.is_leaf
        (y * x).sum().backward()        # y is a constant now
    close(p.grad, t.grad)


# ---- retain_grad and hooks -----------------------------------------------------------------------
def test_retain_grad_on_non_leaf(device):
    p, t = both(device=device)
    ys = []
    for x in (p, t):
        y = x * 2
        y.retain_grad()
        assert y.retains_grad
        loss = (y * y).sum()
        loss.backward(retain_graph=True)
        ys.append(y.grad * 1)
        loss.backward()                 # torch accumulates retained grads too
        ys.append(y)
    close(ys[0], ys[2])
    close(ys[1].grad, ys[3].grad)
    close(p.grad, t.grad)
    assert (p * 2).grad is None         # not retained: no .grad on a non-leaf


def test_retain_grad_requires_grad():
    check_raises(lambda L, x: x.retain_grad(), X, match="requires_grad=False")


def test_hook_on_leaf(device):
    p, t = both(device=device)
    seen = []
    for x in (p, t):
        h = x.register_hook(lambda g: seen.append(g.detach().clone()) or g * 3)
        (x * x).sum().backward()
        h.remove()
        (x * x).sum().backward()        # removed: plain gradient added
    close(p.grad, t.grad)
    close(seen[0], seen[1])
    assert len(seen) == 2


def test_hook_on_non_leaf(device):
    p, t = both(device=device)
    for x in (p, t):
        y = x * x
        y.register_hook(lambda g: g + 1)
        h = y.register_hook(lambda g: g * 10)     # hooks run in registration order
        y.exp().sum().backward(retain_graph=True)
        h.remove()
        y.exp().sum().backward()
    close(p.grad, t.grad)


def test_hooks_apply_in_autograd_grad(device):
    p, t = both(device=device)
    res = []
    for x, lib in ((p, pg), (t, torch)):
        x.register_hook(lambda g: g * 2)
        y = x * 3
        y.register_hook(lambda g: g + 1)
        res += [lib.autograd.grad((y * y).sum(), x, retain_graph=True)[0],
                lib.autograd.grad((y * y).sum(), y)[0]]
    close(res[0], res[2])
    close(res[1], res[3])


def test_hook_returning_none_keeps_gradient(device):
    p, t = both(device=device)
    for x in (p, t):
        x.register_hook(lambda g: None)
        (x * 2).sum().backward()
    close(p.grad, t.grad)


def test_hook_needs_requires_grad():
    check_raises(lambda L, x: x.register_hook(lambda g: g), X, match="doesn't require gradient")


# ---- graph shapes --------------------------------------------------------------------------------
def test_diamond_graph_sums_gradients(device):
    p, t = both(device=device)
    for x in (p, t):
        a = x.exp()
        b = x * 3
        (a * b + x * x + x).sum().backward()
    close(p.grad, t.grad)


def test_broadcast_inputs_get_reduced_gradients(device):
    rng = np.random.default_rng(0)
    shapes = [(3, 1), (4,), (1, 4), ()]
    arrs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    ps = [pg.tensor(a, device=device, requires_grad=True) for a in arrs]
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    for a, b, c, d in (ps, ts):
        ((a + b) * c - d).exp().sum().backward()
    for p, t in zip(ps, ts):
        close(p.grad, t.grad)


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "uint8"])
def test_non_float_cannot_require_grad(device, dtype):
    tt = torch.tensor([1, 0]).to(getattr(torch, dtype))
    pt = pg.tensor([1, 0], dtype=getattr(pg, dtype), device=device)
    x = {pg: pt, torch: tt}
    check_raises(lambda L: x[L].requires_grad_(), match="floating point")
    check_raises(lambda L: setattr(x[L], "requires_grad", True), match="floating point")
    check_raises(lambda L: L.tensor([1, 0], dtype=getattr(L, dtype), device=x[L].device, requires_grad=True),
                 match="floating point")
    pt.requires_grad_(False)           # turning it off is always fine
    assert not pt.requires_grad


@pytest.mark.parametrize("op", [
    lambda x: x.argmax(), lambda x: x.argmin(dim=1), lambda x: x > 0, lambda x: x == x,
    lambda x: x.isnan(), lambda x: x.long(), lambda x: x.bool(),
])
def test_integer_outputs_never_require_grad(device, op):
    p, t = both(device=device)
    assert op(t).requires_grad is False
    out = op(p)
    assert out.requires_grad is False and out.grad_fn is None


def test_requires_grad_propagation(device):
    p, t = both(device=device)
    c_p, c_t = both(requires_grad=False, device=device)
    for x, c in ((p, c_p), (t, c_t)):
        assert x.is_leaf and c.is_leaf and x.grad_fn is None and c.grad_fn is None
        y = x * c
        assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
        z = c * 2
        assert not z.requires_grad and z.is_leaf and z.grad_fn is None
    assert (p * c_p).grad is None
    # a graph node knows where its inputs' gradients go
    assert len((p * c_p).grad_fn.next_functions) == 2


def test_requires_grad_false_on_non_leaf_raises(device):
    p, t = both(device=device)
    y = {pg: p * 2, torch: t * 2}
    leaf_only = "only change requires_grad flags of leaf variables"
    check_raises(lambda L: setattr(y[L], "requires_grad", False), match=leaf_only)
    check_raises(lambda L: y[L].requires_grad_(False), match=leaf_only)
    for x in (t, p):
        y = x * 2
        y.requires_grad_(True)          # a no-op on a non-leaf that already requires grad
        assert y.requires_grad


# ---- autograd.grad -------------------------------------------------------------------------------
def test_autograd_grad_returns_without_touching_grad(device):
    p, t = both(device=device)
    q, u = both(X * 2, device=device)
    gp = pg.autograd.grad((p * q).sum(), [p, q])
    gt = torch.autograd.grad((t * u).sum(), [t, u])
    assert isinstance(gp, tuple) and len(gp) == 2
    for a, b in zip(gp, gt):
        close(a, b)
    assert p.grad is None and q.grad is None
    (gp1,) = pg.autograd.grad((p * p).sum(), p)      # a single input also gives a tuple
    close(gp1, torch.autograd.grad((t * t).sum(), t)[0])


def test_autograd_grad_non_leaf_input_and_grad_outputs(device):
    p, t = both(device=device)
    g = np.full(X.shape, 0.5, dtype=np.float32)
    res = []
    for x, lib in ((p, pg), (t, torch)):
        y = x * 3
        z = y.exp()
        go = pg.tensor(g, device=device) if lib is pg else torch.tensor(g)
        res.append(lib.autograd.grad(z, y, grad_outputs=go)[0])
    close(res[0], res[1])
    assert p.grad is None


def test_autograd_grad_allow_unused(device):
    p, t = both(device=device)
    q, u = both(device=device)
    x, unused = {pg: p, torch: t}, {pg: q, torch: u}
    check_raises(lambda L: L.autograd.grad((x[L] * 2).sum(), [x[L], unused[L]]), match="allow_unused=True")
    gp = pg.autograd.grad((p * 2).sum(), [p, q], allow_unused=True)
    gt = torch.autograd.grad((t * 2).sum(), [t, u], allow_unused=True)
    close(gp[0], gt[0])
    assert gp[1] is None and gt[1] is None
    gp = pg.autograd.grad((p * 2).sum(), [p, q], materialize_grads=True)
    gt = torch.autograd.grad((t * 2).sum(), [t, u], materialize_grads=True)
    close(gp[1], gt[1])


def test_autograd_backward_function(device):
    p, t = both(device=device)
    pg.autograd.backward([(p * p).sum(), (p * 2).sum()])
    torch.autograd.backward([(t * t).sum(), (t * 2).sum()])
    close(p.grad, t.grad)


# ---- higher order --------------------------------------------------------------------------------
@pytest.mark.parametrize("f", [lambda x: x ** 3, lambda x: x.exp(), lambda x: x.tanh(),
                               lambda x: x.sigmoid(), lambda x: (x * x).sin()],
                         ids=["pow3", "exp", "tanh", "sigmoid", "sin_sq"])
def test_double_backward(device, f):
    p, t = both(X.astype(np.float64), device=device, dtype="float64")
    for x, lib in ((p, pg), (t, torch)):
        (g,) = lib.autograd.grad(f(x).sum(), x, create_graph=True)
        assert g.requires_grad
        g.sum().backward()
    close(p.grad, t.grad, atol=1e-10, rtol=1e-9)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_backward_create_graph_keeps_grad_differentiable(device):
    p, t = both(X.astype(np.float64), device=device, dtype="float64")
    for x in (p, t):
        (x ** 3).sum().backward(create_graph=True)
        assert x.grad.requires_grad
        g = x.grad
        x.grad = None
        g.sum().backward()
    close(p.grad, t.grad, atol=1e-10)


# ---- custom Functions ----------------------------------------------------------------------------
def _square_fn(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, k):
            ctx.save_for_backward(x, w)
            ctx.k = k
            return x * x * w * k

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            gx = g * 2 * x * w * ctx.k if ctx.needs_input_grad[0] else None
            gw = g * x * x * ctx.k if ctx.needs_input_grad[1] else None
            return gx, gw, None
    return Square


def test_custom_function(device):
    p, t = both(device=device)
    wp, wt = both(X + 1, device=device)
    for x, w, lib in ((p, wp, pg), (t, wt, torch)):
        y = _square_fn(lib).apply(x, w, 3.0)
        assert y.requires_grad and y.grad_fn is not None
        y.sum().backward()
    close(p.grad, t.grad)
    close(wp.grad, wt.grad)


def test_custom_function_needs_input_grad(device):
    seen = {}
    (px, tx), (pw, tw) = both(device=device), both(requires_grad=False, device=device)
    for lib, x, w in ((pg, px, pw), (torch, tx, tw)):

        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b, scale):
                return a * b * scale

            @staticmethod
            def backward(ctx, g):
                seen[lib.__name__] = ctx.needs_input_grad
                return g, None, None

        F.apply(x, w, 2.0).sum().backward()
    assert seen["paragrad"] == seen["torch"] == (True, False, False)


def test_custom_function_saved_tensors_freed(device):
    def backward_twice(lib, x):
        y = _square_fn(lib).apply(x, x.detach() + 1, 1.0).sum()
        y.backward()
        y.backward()
    check_raises(backward_twice, X, device=device, requires_grad=True,
                 match="backward through the graph a second time")


def test_custom_function_multi_output(device):
    def make(lib):
        class SinCos(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin(), x.cos()

            @staticmethod
            def backward(ctx, gs, gc):
                (x,) = ctx.saved_tensors
                return gs * x.cos() - gc * x.sin()
        return SinCos

    p, t = both(device=device)
    for x, lib in ((p, pg), (t, torch)):
        s, c = make(lib).apply(x)
        assert s.grad_fn is c.grad_fn
        (s * 2 + c * c).sum().backward()
    close(p.grad, t.grad)
    p2, t2 = both(device=device)
    for x, lib in ((p2, pg), (t2, torch)):
        s, _ = make(lib).apply(x)       # only one output used: the other's grad is zeros
        s.sum().backward()
    close(p2.grad, t2.grad)


def test_custom_function_non_tensor_output_and_mark_non_differentiable(device):
    def make(lib):
        class SortLike(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                idx = x.argmax(dim=1)
                y = x * 2
                ctx.mark_non_differentiable(idx)
                return y, idx

            @staticmethod
            def backward(ctx, g, gidx):
                return g * 2
        return SortLike

    p, t = both(device=device)
    for x, lib in ((p, pg), (t, torch)):
        y, idx = make(lib).apply(x)
        assert not idx.requires_grad
        y.sum().backward()
    close(p.grad, t.grad)


def test_custom_function_setup_context_style(device):
    def make(lib):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(x, k):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.k = inputs[1]

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None
        return Scale

    p, t = both(device=device)
    for x, lib in ((p, pg), (t, torch)):
        make(lib).apply(x, 3.0).exp().sum().backward()
    close(p.grad, t.grad)


@pytest.mark.parametrize("bad, err", [
    (lambda g: (g, g), "incorrect number of gradients"),
    (lambda g: g.sum(0, keepdim=True), "invalid gradient at index 0"),
    (lambda g: g.reshape(-1), "invalid gradient at index 0"),
])
def test_custom_function_gradients_are_validated(device, bad, err):
    def backward_through(lib, x):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return bad(g)

        F.apply(x).sum().backward()
    check_raises(backward_through, X, device=device, requires_grad=True, match=err, error=RuntimeError)


def test_custom_function_gradient_broadcast_and_cast(device):
    """A gradient with extra broadcast dims, or another float dtype, is summed and cast."""
    p, t = both(device=device)
    for lib, x in ((pg, p), (torch, t)):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g.expand(4, *g.shape).double(), None

        F.apply(x).sum().backward()
    close(p.grad, t.grad)


# ---- gradient buffers ----------------------------------------------------------------------------
def test_leaf_grads_are_not_aliased(device):
    pa, ta = both(device=device)
    pb, tb = both(device=device)
    for a, b in ((pa, pb), (ta, tb)):
        (a + b).sum().backward()
        a.grad.mul_(2)
    close(pb.grad, tb.grad)
    close(pa.grad, ta.grad)
    # the root gradient the user passed is not stolen either
    p, _ = both(device=device)
    g = pg.ones(2, 3, device=device)
    (p + 0).backward(g)
    p.grad.mul_(5)
    assert float(g.sum()) == 6.0


def test_accumulation_through_views(device):
    p, t = both([1.0, 2.0, 3.0], device=device)
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    for x, lib in ((p, pg), (t, torch)):
        wt = pg.tensor(w, device=device) if lib is pg else torch.tensor(w)
        y = x.reshape(3, 1).expand(3, 4)
        loss = (y * wt).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        (x.reshape(1, 3).expand(2, 3) * 2).sum().backward()
    close(p.grad, t.grad)


def test_grad_dtype_matches_leaf(device):
    p, t = both(device=device)
    q, u = both(X.astype(np.float64), device=device, dtype="float64")
    for x, y in ((p, q), (t, u)):
        (x.double() * y).sum().backward()
        (x * y).sum().backward()        # promotion to float64 inside the op
    close(p.grad, t.grad)
    close(q.grad, u.grad)
    assert p.grad.dtype is pg.float32


def test_grad_assignment_and_zeroing(device):
    p, t = both(device=device)
    for x in (p, t):
        (x * 2).sum().backward()
        x.grad.zero_()
        (x * 3).sum().backward()
    close(p.grad, t.grad)


def test_grad_accumulates_in_place(device):
    """As in torch, a second backward adds into the existing .grad tensor (optimizers and
    captured graphs keep references to it)."""
    p, t = both(device=device)
    firsts = []
    for x in (p, t):
        (x * 2).sum().backward()
        firsts.append(x.grad)
        (x * 3).sum().backward()
        assert x.grad is firsts[-1]
    close(firsts[0], firsts[1])


def test_retained_grad_is_a_private_writable_tensor(device):
    p, t = both(device=device)
    for x in (p, t):
        y = x * 1
        y.retain_grad()
        y.sum().backward()
        y.grad.mul_(2)                  # must not fail or reach x.grad
    close(p.grad, t.grad)


@pytest.mark.parametrize("value, err", [
    (np.zeros(3, np.float32), RuntimeError),                # wrong size
    (np.zeros((2, 3), np.float64), RuntimeError),           # wrong dtype
    (3.0, TypeError),                                       # not a tensor
])
def test_grad_assignment_is_checked(device, value, err):
    p, t = both(device=device)
    pv = pg.tensor(value, device=device) if isinstance(value, np.ndarray) else value
    tv = torch.tensor(value) if isinstance(value, np.ndarray) else value
    x, v = {pg: p, torch: t}, {pg: pv, torch: tv}
    check_raises(lambda L: setattr(x[L], "grad", v[L]), error=err)
    assert p.grad is None
    p.grad = pg.ones(2, 3, device=device)      # a matching one is fine; None clears it
    p.grad = None


def test_backward_inputs_limits_accumulation(device):
    pa, ta = both(device=device)
    pb, tb = both(X + 1, device=device)
    res = []
    for a, b in ((pa, pb), (ta, tb)):
        y = a * b
        z = y * y
        z.sum().backward(inputs=[a, y])
        res.append(y.grad)
        assert b.grad is None
    close(pa.grad, ta.grad)
    close(res[0], res[1])


def test_in_place_accumulation_never_touches_outside_tensors(device):
    """.grad is updated in place on later backwards, so it must never be a tensor that a
    hook kept or that a custom Function's backward handed out (torch copies those too)."""
    p, t = both(device=device)
    kept = {}
    for x, lib in ((p, pg), (t, torch)):
        seen = []
        x.register_hook(lambda g: seen.append(g))
        const = (pg.full((2, 3), 5.0, device=device) if lib is pg else torch.full((2, 3), 5.0))

        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 1

            @staticmethod
            def backward(ctx, g):
                return const

        (x * 2).sum().backward()
        (x * 3).sum().backward()
        y = x.detach() * 1
        y.requires_grad_()
        F.apply(y).sum().backward()
        F.apply(y).sum().backward()
        kept[lib.__name__] = (seen, const, y.grad)
    for a, b in zip(kept["paragrad"][0], kept["torch"][0]):
        close(a, b)
    close(kept["paragrad"][1], kept["torch"][1])
    close(kept["paragrad"][2], kept["torch"][2])
    close(p.grad, t.grad)


# ---- version counters: in-place writes to tensors saved for backward ---------------------------
def test_version_counter_counts_inplace_writes_and_is_shared_by_views(device):
    x = pg.zeros(4, device=device)
    v = x[1:]                          # a view shares the counter
    assert x._version == 0
    x.add_(1)
    v.mul_(2)
    x[0] = 5
    assert x._version == v._version == 3
    assert x.clone()._version == 0 and x.flip(0)._version == 0    # copies start afresh
    assert x.detach()._version == 3


@pytest.mark.parametrize("write", [lambda t: t.add_(1), lambda t: t.__setitem__(0, 2.0),
                                   lambda t: t.copy_(pg.ones_like(t)), lambda t: t.fill_(3.0),
                                   lambda t: t.reshape(2, 2).mul_(2)],
                         ids=["add_", "setitem", "copy_", "fill_", "through_a_view"])
def test_backward_refuses_a_saved_tensor_written_in_place(write, device):
    w = pg.ones(4, device=device, requires_grad=True)
    x = pg.arange(4.0, device=device)
    y = (x.exp() * w).sum()            # mul saves x.exp()'s output and w
    e = pg.arange(4.0, device=device)
    z = (e * w).sum()                  # mul saves e
    with pg.no_grad():
        write(e)
    y.backward()                       # untouched: fine
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*version"):
        z.backward()


def test_optimizer_step_then_backward_through_old_graph_raises():
    def step_then_backward(lib):
        w = lib.ones(3, requires_grad=True)
        x = lib.ones(3, requires_grad=True)
        loss = (w * x).sum()
        loss.backward(retain_graph=True)
        lib.optim.SGD([w], lr=0.1).step()   # writes w in place
        loss.backward()
    check_raises(step_then_backward, match="inplace")


def test_inplace_in_grad_mode_keeps_gradients_right(device):
    a = pg.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    b = a * 2
    c = b * b                          # saves b
    b.add_(1)                          # grad mode: b gets a new buffer, c's saved b keeps its value
    (c.sum() + b.sum()).backward()
    assert a.grad.tolist() == [10.0, 18.0, 26.0]     # 8a + 2


def test_second_derivative_through_strided_slice_and_narrow():
    """A slice's backward is itself recorded (its gradient is the slice again), so create_graph
    sees through slicing and narrow."""
    import torch
    for fn in (lambda x: (x[1:5:2] ** 3).sum(), lambda x: (x.narrow(0, 1, 3) ** 3).sum()):
        got = []
        for lib in (pg, torch):
            x = lib.tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
            (g,) = lib.autograd.grad(fn(x), x, create_graph=True)
            (h,) = lib.autograd.grad(g.sum(), x)
            got.append((g.tolist(), h.tolist()))
        assert got[0] == got[1]


# ---- gradients of many slices of one tensor, added in place --------------------------------
def _slices_loss(lib, x, hooks):
    """emb[:, t] read at every step (an RNN's inputs), one slice read twice, x read whole too."""
    total = (x * 0.5).sum()                                   # a gradient that is not a slice's
    for t in range(x.shape[1]):
        s = x[:, t, :]
        if hooks is not None and t == 2:
            s.register_hook(lambda g: g * 3)                  # a hook on one slice's gradient
            s.retain_grad()
            hooks.append(s)
        total = total + (s * s).sum() + (x[:, t, 1:] ** 3).sum()
    return total + (x[:, 1] * 2).sum()


@pytest.mark.parametrize("whole_first", [False, True])
def test_gradients_of_many_slices_match_torch(whole_first):
    """The engine adds a slice's gradient into the input's gradient buffer in place when that
    buffer is its own: the result equals torch's, hooks and retain_grad included, whichever
    gradient arrives first."""
    a = np.random.default_rng(0).standard_normal((3, 5, 4))
    grads, seen = [], []
    for lib in (pg, torch):
        x = lib.tensor(a, requires_grad=True)
        hooks = []
        loss = _slices_loss(lib, x if not whole_first else x * 1.0, hooks)
        loss.backward()
        grads.append(np.asarray(x.grad.tolist()))
        seen.append(np.asarray(hooks[0].grad.tolist()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(seen[0], seen[1], rtol=1e-12, atol=1e-12)


def test_autograd_grad_of_many_slices_leaves_no_shared_buffer():
    """autograd.grad returns the summed gradient; a second call gives the same values (nothing
    was added into a buffer that outlives the first call)."""
    a = np.random.default_rng(1).standard_normal((2, 6, 3))
    x = pg.tensor(a, requires_grad=True)
    h = x * 2.0
    loss = sum((h[:, t] ** 2).sum() for t in range(6))
    g1, = pg.autograd.grad(loss, h, retain_graph=True)
    g2, = pg.autograd.grad(loss, h)
    np.testing.assert_allclose(g1.tolist(), (2 * 2 * a).tolist(), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(g1.tolist()), np.asarray(g2.tolist()))


def test_gradients_of_split_chunk_and_narrow_pieces_match_torch():
    """split/chunk/narrow pieces of one tensor, each used once or twice: their gradients meet
    in one buffer (added in place by the engine) and equal torch's."""
    a = np.random.default_rng(2).standard_normal((2, 3, 12))
    grads = []
    for lib in (pg, torch):
        x = lib.tensor(a, requires_grad=True)
        h = x * 1.5
        q, k, v = h.split(4, dim=2)
        c0, c1 = h.chunk(2, dim=1)[0], x.narrow(2, 3, 5)
        loss = (q * k).sum() + (v ** 2).sum() + (q.exp()).sum() + c0.sum() * 2 + (c1 ** 3).sum()
        loss.backward()
        grads.append(np.asarray(x.grad.tolist()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)
