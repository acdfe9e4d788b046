"""Module semantics against torch.nn.Module: registration, traversal order, modes, conversions,
state_dict/load_state_dict, forward hooks and repr. Each test builds the same model in
paragrad and torch and compares names, flags and values."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn as nn
from tests.helpers import _np


def both(build):
    """build(nn_module_namespace) for paragrad and for torch."""
    return build(nn), build(torch.nn)


def from_torch_state(tm, device="cpu"):
    """A torch module's state_dict as paragrad tensors (through NumPy)."""
    return OrderedDict((k, pg.tensor(v.detach().numpy(), device=device)) for k, v in tm.state_dict().items())


def mlp(lib):
    return lib.Sequential(lib.Linear(4, 8), lib.ReLU(), lib.Linear(8, 3))


def nested(lib):
    return lib.ModuleDict({
        "enc": lib.Sequential(lib.Linear(3, 5), lib.Tanh()),
        "heads": lib.ModuleList([lib.Linear(5, 2), lib.Linear(5, 2, bias=False)]),
        "drop": lib.Dropout(0.1),
    })


class WithBuffers:
    """The same small module class for both libraries (a factory: torch.nn.Module vs nn.Module)."""

    @staticmethod
    def make(lib, tensor):
        class Net(lib.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.Linear(2, 2)
                self.register_buffer("running", tensor([1.0, 2.0]))
                self.register_buffer("scratch", tensor([0.0]), persistent=False)
                self.register_buffer("absent", None)
                self.scale = lib.Parameter(tensor([3.0]))

            def forward(self, x):
                return self.fc(x) * self.scale + self.running
        return Net()


def buffered():
    return WithBuffers.make(nn, pg.tensor), WithBuffers.make(torch.nn, torch.tensor)


# ---- traversal -----------------------------------------------------------------------------------
@pytest.mark.parametrize("build", [mlp, nested], ids=["sequential", "nested"])
def test_named_parameters_order_and_prefixes(build):
    p, t = both(build)
    assert [n for n, _ in p.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [tuple(x.shape) for x in p.parameters()] == [tuple(x.shape) for x in t.parameters()]
    assert [n for n, _ in p.named_parameters(prefix="model")] == \
        [n for n, _ in t.named_parameters(prefix="model")]
    assert [n for n, _ in p.named_parameters(recurse=False)] == []
    assert all(isinstance(x, nn.Parameter) and x.requires_grad for x in p.parameters())


@pytest.mark.parametrize("build", [mlp, nested], ids=["sequential", "nested"])
def test_state_dict_keys_match_torch(build):
    p, t = both(build)
    assert list(p.state_dict()) == list(t.state_dict())
    assert [tuple(v.shape) for v in p.state_dict().values()] == [tuple(v.shape) for v in t.state_dict().values()]


@pytest.mark.parametrize("build", [mlp, nested], ids=["sequential", "nested"])
def test_modules_children_named_modules(build):
    p, t = both(build)
    assert [n for n, _ in p.named_modules()] == [n for n, _ in t.named_modules()]
    assert [type(m).__name__ for m in p.modules()] == [type(m).__name__ for m in t.modules()]
    assert [n for n, _ in p.named_children()] == [n for n, _ in t.named_children()]
    assert [type(m).__name__ for m in p.children()] == [type(m).__name__ for m in t.children()]
    assert [n for n, _ in p.named_modules(prefix="root")] == [n for n, _ in t.named_modules(prefix="root")]


def test_shared_modules_and_parameters_are_deduplicated():
    def build(lib):
        lin = lib.Linear(3, 3)
        return lib.Sequential(lin, lib.ReLU(), lin)
    p, t = both(build)
    assert [n for n, _ in p.named_parameters()] == [n for n, _ in t.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(p.parameters())) == 2
    assert [n for n, _ in p.named_modules()] == [n for n, _ in t.named_modules()]
    assert list(p.state_dict()) == list(t.state_dict())      # both names kept, as torch
    assert [n for n, _ in p.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in t.named_parameters(remove_duplicate=False)]

    def tied(lib):
        m = lib.Sequential(lib.Linear(4, 4, bias=False), lib.Linear(4, 4, bias=False))
        m[1].weight = m[0].weight
        return m
    p, t = both(tied)
    assert [n for n, _ in p.named_parameters()] == [n for n, _ in t.named_parameters()] == ["0.weight"]
    assert list(p.state_dict()) == list(t.state_dict()) == ["0.weight", "1.weight"]


def test_buffers_persistent_and_not():
    p, t = buffered()
    assert [n for n, _ in p.named_buffers()] == [n for n, _ in t.named_buffers()] == ["running", "scratch"]
    assert list(p.state_dict()) == list(t.state_dict())
    assert "scratch" not in p.state_dict() and "running" in p.state_dict()
    assert [n for n, _ in p.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert p.absent is None
    assert not p.running.requires_grad
    with pytest.raises(KeyError):
        p.register_buffer("a.b", pg.tensor([1.0]))
    with pytest.raises(TypeError):
        p.register_buffer("bad", [1.0])


def test_setattr_registration_rules():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError):
        m.weight = pg.zeros(2, 2)          # a plain tensor can't replace a Parameter
    m.bias = None
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    m.extra = nn.Parameter(pg.ones(1))
    assert [n for n, _ in m.named_parameters()] == ["weight", "extra"]
    del m.extra
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    with pytest.raises(AttributeError):
        m.missing


def test_apply_visits_children_first():
    p, t = both(nested)
    seen_p, seen_t = [], []
    assert p.apply(lambda m: seen_p.append(type(m).__name__)) is p
    t.apply(lambda m: seen_t.append(type(m).__name__))
    assert seen_p == seen_t


def test_train_eval_propagate():
    p, t = both(nested)
    for call in (lambda m: m.eval(), lambda m: m.train(), lambda m: m.train(False),
                 lambda m: m["enc"].train(True)):
        assert call(p) is not None
        call(t)
        assert [m.training for m in p.modules()] == [m.training for m in t.modules()]
    with pytest.raises(ValueError):
        p.train("yes")


def test_dropout_in_eval_is_identity(device):
    m = nn.Sequential(nn.Dropout(0.9)).to(device)
    x = pg.ones(100, device=device)
    m.eval()
    np.testing.assert_array_equal(_np(m(x)), np.ones(100))
    m.train()
    assert (_np(m(x)) == 0).sum() > 50


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none, device):
    m = mlp(nn).to(device)
    x = pg.randn(5, 4, device=device)
    m(x).sum().backward()
    assert all(q.grad is not None for q in m.parameters())
    m.zero_grad(set_to_none=set_to_none)
    for q in m.parameters():
        if set_to_none:
            assert q.grad is None
        else:
            assert q.grad is not None and not q.grad.requires_grad and not _np(q.grad).any()
    m(x).sum().backward()      # accumulates from zero again: equals one fresh backward
    g1 = [_np(q.grad).copy() for q in m.parameters()]
    m.zero_grad()
    m(x).sum().backward()
    for a, q in zip(g1, m.parameters()):
        np.testing.assert_allclose(a, _np(q.grad), rtol=1e-6)


def test_to_dtype_keeps_parameter_identity(device):
    p, _ = buffered()
    p.register_buffer("count", pg.tensor([3]))          # integer buffers keep their dtype
    p = p.to(device)
    before = {n: q for n, q in p.named_parameters()}
    out = p.to(pg.float64)
    assert out is p
    for n, q in p.named_parameters():
        assert q is before[n] and isinstance(q, nn.Parameter)
        assert q.dtype is pg.float64 and q.requires_grad and q.is_leaf
    assert p.running.dtype is pg.float64 and p.count.dtype is pg.int64
    y = p(pg.ones(3, 2, dtype=pg.float64, device=device))
    assert y.dtype is pg.float64
    p.float()
    assert all(q.dtype is pg.float32 for q in p.parameters())
    assert all(q is before[n] for n, q in p.named_parameters())


# ---- state_dict / load_state_dict ----------------------------------------------------------------
@pytest.mark.parametrize("build", [mlp, nested], ids=["sequential", "nested"])
def test_load_torch_state_dict_gives_same_outputs(build, device):
    p, t = both(build)
    p.to(device)
    result = p.load_state_dict(from_torch_state(t, device))
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    x = np.random.default_rng(0).standard_normal((6, 4 if build is mlp else 3)).astype(np.float32)
    if build is mlp:
        outs = [(p(pg.tensor(x, device=device)), t(torch.tensor(x)))]
    else:
        p.eval(), t.eval()
        hp = p["enc"](pg.tensor(x, device=device))
        ht = t["enc"](torch.tensor(x))
        outs = [(head_p(hp), head_t(ht)) for head_p, head_t in zip(p["heads"], t["heads"])]
    for yp, yt in outs:
        np.testing.assert_allclose(_np(yp), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    for (n, a), (_, b) in zip(p.state_dict().items(), t.state_dict().items()):
        np.testing.assert_array_equal(_np(a), b.numpy(), err_msg=n)


def test_state_dict_is_detached_and_shares_memory():
    m = nn.Linear(2, 3)
    sd = m.state_dict()
    assert not sd["weight"].requires_grad and not isinstance(sd["weight"], nn.Parameter)
    with pg.no_grad():
        m.weight.fill_(7.0)
    assert (_np(sd["weight"]) == 7.0).all()       # aliases, as torch (no copy)
    assert isinstance(m.state_dict(keep_vars=True)["weight"], nn.Parameter)


def test_load_state_dict_strict_raises_and_changes_nothing():
    m = mlp(nn)
    before = {k: _np(v).copy() for k, v in m.state_dict().items()}
    good = {k: pg.zeros(*v.shape) for k, v in m.state_dict().items()}

    missing = dict(good)
    del missing["2.bias"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "2.bias"'):
        m.load_state_dict(missing)
    unexpected = dict(good, extra=pg.zeros(1))
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "extra"'):
        m.load_state_dict(unexpected)
    for k, v in m.state_dict().items():          # the valid keys were not copied either
        np.testing.assert_array_equal(_np(v), before[k])

    t = mlp(torch.nn)
    with pytest.raises(RuntimeError, match="Missing key"):
        t.load_state_dict({k: torch.zeros(*v.shape) for k, v in t.state_dict().items() if k != "2.bias"})


def test_load_state_dict_non_strict_reports_keys():
    m, t = both(mlp)
    sd = {k: pg.zeros(*v.shape) for k, v in m.state_dict().items() if k != "0.weight"}
    sd["surplus"] = pg.ones(2)
    tsd = {k: torch.zeros(*v.shape) for k, v in t.state_dict().items() if k != "0.weight"}
    tsd["surplus"] = torch.ones(2)
    res, tres = m.load_state_dict(sd, strict=False), t.load_state_dict(tsd, strict=False)
    assert res.missing_keys == tres.missing_keys == ["0.weight"]
    assert res.unexpected_keys == tres.unexpected_keys == ["surplus"]
    missing, unexpected = res
    assert missing == ["0.weight"] and unexpected == ["surplus"]
    assert not _np(m[0].bias).any() and _np(m[0].weight).any()


@pytest.mark.parametrize("strict", [True, False])
def test_load_state_dict_shape_mismatch_raises(strict):
    m = mlp(nn)
    before = _np(m[0].bias).copy()
    sd = {k: pg.zeros(*v.shape) for k, v in m.state_dict().items()}
    sd["0.weight"] = pg.zeros(8, 5)
    with pytest.raises(RuntimeError, match="size mismatch for 0.weight"):
        m.load_state_dict(sd, strict=strict)
    np.testing.assert_array_equal(_np(m[0].bias), before)
    t = mlp(torch.nn)
    tsd = {k: torch.zeros(*v.shape) for k, v in t.state_dict().items()}
    tsd["0.weight"] = torch.zeros(8, 5)
    with pytest.raises(RuntimeError, match="size mismatch for 0.weight"):
        t.load_state_dict(tsd, strict=strict)


def test_load_state_dict_keeps_parameter_objects_and_buffers(device):
    p, t = buffered()
    p.to(device)
    params = list(p.parameters())
    p.load_state_dict(from_torch_state(t, device))
    assert all(a is b for a, b in zip(params, p.parameters()))
    x = np.ones((3, 2), np.float32)
    np.testing.assert_allclose(_np(p(pg.tensor(x, device=device))), t(torch.tensor(x)).detach().numpy(),
                               rtol=1e-6)


# ---- hooks -------------------------------------------------------------------------------------------
def test_forward_hooks(device):
    m = nn.Linear(3, 2).to(device)
    x = pg.ones(4, 3, device=device)
    calls = []

    def hook(mod, inputs, output):
        calls.append((mod, inputs, output))

    h = m.register_forward_hook(hook)
    y = m(x)
    assert len(calls) == 1 and calls[0][0] is m and isinstance(calls[0][1], tuple)
    assert calls[0][1][0] is x and calls[0][2] is y
    h2 = m.register_forward_hook(lambda mod, inp, out: out * 0)     # a returned value replaces output
    assert not _np(m(x)).any()
    h2.remove()
    h.remove()
    m(x)
    assert len(calls) == 2
    pre = m.register_forward_pre_hook(lambda mod, inp: (inp[0] * 0,))  # replaces the input
    np.testing.assert_allclose(_np(m(x)), np.broadcast_to(_np(m.bias), (4, 2)), rtol=1e-6)
    pre.remove()
    np.testing.assert_allclose(_np(m(x)), _np(y), rtol=1e-6)


# ---- repr -------------------------------------------------------------------------------------------
LAYERS = [
    lambda lib: lib.Linear(3, 4),
    lambda lib: lib.Linear(3, 4, bias=False),
    lambda lib: lib.Identity(),
    lambda lib: lib.Flatten(),
    lambda lib: lib.Unflatten(1, (2, 3)),
    lambda lib: lib.Dropout(0.25),
    lambda lib: lib.ReLU(),
    lambda lib: lib.ReLU(inplace=True),
    lambda lib: lib.GELU(approximate="tanh"),
    lambda lib: lib.SiLU(),
    lambda lib: lib.Tanh(),
    lambda lib: lib.Sigmoid(),
    lambda lib: lib.Softmax(dim=1),
    lambda lib: lib.LogSoftmax(dim=-1),
    lambda lib: lib.LeakyReLU(0.2),
    lambda lib: lib.Softplus(beta=2.0, threshold=10.0),
    lambda lib: lib.CrossEntropyLoss(),
    lambda lib: lib.MSELoss(),
    mlp,
    nested,
    lambda lib: lib.Sequential(lib.Sequential(lib.Linear(1, 1)), lib.ModuleList([lib.ReLU()])),
]


@pytest.mark.parametrize("build", LAYERS, ids=[f"layer{i}" for i in range(len(LAYERS))])
def test_repr_matches_torch(build):
    p, t = both(build)
    assert repr(p) == repr(t)


def test_module_without_forward_raises():
    with pytest.raises(NotImplementedError):
        nn.Module()(pg.ones(1))


def test_reassigning_keeps_registration_order():
    p, t = both(mlp)
    p[0] = nn.Linear(4, 8)
    t[0] = torch.nn.Linear(4, 8)
    p[0].weight = nn.Parameter(pg.zeros(8, 4))
    t[0].weight = torch.nn.Parameter(torch.zeros(8, 4))
    assert [n for n, _ in p.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert list(p.state_dict()) == list(t.state_dict())


def test_register_name_clashes_raise_like_torch():
    for lib, tensor in ((nn, pg.zeros), (torch.nn, torch.zeros)):
        m = lib.Linear(2, 2)
        m.plain = 3
        for call in (lambda: m.register_buffer("weight", tensor(2)),
                     lambda: m.register_parameter("plain", None),
                     lambda: m.add_module("bias", lib.ReLU()),
                     lambda: m.register_buffer("forward", tensor(2))):
            with pytest.raises(KeyError):
                call()


def test_load_state_dict_assign(device):
    p, t = both(lambda lib: lib.Linear(2, 3))
    p.to(device)
    w, b = pg.ones(3, 2, device=device), nn.Parameter(pg.zeros(3, device=device), requires_grad=False)
    p.load_state_dict({"weight": w, "bias": b}, assign=True)
    t.load_state_dict({"weight": torch.ones(3, 2),
                       "bias": torch.nn.Parameter(torch.zeros(3), requires_grad=False)}, assign=True)
    assert isinstance(p.weight, nn.Parameter) and p.weight._data is w._data
    assert p.bias is b
    assert [q.requires_grad for q in p.parameters()] == [q.requires_grad for q in t.parameters()] == [True, True]
    assert [n for n, _ in p.named_parameters()] == ["weight", "bias"]


def test_load_state_dict_casts_dtype_and_keeps_identity(device):
    m = nn.Linear(2, 2).to(device)
    w = m.weight
    m.load_state_dict({k: v.double() for k, v in m.state_dict().items()})
    assert m.weight is w and m.weight.dtype is pg.float32


def test_get_submodule_and_parameter():
    p, t = both(lambda lib: lib.Sequential(lib.Linear(2, 2), lib.Sequential(lib.Linear(2, 3))))
    assert type(p.get_submodule("1.0")).__name__ == "Linear" and p.get_submodule("") is p
    assert tuple(p.get_parameter("1.0.bias").shape) == tuple(t.get_parameter("1.0.bias").shape)
    for q in (p, t):
        with pytest.raises(AttributeError):
            q.get_submodule("1.5")
        with pytest.raises(AttributeError):
            q.get_parameter("1.0.nope")


def test_requires_grad_and_state_dict_prefix():
    p, t = both(mlp)
    assert p.requires_grad_(False) is p
    assert not any(q.requires_grad for q in p.parameters())
    assert list(p.state_dict(prefix="model.")) == list(t.state_dict(prefix="model."))


def test_deepcopy_and_pickle(device):
    import copy
    import pickle
    lin = nn.Linear(3, 3)
    m = nn.Sequential(lin, nn.ReLU(), lin).to(device)
    x = pg.ones(1, 3, device=device)
    for clone in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert clone[0] is clone[2] and isinstance(clone[0].weight, nn.Parameter)
        assert clone[0].weight is not lin.weight and clone[0].weight.requires_grad
        np.testing.assert_array_equal(_np(clone(x)), _np(m(x)))
        with pg.no_grad():
            clone[0].weight.fill_(5.0)
        assert not (_np(lin.weight) == 5.0).all()


def test_get_buffer_and_set_submodule():
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    assert m.get_buffer("1.running_mean") is m[1].running_mean
    with pytest.raises(AttributeError, match="not a buffer"):
        m.get_buffer("1.weight")
    m.set_submodule("0", nn.Linear(2, 3, bias=False))
    assert m[0].bias is None
    with pytest.raises(AttributeError):
        m.set_submodule("5", nn.ReLU(), strict=True)
    with pytest.raises(ValueError, match="not an nn.Module"):
        m.set_submodule("0", 3)


def test_extra_state_round_trips_through_state_dict():
    def make(lib):
        class Counter(lib.Module):
            def __init__(self):
                super().__init__()
                self.inner = lib.Linear(2, 2)
                self.calls = 0

            def get_extra_state(self):
                return {"calls": self.calls}

            def set_extra_state(self, state):
                self.calls = state["calls"]
        return Counter()

    keys = [list(make(lib).state_dict()) for lib in (nn, torch.nn)]   # the same keys as torch's
    assert keys[0] == keys[1] == ["_extra_state", "inner.weight", "inner.bias"]
    a, b = nn.Sequential(make(nn)), nn.Sequential(make(nn))
    a[0].calls = 7
    sd = a.state_dict()
    assert sd["0._extra_state"] == {"calls": 7}
    b.load_state_dict(sd)
    assert b[0].calls == 7
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "0._extra_state"'):
        b.load_state_dict({k: v for k, v in sd.items() if k != "0._extra_state"})
