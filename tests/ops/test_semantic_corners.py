"""Corners of existing ops that a differential sweep against torch found: integer pow with
negative tensor exponents (PyTorch's 1 / +-1 / 0 rule; a negative scalar exponent raises),
square and diff of bool tensors, unique along a dim; on every device."""
import numpy as np
import pytest
import torch

import paragrad as pg


def test_integer_pow_with_negative_exponents(device):
    a, b = [1, -1, -1, 2, 0, -3, 5], [-2, -3, -4, -1, -2, 2, 3]
    for dtype in ("int64", "int32", "int16"):
        pa, pb = (pg.tensor(v, dtype=getattr(pg, dtype), device=device) for v in (a, b))
        ta, tb = (torch.tensor(v, dtype=getattr(torch, dtype)) for v in (a, b))
        assert pg.pow(pa, pb).cpu().tolist() == torch.pow(ta, tb).tolist()
        assert (pa ** pb).dtype is getattr(pg, dtype)
    assert pg.pow(2, pg.tensor(b, device=device)).cpu().tolist() == torch.pow(2, torch.tensor(b)).tolist()
    x = pg.tensor([2, 3], device=device)
    x.pow_(pg.tensor([-1, 2], device=device))
    assert x.cpu().tolist() == [0, 9]
    for lib in (torch, pg):
        with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
            lib.tensor([1, 2]) ** -1
    np.testing.assert_allclose((pg.tensor([2, 4], device=device) ** 0.5).cpu().numpy(), [2 ** 0.5, 2.0],
                               rtol=1e-6)                                   # a float exponent is fine


def test_bool_square_and_diff(device):
    t = [True, False, False, True, True]
    for name in ("square", "diff"):
        p, q = getattr(pg, name)(pg.tensor(t, device=device)), getattr(torch, name)(torch.tensor(t))
        assert p.cpu().tolist() == q.tolist() and str(p.dtype).split(".")[-1] == str(q.dtype).split(".")[-1]
    p = pg.diff(pg.tensor([[True, False], [True, True]], device=device), n=2, dim=0, append=pg.tensor([[False, False]], device=device))
    q = torch.diff(torch.tensor([[True, False], [True, True]]), n=2, dim=0, append=torch.tensor([[False, False]]))
    assert p.cpu().tolist() == q.tolist()


@pytest.mark.parametrize("dim", [0, 1, -1, None])
def test_unique_along_a_dim(dim, device):
    x = np.array([[1, 2, 1, 2], [0, 2, 0, 5], [1, 2, 1, 2]])
    got = pg.unique(pg.tensor(x, device=device), dim=dim, return_inverse=True, return_counts=True)
    want = torch.unique(torch.tensor(x), dim=dim, return_inverse=True, return_counts=True)
    assert [g.cpu().tolist() for g in got] == [w.tolist() for w in want]
    assert pg.unique(pg.tensor(x, dtype=pg.float32, device=device), dim=1).cpu().tolist() == \
        torch.unique(torch.tensor(x, dtype=torch.float32), dim=1).tolist()
    with pytest.raises(IndexError):
        pg.unique(pg.tensor(x, device=device), dim=2)


def test_tile_dims_forms_and_copy_from_a_number(device):
    x, t = pg.arange(3.0, device=device), torch.arange(3.0)
    for args in ((2,), ((2,),), (2, 2), ([1, 2, 1],)):
        assert x.tile(*args).cpu().tolist() == t.tile(*args).tolist()
    assert pg.tile(x, (2, 1)).cpu().tolist() == torch.tile(t, (2, 1)).tolist()
    y = pg.zeros(2, 2, device=device)
    assert y.copy_(1.5) is y and y.cpu().tolist() == torch.zeros(2, 2).copy_(1.5).tolist()


def test_binary_functions_take_torchs_keywords(device):
    a, b = pg.tensor([1.0, 2.0], device=device), pg.tensor([3.0, 4.0], device=device)
    ta, tb = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])
    for name, kw in (("add", {"alpha": 2}), ("sub", {}), ("mul", {}), ("div", {"rounding_mode": "floor"}),
                     ("maximum", {}), ("minimum", {}), ("remainder", {}), ("eq", {}), ("lt", {}),
                     ("logical_and", {})):
        got = getattr(pg, name)(input=a, other=b, **kw).cpu().tolist()
        assert got == getattr(torch, name)(input=ta, other=tb, **kw).tolist(), name
    assert a.add(other=b, alpha=3).cpu().tolist() == ta.add(other=tb, alpha=3).tolist()
    assert pg.pow(input=a, exponent=b).cpu().tolist() == torch.pow(input=ta, exponent=tb).tolist()
    assert pg.bitwise_or(input=pg.tensor([1]), other=pg.tensor([2])).tolist() == [3]


def test_reductions_and_movement_take_input_by_keyword(device):
    x, t = pg.arange(6.0, device=device).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    for name, kw in (("sum", {"dim": 1}), ("mean", {}), ("amax", {"dim": 0}), ("argmax", {}), ("std", {}),
                     ("reshape", {"shape": (3, 2)}), ("transpose", {"dim0": 0, "dim1": 1}), ("flip", {"dims": (0,)}),
                     ("clamp", {"min": 1.0}), ("zeros_like", {}), ("softmax", {"dim": 1}), ("square", {})):
        got = getattr(pg, name)(input=x, **kw)
        want = getattr(torch, name)(input=t, **kw)
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6, err_msg=name)
    assert pg.numel(input=x) == 6


def test_matrix_products_take_torchs_keywords(device):
    m, v = np.arange(6.0).reshape(2, 3), np.arange(3.0)
    P = lambda a: pg.tensor(a, device=device)  # noqa: E731
    T = torch.tensor
    for name, kw in (("mm", {"mat2": m.T}), ("matmul", {"other": m.T}), ("mv", {"vec": v})):
        got = getattr(pg, name)(input=P(m), **{k: P(a) for k, a in kw.items()})
        want = getattr(torch, name)(input=T(m), **{k: T(a) for k, a in kw.items()})
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), err_msg=name)
    assert pg.dot(input=P(v), tensor=P(v)).item() == torch.dot(input=T(v), tensor=T(v)).item()
    assert tuple(pg.outer(input=P(v), vec2=P(v)).shape) == (3, 3)
    assert tuple(pg.bmm(input=P(m[None]), mat2=P(m.T[None])).shape) == (1, 2, 2)
