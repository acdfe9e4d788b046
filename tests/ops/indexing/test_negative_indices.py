"""Negative and out-of-range indices op by op, as torch 2.13 treats them: embedding,
embedding_bag, index_select, index_copy, index_add, gather and scatter refuse a negative index;
x[idx], x[idx] = v, index_fill, take and put take one from the end; take_along_dim with a dim
wraps every index modulo the size. Same exception type as torch on every device (a NumPy take
wraps -1 by itself), and a refused call leaves weights, gradients and inputs as they were."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import _np, assert_close, check_raises

X = np.arange(10.0, dtype=np.float32).reshape(5, 2)


def _table(lib, device):
    return lib.tensor(X) if lib is torch else pg.tensor(X, device=device)


def _ids(lib, device, values):
    return lib.tensor(values) if lib is torch else pg.tensor(values, device=device)


REFUSED = {       # op -> (call(lib, table, ids), paragrad's message)
    "embedding": (lambda lib, w, i: lib.nn.functional.embedding(i, w), "index out of range in self"),
    "nn.Embedding": (lambda lib, w, i: lib.nn.Embedding.from_pretrained(w)(i), "index out of range in self"),
    "embedding_bag": (lambda lib, w, i: lib.nn.functional.embedding_bag(i, w, lib.tensor([0])),
                      r"Index 0 of input takes value -?\d+ which is not in the valid range \[0, 5\)"),
    "nn.EmbeddingBag": (lambda lib, w, i: lib.nn.EmbeddingBag.from_pretrained(w, mode="sum")(i.reshape(1, -1)),
                        r"Index 0 of input takes value -?\d+ which is not in the valid range \[0, 5\)"),
    "index_select": (lambda lib, w, i: w.index_select(0, i), "index out of range in self"),
    "index_select_1d": (lambda lib, w, i: w[:, 0].index_select(0, i), "index out of range in self"),
    "index_copy": (lambda lib, w, i: w.index_copy(0, i, w[:1]), r"index -?\d+ is out of bounds for dimension 0"),
    "index_add": (lambda lib, w, i: w.index_add(0, i, w[:1]), r"index -?\d+ is out of bounds for dimension 0"),
    "gather": (lambda lib, w, i: w.gather(0, i.reshape(1, 1)), r"index -?\d+ is out of bounds for dimension 0"),
    "scatter_add": (lambda lib, w, i: w.scatter_add(0, i.reshape(1, 1), w[:1, :1]),
                    r"index -?\d+ is out of bounds for dimension 0"),
}


@pytest.mark.parametrize("value", [-1, 5, -6], ids=["-1", "size", "-size-1"])
@pytest.mark.parametrize("op", REFUSED)
def test_ops_that_refuse_negative_indices_refuse_them_as_torch(op, value, device):
    call, message = REFUSED[op]
    check_raises(lambda lib: call(lib, _table(lib, device), _ids(lib, device, [value])), match=message)


TAKEN = {         # op -> call(lib, table, ids); torch takes a negative id from the end
    "getitem": lambda lib, w, i: w[i],
    "getitem_dim1": lambda lib, w, i: w.t()[:, i],
    "setitem": lambda lib, w, i: w.clone().index_put_((i,), lib.ones(2, device=w.device)),
    "index_fill": lambda lib, w, i: w.index_fill(0, i, -1.0),
    "index_fill_dim1": lambda lib, w, i: w.t().index_fill(1, i, -1.0),
    "take": lambda lib, w, i: lib.take(w[:, 0], i),
}


@pytest.mark.parametrize("op", TAKEN)
def test_ops_that_take_negative_indices_match_torch(op, device):
    ids = [-1, 0, -5, 3]
    t = TAKEN[op](torch, _table(torch, device), _ids(torch, device, ids))
    p = TAKEN[op](pg, _table(pg, device), _ids(pg, device, ids))
    assert_close(p, t, 0, 0)


@pytest.mark.parametrize("value", [5, -6], ids=["size", "-size-1"])
@pytest.mark.parametrize("op", TAKEN)
def test_ops_that_take_negative_indices_refuse_out_of_range_ones_as_torch(op, value, device):
    check_raises(lambda lib: TAKEN[op](lib, _table(lib, device), _ids(lib, device, [value])),
                 match="out of bounds|out of range")


@pytest.mark.parametrize("ids", [[-1, 0, -5, 3], [5, 0], [7, -7, 12]], ids=["negative", "size", "far"])
def test_take_along_dim_with_a_dim_wraps_like_torch(ids, device):
    """torch's take_along_dim(x, i, dim) takes i % size (its reference: `indices % dim_size`),
    so even an index past the end wraps; without a dim it checks bounds as gather does."""
    t = torch.take_along_dim(_table(torch, device), torch.tensor(ids).reshape(-1, 1), 0)
    p = pg.take_along_dim(_table(pg, device), pg.tensor(ids, device=device).reshape(-1, 1), 0)
    assert_close(p, t, 0, 0)
    for bad in (-1, 10):
        check_raises(lambda lib: lib.take_along_dim(_table(lib, device), _ids(lib, device, [bad])),
                     match="out of bounds")


@pytest.mark.parametrize("make", [
    lambda w, i: pg.nn.functional.embedding(i, w),
    lambda w, i: pg.nn.functional.embedding(i, w, max_norm=1.0),
    lambda w, i: pg.nn.functional.embedding_bag(i, w, pg.tensor([0], device=i.device), max_norm=1.0),
    lambda w, i: w.index_select(0, i),
], ids=["embedding", "embedding_max_norm", "embedding_bag_max_norm", "index_select"])
def test_a_refused_call_leaves_the_weight_and_its_gradient_as_they_were(make, device):
    """No row is read through a wrapped id, max_norm renormalizes nothing, no node is recorded:
    a later backward puts gradient only where the good ids point."""
    w = pg.tensor(X * 3, device=device, requires_grad=True)
    with pytest.raises((IndexError, RuntimeError)):
        make(w, pg.tensor([1, -1], device=device))
    assert w.grad is None
    np.testing.assert_array_equal(_np(w), X * 3)
    pg.nn.functional.embedding(pg.tensor([1], device=device), w).sum().backward()
    expected = np.zeros_like(X)
    expected[1] = 1
    np.testing.assert_array_equal(_np(w.grad), expected)
