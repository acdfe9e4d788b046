"""ParameterList and ParameterDict: registration names (so state_dict keys match PyTorch's),
wrapping of plain tensors, indexing and the optimizer seeing every parameter."""
import numpy as np
import pytest
import torch

import paragrad as pg


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
