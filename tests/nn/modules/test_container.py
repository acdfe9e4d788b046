"""Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict against torch.nn:
registration names (so state_dict keys match PyTorch's), indexing, slicing, insertion and
deletion, wrapping of plain tensors, reprs, and the optimizer seeing every parameter."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn as nn


def both(build):
    """build(nn_module_namespace) for paragrad and for torch."""
    return build(nn), build(torch.nn)


def nested(lib):
    return lib.ModuleDict({
        "enc": lib.Sequential(lib.Linear(3, 5), lib.Tanh()),
        "heads": lib.ModuleList([lib.Linear(5, 2), lib.Linear(5, 2, bias=False)]),
        "drop": lib.Dropout(0.1),
    })


def test_sequential_indexing_slicing_len_append():
    def build(lib):
        return lib.Sequential(lib.Linear(2, 3), lib.ReLU(), lib.Linear(3, 4), lib.Tanh())
    p, t = both(build)
    assert len(p) == len(t) == 4
    assert type(p[0]).__name__ == "Linear" and p[-1] is list(p)[-1] and type(p[-1]).__name__ == "Tanh"
    for sl in (slice(1, 3), slice(None, None, 2), slice(-2, None)):
        ps, ts = p[sl], t[sl]
        assert isinstance(ps, nn.Sequential)
        assert list(ps.state_dict()) == list(ts.state_dict())
        assert [n for n, _ in ps.named_children()] == [n for n, _ in ts.named_children()]
    assert p[1:3][1] is p[2]
    with pytest.raises(IndexError):
        p[4]
    p.append(nn.Sigmoid())
    t.append(torch.nn.Sigmoid())
    assert [n for n, _ in p.named_children()] == [n for n, _ in t.named_children()]
    p[1] = nn.GELU()
    assert type(p[1]).__name__ == "GELU"
    del p[0]
    del t[0]
    assert [n for n, _ in p.named_children()] == [n for n, _ in t.named_children()]
    assert list(p.state_dict()) == list(t.state_dict())
    assert [type(m).__name__ for m in p] == ["GELU", "Linear", "Tanh", "Sigmoid"]


def test_sequential_ordered_dict_names():
    p, t = both(lambda lib: lib.Sequential(OrderedDict([("fc", lib.Linear(2, 2)), ("act", lib.ReLU())])))
    assert list(p.state_dict()) == list(t.state_dict()) == ["fc.weight", "fc.bias"]
    assert p.fc is p[0]


def test_module_list():
    p, t = both(lambda lib: lib.ModuleList([lib.Linear(1, 1) for _ in range(3)]))
    assert len(p) == 3 and list(p.state_dict()) == list(t.state_dict())
    for q in (p, t):
        q.append(type(q[0])(1, 2))
        q.extend([type(q[0])(2, 2)])
        q.insert(1, type(q[0])(3, 3))
        del q[0]
    assert [n for n, _ in p.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [tuple(x.shape) for x in p.parameters()] == [tuple(x.shape) for x in t.parameters()]
    assert isinstance(p[1:], nn.ModuleList) and len(p[1:]) == len(t[1:])
    assert p[-1] is list(p)[-1]
    with pytest.raises(IndexError):
        p[10]


def test_module_dict():
    p, t = both(nested)
    assert list(p.keys()) == list(t.keys()) and len(p) == len(t) == 3
    assert "enc" in p and "nope" not in p
    assert list(p) == list(t)
    assert [k for k, _ in p.items()] == [k for k, _ in t.items()]
    p["extra"] = nn.Linear(1, 1)
    t["extra"] = torch.nn.Linear(1, 1)
    assert list(p.state_dict()) == list(t.state_dict())
    p.pop("drop")
    t.pop("drop")
    del p["extra"]
    del t["extra"]
    assert [n for n, _ in p.named_modules()] == [n for n, _ in t.named_modules()]


def test_sequential_extend_insert_pop_add():
    def build(lib):
        return lib.Sequential(lib.Linear(2, 3), lib.ReLU())
    p, t = both(build)
    for q, lib in ((p, nn), (t, torch.nn)):
        q.extend([lib.Linear(3, 4), lib.Tanh()])
        q.insert(1, lib.Linear(3, 3))
        q.insert(-1, lib.Sigmoid())
        q.insert(len(q), lib.Identity())
        assert type(q.pop(0)).__name__ == "Linear"
        q += lib.Sequential(lib.Linear(4, 1))
    assert [n for n, _ in p.named_children()] == [n for n, _ in t.named_children()]
    assert [type(m).__name__ for m in p] == [type(m).__name__ for m in t]
    assert list(p.state_dict()) == list(t.state_dict())
    combined = p + nn.Sequential(nn.ReLU())
    assert isinstance(combined, nn.Sequential) and len(combined) == len(p) + 1 and combined[0] is p[0]
    with pytest.raises(IndexError):
        p.insert(100, nn.ReLU())
    with pytest.raises(ValueError):
        p + [nn.ReLU()]


def test_module_list_pop_add_iadd_and_module_dict_clear():
    p, t = both(lambda lib: lib.ModuleList([lib.Linear(1, 1), lib.Linear(1, 2), lib.Linear(2, 2)]))
    for q, lib in ((p, nn), (t, torch.nn)):
        assert tuple(q.pop(1).weight.shape) == (2, 1)
        q += [lib.ReLU()]
        assert type(q.pop(-1)).__name__ == "ReLU"
    assert list(p.state_dict()) == list(t.state_dict())
    both_lists = p + nn.ModuleList([nn.Tanh()])
    assert isinstance(both_lists, nn.ModuleList) and len(both_lists) == 3 and both_lists[0] is p[0]
    d = nn.ModuleDict({"a": nn.ReLU()})
    d.clear()
    assert len(d) == 0 and list(d.named_modules()) == [("", d)]


def test_module_list_repr_folds_repeated_children_as_torch():
    for make in (lambda nn: nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 3)]),
                 lambda nn: nn.ModuleList(), lambda nn: nn.ModuleList([nn.ReLU()]),
                 lambda nn: nn.Sequential(nn.ModuleList([nn.Tanh(), nn.Tanh(), nn.Tanh()]), nn.ReLU())):
        assert repr(make(pg.nn)) == repr(make(torch.nn))


def test_parameter_list_names_indexing_and_repr():
    p = pg.nn.ParameterList([pg.nn.Parameter(pg.ones(2, 3)), pg.zeros(4)])
    t = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2, 3)), torch.zeros(4)])
    assert repr(p) == repr(t).replace("torch.", "paragrad.")
    p.append(pg.ones(1))
    t.append(torch.ones(1))
    m, tm = pg.nn.Module(), torch.nn.Module()
    m.ps, tm.ps = p, t
    assert list(m.state_dict()) == list(tm.state_dict()) == ["ps.0", "ps.1", "ps.2"]
    assert all(isinstance(x, pg.nn.Parameter) and x.requires_grad for x in p)
    assert p[-1].shape == (1,) and len(p[1:]) == 2
    p[0] = pg.full((2, 3), 5.0)
    assert float(p[0].sum()) == 30.0
    with pytest.raises(IndexError):
        p[3]


def test_parameter_dict_names_and_training():
    d = pg.nn.ParameterDict({"w": pg.ones(3), "b": pg.nn.Parameter(pg.zeros(1))})
    td = torch.nn.ParameterDict({"w": torch.ones(3), "b": torch.nn.Parameter(torch.zeros(1))})
    assert [n for n, _ in d.named_parameters()] == [n for n, _ in td.named_parameters()]
    assert "w" in d and len(d) == 2 and list(d.keys()) == ["b", "w"]     # a dict's keys: sorted
    opt = pg.optim.SGD(d.parameters(), lr=0.5)
    (d["w"].sum() + 3 * d["b"].sum()).backward()
    opt.step()
    np.testing.assert_allclose(d["w"].detach().numpy(), [0.5, 0.5, 0.5])
    np.testing.assert_allclose(d["b"].detach().numpy(), [-1.5])
    assert d.pop("b").shape == (1,) and list(d) == ["w"]
    ordered = pg.nn.ParameterDict([("z", pg.ones(1)), ("a", pg.ones(1))])
    assert list(ordered) == list(torch.nn.ParameterDict([("z", torch.ones(1)), ("a", torch.ones(1))]))
