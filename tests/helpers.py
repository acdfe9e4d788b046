"""One helper that checks an op against PyTorch, one that checks its gradient against float64
finite differences (tinygrad's helper_test_op, for paragrad), and one that checks a bad call
raises as in PyTorch (check_raises, tinygrad's helper_test_exception).

    check_op(lambda x, y: x * y, [(3, 4), (4,)], device=device)

runs the function on paragrad and on torch tensors holding the same random values (the lambda
works for both because paragrad's API is torch's), compares the outputs, then backpropagates
the same random cotangent through both and compares every input's gradient. A random
cotangent (not all-ones) is used because out.sum() hides errors: softmax's gradient of sum()
is zero whatever the implementation does.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import paragrad as pg
from paragrad.backends.base import fast_paths

# The pinned torch is 2.13; the GPU machines have an older one, which lacks a few things paragrad
# matches (norm layers' bias= and its repr, aminmax's derivative). Those comparisons skip there,
# with this reason printed; CI (torch 2.13) runs them all.
TORCH_VERSION = tuple(int(v) for v in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())
TORCH_2_13 = TORCH_VERSION >= (2, 13)
needs_torch_2_13 = pytest.mark.skipif(not TORCH_2_13, reason=f"needs torch 2.13 (the pinned one), this is {torch.__version__}")


def comparable_repr(m):
    """A module's repr as the installed torch would print it (no norm-layer bias= before 2.13)."""
    return repr(m) if TORCH_2_13 else re.sub(r"(affine=\w+), bias=\w+", r"\1", repr(m))


TOL = {  # (atol, rtol) per dtype: float32 tight; half precision looser
    "float64": (1e-9, 1e-7),
    "float32": (1e-5, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (5e-2, 5e-2),
}
INT_DTYPES = ("int32", "int64", "uint8", "int8", "int16")


def lib(x):
    """torch or paragrad, whichever x belongs to: check_op lambdas run on both, and call
    functional forms (lib(x).cat, lib(x).linalg.inv) through it."""
    return torch if isinstance(x, torch.Tensor) else pg


def like(x, data, dtype=None):
    """A tensor of x's library on x's device (index and value tensors inside check_op lambdas)."""
    if isinstance(x, torch.Tensor):
        return torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None)
    return pg.tensor(data, dtype=getattr(pg, dtype) if dtype else None, device=x.device)


def make_input(shape, dtype="float32", low=-2.0, high=2.0, rng=None):
    """Random values as a NumPy array of `dtype`; ints in [low, high), bools half True."""
    rng = rng or np.random.default_rng(0)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in INT_DTYPES:
        return rng.integers(int(low), int(high), size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(np.float64).astype(
        "float32" if dtype == "bfloat16" else dtype)


def _to_torch(a, dtype, requires_grad):
    t = torch.tensor(a)
    if dtype == "bfloat16":
        t = t.to(torch.bfloat16)
    return t.requires_grad_(requires_grad)


def _to_pg(a, dtype, device, requires_grad):
    return pg.tensor(a, dtype=getattr(pg, dtype if dtype != "bool" else "bool"),
                     device=device, requires_grad=requires_grad)


def _np(x):
    if isinstance(x, torch.Tensor):
        x = x.detach()
        return (x.float() if x.dtype == torch.bfloat16 else x).numpy()
    return np.asarray(x.detach().cpu().to(pg.float32 if x.dtype is pg.bfloat16 else x.dtype).numpy())


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [o for x in out for o in _flat(x)]
    return [out]


def assert_close(p, t, atol, rtol, what="output"):
    """Compare a paragrad result and a torch result: shape, dtype name and values."""
    if isinstance(t, torch.Tensor):
        assert isinstance(p, pg.Tensor), f"{what}: expected a Tensor, got {type(p).__name__}"
        assert tuple(p.shape) == tuple(t.shape), f"{what}: shape {tuple(p.shape)} != torch {tuple(t.shape)}"
        tname = str(t.dtype).replace("torch.", "")
        assert p.dtype.name == tname, f"{what}: dtype {p.dtype.name} != torch {tname}"
        # the backend buffer holds what the Tensor says (a bfloat16 tensor over a float32
        # buffer would feed later kernels the wrong bytes)
        assert str(p._data.dtype) == p.dtype.name, f"{what}: a {p.dtype.name} tensor over a {p._data.dtype} buffer"
        pa, ta = _np(p), _np(t)
        if ta.dtype == np.bool_ or ta.dtype.kind in "iu":
            np.testing.assert_array_equal(pa, ta, err_msg=what)
        else:
            np.testing.assert_allclose(pa.astype(np.float64), ta.astype(np.float64),
                                       atol=atol, rtol=rtol, equal_nan=True, err_msg=what)
    else:
        assert p == t or (isinstance(t, float) and abs(p - t) <= atol + rtol * abs(t)), \
            f"{what}: {p!r} != torch {t!r}"


def node_name(t):
    """The class name of t's grad_fn (torch's SqrtBackward0), or None."""
    fn = getattr(t, "grad_fn", None)
    return None if fn is None else type(fn).__name__


def assert_same_node_name(p, t, what="output"):
    """paragrad's grad_fn is named as torch's, by its class and by name()."""
    if not isinstance(t, torch.Tensor):
        return
    want = node_name(t)
    assert node_name(p) == want, f"{what}: grad_fn {node_name(p)}, torch's is {want}"
    assert want is None or p.grad_fn.name() == want, f"{what}: grad_fn.name() {p.grad_fn.name()}, torch's {want}"


def check_op(fn, shapes, dtype="float32", device="cpu", torch_fn=None, low=-2.0, high=2.0,
             grad=True, inputs=None, atol=None, rtol=None, seed=0):
    """Run fn on paragrad and torch inputs of the given shapes; compare outputs and gradients.

    `inputs` (NumPy arrays) overrides the random inputs; `torch_fn` is used for torch when the
    two libraries need different spellings. Gradients are checked for floating inputs when
    `grad` is true.
    """
    rng = np.random.default_rng(seed)
    arrays = inputs if inputs is not None else [make_input(s, dtype, low, high, rng) for s in shapes]
    dtypes = [str(a.dtype) if dtype != "bfloat16" else "bfloat16" for a in arrays]
    floating = [d.startswith("float") or d == "bfloat16" for d in dtypes]
    want_grad = [grad and f for f in floating]
    t_in = [_to_torch(a, d, g) for a, d, g in zip(arrays, dtypes, want_grad)]
    p_in = [_to_pg(a, d, device, g) for a, d, g in zip(arrays, dtypes, want_grad)]
    t_out = (torch_fn or fn)(*t_in)
    p_out = fn(*p_in)
    a0, r0 = TOL.get(dtype, (0, 0))
    atol, rtol = atol if atol is not None else a0, rtol if rtol is not None else r0
    t_flat, p_flat = _flat(t_out), _flat(p_out)
    assert len(t_flat) == len(p_flat), f"{len(p_flat)} outputs, torch gives {len(t_flat)}"
    for i, (p, t) in enumerate(zip(p_flat, t_flat)):
        assert_close(p, t, atol, rtol, f"output {i}")
        if torch_fn is None:        # the same call on both: the same grad_fn class name
            assert_same_node_name(p, t, f"output {i}")
    if not any(want_grad):
        return p_out
    t_loss, p_loss = 0, 0
    for i, (p, t) in enumerate(zip(p_flat, t_flat)):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            w = make_input(tuple(t.shape), "float64", -1, 1, np.random.default_rng(100 + i))
            wd = "bfloat16" if dtypes[0] == "bfloat16" else "float64"  # not input 0's int/bool dtype
            t_loss = t_loss + (t * _to_torch(w, wd, False).to(t.dtype)).sum()
            p_loss = p_loss + (p * _to_pg(w, wd, device, False).to(p.dtype)).sum()
    if isinstance(t_loss, int):
        return p_out
    t_loss.backward()
    p_loss.backward()
    for i, (p, t, g) in enumerate(zip(p_in, t_in, want_grad)):
        if not g:
            continue
        if t.grad is None:
            assert p.grad is None or not _np(p.grad).any(), f"grad {i}: torch has none, paragrad has one"
            continue
        assert p.grad is not None, f"grad {i}: paragrad computed no gradient"
        assert_close(p.grad, t.grad, atol * 10 if dtype != "float64" else atol, rtol * 10, f"grad of input {i}")
    return p_out


def fd_check(fn, shapes, device="cpu", low=-2.0, high=2.0, inputs=None, eps=1e-6, atol=1e-5,
             rtol=1e-4, seed=0):
    """Analytic gradients of sum(fn(*x) * w) against central finite differences, float64."""
    rng = np.random.default_rng(seed)
    arrays = inputs if inputs is not None else [make_input(s, "float64", low, high, rng) for s in shapes]
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    xs = [pg.tensor(a, dtype=pg.float64, device=device, requires_grad=True) for a in arrays]
    out = _flat(fn(*xs))
    ws = [make_input(tuple(o.shape), "float64", -1, 1, np.random.default_rng(200 + i)) for i, o in enumerate(out)]

    def loss_of(arrs):
        with pg.no_grad():
            res = _flat(fn(*[pg.tensor(a, dtype=pg.float64, device=device) for a in arrs]))
            return sum(float((_np(o) * w).sum()) for o, w in zip(res, ws) if o.dtype.is_floating_point)

    loss = None
    for o, w in zip(out, ws):
        if o.dtype.is_floating_point and o.requires_grad:
            term = (o * pg.tensor(w, dtype=pg.float64, device=device)).sum()
            loss = term if loss is None else loss + term
    assert loss is not None, "fd_check: no differentiable output"
    loss.backward()
    for i, (x, a) in enumerate(zip(xs, arrays)):
        numeric = np.zeros_like(a)
        flat, nflat = a.reshape(-1), numeric.reshape(-1)
        for j in range(flat.size):
            orig = flat[j]
            flat[j] = orig + eps
            up = loss_of(arrays)
            flat[j] = orig - eps
            down = loss_of(arrays)
            flat[j] = orig
            nflat[j] = (up - down) / (2 * eps)
        analytic = _np(x.grad) if x.grad is not None else np.zeros_like(a)
        np.testing.assert_allclose(analytic, numeric, atol=atol, rtol=rtol,
                                   err_msg=f"finite-difference gradient of input {i}")


def _builtin_base(exc_type):
    """The first built-in exception class in exc_type's MRO (torch's own classes, such as
    torch.AcceleratorError, derive from the built-in ones users catch)."""
    import builtins
    return next(c for c in exc_type.__mro__ if getattr(builtins, c.__name__, None) is c)


def check_raises(fn, *inputs, match=None, error=None, device="cpu", requires_grad=False):
    """Make the same bad call through torch and through paragrad: fn(lib, *tensors), where the
    tensors hold `inputs` (arrays or nested lists) as lib's tensors (paragrad's on `device`). Both
    must raise, paragrad an exception of torch's (built-in) type; `match` is a regex paragrad's
    message must contain; `error`, where a test names the type, is the type torch must raise.
    -> (torch's, paragrad's) exception. One line per bad call:

        check_raises(lambda lib: lib.cat([]), match="non-empty")
        check_raises(lambda lib, x: x.view(4), [1.0, 2.0, 3.0], match="invalid for input of size 3")
    """
    def tensors(lib):
        if lib is torch:
            return [torch.tensor(np.asarray(a), requires_grad=requires_grad) for a in inputs]
        return [pg.tensor(np.asarray(a), device=device, requires_grad=requires_grad) for a in inputs]

    with pytest.raises(error or Exception) as t_info:
        fn(torch, *tensors(torch))
    want = _builtin_base(t_info.type)
    p_args = tensors(pg)
    try:
        fn(pg, *p_args)
    except Exception as e:  # noqa: BLE001 — compared with torch's type below
        p_exc = e
    else:
        raise AssertionError(f"paragrad raised nothing; torch raised {t_info.type.__name__}: {t_info.value}")
    assert isinstance(p_exc, want), (f"paragrad raised {type(p_exc).__name__}: {p_exc}; torch raised "
                                     f"{t_info.type.__name__}: {t_info.value}")
    if match is not None:
        assert re.search(match, str(p_exc)), f"paragrad's message {str(p_exc)!r} does not match {match!r}"
    return t_info.value, p_exc


def graph_size(t):
    """How many nodes t's graph holds (a recurrent layer's must not grow with the sequence)."""
    seen, stack = set(), [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(e[0] for e in node.next_edges if e is not None)
    return len(seen)


RECURRENT_STEPS = ("lstm_cell_forward", "lstm_cell_backward", "gru_cell_forward", "gru_cell_backward",
                   "rnn_cell_forward", "rnn_cell_backward")


def fake_recurrent_steps(monkeypatch, device, on_call, taken=True):
    """Replace the per-step recurrent fast paths of `device`'s backend with kernels that call
    on_call(name, args) and then, if `taken`, run the composition themselves (so results must
    not change) and say so; the whole-stack call (cuDNN's) is switched off so the steps run."""
    import paragrad.ops.neural.recurrent as rec
    backend = pg.zeros(1, device=device)._backend

    def fake(name):
        composed = getattr(rec, name.replace("_cell_", "_gates_"))

        def kernel(*args):
            on_call(name, args)
            if taken:
                with fast_paths(False):
                    composed(backend, *args)
            return taken
        return kernel
    for name in RECURRENT_STEPS:
        monkeypatch.setattr(backend, "fast_" + name, fake(name), raising=False)
    monkeypatch.setattr(backend, "fast_rnn", None, raising=False)
