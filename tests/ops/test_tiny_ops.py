"""The tiny-op host path (the data-loading idiom of nanoGPT-style scripts): iterating a tensor,
0-d tensors as slice bounds and Python numbers, stack/cat of many small pieces. Each lean path
gives torch's values, nodes and errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import assert_same_node_name, check_op, check_raises, lib


def test_iterating_gives_views_of_one_unbind_node(device):
    x = pg.arange(6.0, device=device).reshape(2, 3).requires_grad_()
    t = torch.arange(6.0).reshape(2, 3).requires_grad_()
    rows, trows = list(x), list(t)
    assert [r._output_nr for r in rows] == [0, 1]
    assert rows[0].grad_fn is rows[1].grad_fn
    assert_same_node_name(rows[1], trows[1])
    (rows[1] * 3).sum().backward()          # row 0 got no gradient: zeros in its place
    (trows[1] * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), t.grad.numpy())


def test_iterated_rows_share_the_buffer_and_version(device):
    x = pg.arange(4, device=device)
    first = list(x)[2]
    x.add_(10)
    assert int(first) == 12                 # a view, as torch's
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(pg.tensor(1, device=device))


def test_unbind_rows_refuse_in_place_writes_with_grad(device):
    x = pg.ones(2, 3, device=device, requires_grad=True).clone()
    with pytest.raises(RuntimeError, match="output of a function that returns multiple views"):
        x.unbind(0)[1].mul_(2)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unbind_values_and_grads(device, dim):
    check_op(lambda x: lib(x).stack([r * (i + 1) for i, r in enumerate(x.unbind(dim))], 0),
             [(3, 4, 2)], device=device)


def test_slice_with_0d_tensor_bounds(device):
    data = np.arange(40)
    x, t = pg.tensor(data, device=device), torch.tensor(data)
    for i in (0, 3, 31):
        pi, ti = pg.tensor(i, device=device), torch.tensor(i)
        np.testing.assert_array_equal(x[pi:pi + 8].cpu().numpy(), t[ti:ti + 8].numpy())
        np.testing.assert_array_equal(x[pi::pg.tensor(3)].cpu().numpy(), t[ti::torch.tensor(3)].numpy())
    m, tm = x.reshape(4, 10), t.reshape(4, 10)
    np.testing.assert_array_equal(m[1:pg.tensor(3), pg.tensor(2):5].cpu().numpy(),
                                  tm[1:torch.tensor(3), torch.tensor(2):5].numpy())
    x[pg.tensor(2):pg.tensor(4)] = 0                 # setitem reads the bounds the same way
    t[torch.tensor(2):torch.tensor(4)] = 0
    np.testing.assert_array_equal(x.cpu().numpy(), t.numpy())


def test_slice_with_0d_tensor_bounds_keeps_the_graph(device):
    check_op(lambda x: x[like_index(x, 1):like_index(x, 4)], [(6, 2)], device=device)


def like_index(x, i):
    return torch.tensor(i) if isinstance(x, torch.Tensor) else pg.tensor(i, device=x.device)


def test_float_tensor_bound_refused_as_torch(device):
    check_raises(lambda x: x[lib(x).tensor(1.0):3], (5,), device=device)


def test_0d_tensor_arithmetic_with_python_numbers(device):
    for dtype in ("int64", "int32", "uint8", "float32", "bool"):
        p, t = pg.tensor(5, dtype=getattr(pg, dtype), device=device), torch.tensor(5, dtype=getattr(torch, dtype))
        for other in (8, 300, -3, 2.5):
            for fn in (lambda a: a + other, lambda a: a * other, lambda a: a - other if dtype != "bool" else a):
                r, tr = fn(p), fn(t)
                assert str(r.dtype).split(".")[-1] == str(tr.dtype).split(".")[-1], (dtype, other)
                assert r.item() == pytest.approx(tr.item()), (dtype, other)
    i = pg.tensor(7, device=device)
    assert int(i) == 7 and i.__index__() == 7 and [0, 1, 2, 3, 4, 5, 6, 7][i] == 7


@pytest.mark.parametrize("op", ["stack", "cat"])
def test_stack_and_cat_of_many_small_pieces(device, op):
    data = np.arange(400)
    pieces = [pg.tensor(data, device=device)[j:j + 8] for j in range(0, 256, 8)]
    tpieces = [torch.tensor(data)[j:j + 8] for j in range(0, 256, 8)]
    np.testing.assert_array_equal(getattr(pg, op)(pieces).cpu().numpy(), getattr(torch, op)(tpieces).numpy())
    check_op(lambda *xs: getattr(lib(xs[0]), op)(list(xs), 0), [(8,)] * 12, device=device)


def test_stack_and_cat_errors_name_the_entry(device):
    a, b = pg.zeros(3, device=device), pg.zeros(4, device=device)
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[3\] at "
                                           r"entry 0 and \[4\] at entry 2"):
        pg.stack([a, a, b])
    with pytest.raises(RuntimeError, match="for tensor number 1 in the list"):
        pg.cat([a.reshape(1, 3), b.reshape(1, 4)])
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        pg.stack([a, 3])
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        pg.cat([a, [1.0]])


def test_cat_keeps_the_legacy_empty_rule_and_dtype_promotion(device):
    a = pg.ones(2, 3, device=device, requires_grad=True)
    out = pg.cat([a, pg.zeros(0, device=device), a.double()])
    assert out.dtype is pg.float64 and tuple(out.shape) == (4, 3)
    out.sum().backward()
    np.testing.assert_array_equal(a.grad.cpu().numpy(), np.full((2, 3), 2.0))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "uint8", "float16"])
def test_stack_and_cat_of_more_pieces_than_one_launch_takes(device, dtype):
    """150 pieces (the CUDA join takes 64 a launch), N-D, one of them strided (CuPy's join)."""
    rng = np.random.default_rng(0)
    data = rng.integers(0, 3, (150, 2, 3)).astype(dtype)
    pieces = [pg.tensor(d, device=device) for d in data]
    tpieces = [torch.tensor(d) for d in data]
    for p, t in ((pieces, tpieces), (pieces[:-1] + [pieces[-1].t().contiguous().t()], tpieces)):
        np.testing.assert_array_equal(pg.stack(p).cpu().numpy(), torch.stack(t).numpy())
        np.testing.assert_array_equal(pg.cat(p).cpu().numpy(), torch.cat(t).numpy())
    strided = [pg.tensor(d.T.copy(), device=device).t() for d in data[:5]]
    np.testing.assert_array_equal(pg.cat(strided).cpu().numpy(), torch.cat(tpieces[:5]).numpy())
    empty = [pg.zeros(0, 3, device=device)] * 4
    assert tuple(pg.cat(empty).shape) == (0, 3) and tuple(pg.stack(empty).shape) == (4, 0, 3)
