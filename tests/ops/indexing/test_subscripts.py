"""Indexing against PyTorch: x[key] (basic, advanced, boolean, mixed) with gradients, x[key] = v,
gather / index_select / scatter / scatter_add / nonzero / masked_select, and their errors."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import _np, check_op, fd_check, lib


def T(x, data, **kw):
    """An index/value tensor of the same library and device as x."""
    return lib(x).tensor(data, device=x.device, **kw)


# ---- x[key] ------------------------------------------------------------------------------------
GETITEM = [
    ("int", lambda x: x[1], [(3, 4)]),
    ("neg_int", lambda x: x[-1], [(3, 4)]),
    ("two_ints", lambda x: x[1, -2], [(3, 4)]),
    ("int_to_0d", lambda x: x[2], [(4,)]),
    ("slice", lambda x: x[1:3], [(4, 3)]),
    ("slice_step", lambda x: x[::2], [(5, 3)]),
    ("slice_steps_2d", lambda x: x[1::2, ::3], [(5, 7)]),
    ("slice_neg_bounds", lambda x: x[-3:-1], [(5, 2)]),
    ("slice_neg_stop", lambda x: x[:-1, -2:], [(4, 5)]),
    ("slice_out_of_range", lambda x: x[2:100], [(4,)]),
    ("slice_empty", lambda x: x[3:1], [(4, 2)]),
    ("slice_step_gt_size", lambda x: x[::7], [(4, 2)]),
    ("none", lambda x: x[None], [(3, 4)]),
    ("none_mid", lambda x: x[:, None], [(3, 4)]),
    ("none_many", lambda x: x[None, :, None, 1], [(3, 4)]),
    ("ellipsis", lambda x: x[...], [(3, 4)]),
    ("ellipsis_int", lambda x: x[..., 1], [(2, 3, 4)]),
    ("int_ellipsis", lambda x: x[1, ...], [(2, 3, 4)]),
    ("int_ellipsis_int", lambda x: x[0, ..., -1], [(2, 3, 4)]),
    ("ellipsis_none", lambda x: x[..., None], [(2, 3)]),
    ("0d_none", lambda x: x[None], [()]),
    ("0d_ellipsis", lambda x: x[...], [()]),
    ("0d_empty_tuple", lambda x: x[()], [()]),
    ("list", lambda x: x[[0, 2, 1]], [(3, 4)]),
    ("list_dup", lambda x: x[[0, 0, 2, 0]], [(3, 4)]),
    ("list_empty", lambda x: x[[]], [(3, 4)]),
    ("tensor_idx", lambda x: x[T(x, [2, 0, 2])], [(3, 4)]),
    ("tensor_idx_neg", lambda x: x[T(x, [-1, 0, -3])], [(3, 4)]),
    ("tensor_idx_2d", lambda x: x[T(x, [[1, 1], [0, 2]])], [(3, 4)]),
    ("tensor_idx_int32", lambda x: x[T(x, [1, 0], dtype=lib(x).int32)], [(3, 4)]),
    ("tensor_idx_0d", lambda x: x[T(x, 1)], [(3, 4)]),
    ("col_idx", lambda x: x[:, T(x, [3, 0, 3])], [(3, 4)]),
    ("col_list", lambda x: x[:, [1, 1]], [(3, 4)]),
    ("range", lambda x: x[range(2, 0, -1)], [(3, 4)]),
    ("range_and_list", lambda x: x[range(3), [0, 3, 1]], [(3, 4)]),     # one element per row
    ("range_empty", lambda x: x[range(0)], [(3, 4)]),
    ("tuple_in_key", lambda x: x[(0, 2), 1:], [(3, 4)]),               # an inner tuple is an index
    ("idx_slice_none", lambda x: x[T(x, [1, 0]), :, None], [(3, 4)]),
    ("two_adv_front", lambda x: x[[0, 1, 1], [1, 2, 2]], [(3, 4)]),
    ("two_adv_adjacent_mid", lambda x: x[:, [0, 1], [1, 2]], [(2, 3, 4)]),
    ("two_adv_apart", lambda x: x[[0, 1], :, [1, 3]], [(2, 3, 4)]),
    ("two_adv_broadcast", lambda x: x[[[0], [1]], [1, 2, 0]], [(2, 3)]),
    ("adv_and_int", lambda x: x[1, :, [0, 2]], [(2, 3, 4)]),       # torch: int is basic
    ("adv_int_adjacent", lambda x: x[:, 1, [0, 2]], [(2, 3, 4)]),
    ("adv_slice_adv", lambda x: x[[1, 0], 1:, T(x, [2, 2])], [(2, 3, 4)]),
    ("adv_ellipsis", lambda x: x[..., [0, 0, 2]], [(2, 3, 4)]),
    ("three_adv", lambda x: x[[0, 1], [0, 2], [1, 3]], [(2, 3, 4)]),
    ("mask_full", lambda x: x[x > 0], [(3, 4)]),
    ("mask_rows", lambda x: x[T(x, [True, False, True])], [(3, 4)]),
    ("mask_cols", lambda x: x[:, T(x, [False, True, True, False])], [(3, 4)]),
    ("mask_partial_2d", lambda x: x[x[:, :, 0] > 0], [(3, 2, 4)]),
    ("mask_all_false", lambda x: x[x > 100], [(3, 4)]),
    ("mask_0d", lambda x: x[T(x, True)], [(3,)]),
    ("mask_and_slice", lambda x: x[T(x, [True, False, True]), 1:], [(3, 4)]),
    ("bool_literal", lambda x: x[True], [(2, 3)]),
    ("chain", lambda x: x[1:][:, [0, 0]][None, ..., 1], [(3, 4)]),
]
GETITEM_IDS = [c[0] for c in GETITEM]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,shapes", GETITEM, ids=GETITEM_IDS)
def test_getitem(device, name, fn, shapes, dtype):
    check_op(fn, shapes, dtype=dtype, device=device)


@pytest.mark.parametrize("name,fn,shapes", GETITEM, ids=GETITEM_IDS)
def test_getitem_int(device, name, fn, shapes):
    check_op(fn, shapes, dtype="int64", low=-5, high=5, device=device, grad=False)


@pytest.mark.parametrize("name,fn,shapes", GETITEM, ids=GETITEM_IDS)
def test_getitem_fd(device, name, fn, shapes):
    fd_check(fn, shapes, device=device)


def test_getitem_is_view(device):
    x = pg.zeros(3, 4, device=device)
    x[1:, ::2][0, 1] = 9      # a basic index is a view, as in PyTorch
    assert x[1, 2].item() == 9


@pytest.mark.parametrize("key,exc,words", [
    (3, IndexError, ["index 3", "size 3"]),
    (-4, IndexError, ["index -4", "size 3"]),
    ((0, 4), IndexError, ["index 4", "dimension 1", "size 4"]),
    ([0, 3], IndexError, ["3", "size 3"]),
    ([-4], IndexError, ["-4", "size 3"]),
    ((slice(None), [0, 4]), IndexError, ["4", "size 4"]),
    (slice(None, None, -1), ValueError, ["step"]),
    ((0, 0, 0), IndexError, ["too many indices", "2"]),
    (1.5, IndexError, ["float"]),
    ({}, IndexError, ["dict"]),
])
def test_getitem_errors(device, key, exc, words):
    x = pg.zeros(3, 4, device=device)
    with pytest.raises(exc) as info:
        x[key]
    for w in words:
        assert w in str(info.value), f"{w!r} not in: {info.value}"
    with pytest.raises(exc):    # torch raises the same exception class
        torch.zeros(3, 4)[key]


def test_getitem_two_ellipses_raises(device):
    # NumPy's rule; torch 2.13 silently lets the second '...' consume nothing
    with pytest.raises(IndexError, match="single ellipsis"):
        pg.zeros(3, 4, device=device)[..., 0, ...]


def test_getitem_nested_list_is_tensor_index(device):
    # paragrad reads a nested list as one index array (NumPy, and torch's announced future);
    # torch 2.13 still reads it as a tuple of indices, with a deprecation warning
    check_op(lambda x: x[[[0, 1], [1, 2]]], [(3, 4)], device=device,
             torch_fn=lambda x: x[torch.tensor([[0, 1], [1, 2]])])


def test_getitem_bad_index_tensors(device):
    x = pg.zeros(3, 4, device=device)
    with pytest.raises(IndexError, match="mask"):
        x[pg.tensor([True, False], device=device)]
    with pytest.raises(IndexError, match="float"):
        x[pg.tensor([0.0, 1.0], device=device)]


# ---- x[key] = value ----------------------------------------------------------------------------
def _set(key, value):
    """fn(x) = a copy of x with copy[key(x)] = value(x)."""
    def fn(x):
        y = x.clone()
        y[key(y)] = value(y)
        return y
    return fn


SETITEM = [
    ("int", _set(lambda x: 0, lambda x: 5)),
    ("neg_int_pair", _set(lambda x: (-1, -2), lambda x: 3)),
    ("slice", _set(lambda x: (slice(1, None), slice(None, None, 2)), lambda x: -1.5)),
    ("ellipsis", _set(lambda x: (Ellipsis, 1), lambda x: 2)),
    ("mask", _set(lambda x: x > 0, lambda x: 0)),
    ("mask_rows", _set(lambda x: T(x, [True, False, True]), lambda x: 4)),
    ("index_tensor", _set(lambda x: T(x, [0, 2]), lambda x: 7)),
    ("index_list", _set(lambda x: [2, 0], lambda x: 1)),
    ("index_and_int", _set(lambda x: (T(x, [0, 2]), 1), lambda x: 8)),
    ("two_adv", _set(lambda x: ([0, 1], [3, 0]), lambda x: 6)),
    ("range_and_tensor", _set(lambda x: (range(3), T(x, [1, 0, 3])), lambda x: 9)),     # x_[range(n), y] = v
    ("broadcast_row", _set(lambda x: (slice(None), slice(1, 3)), lambda x: T(x, [1.0, 2.0]))),
    ("broadcast_col", _set(lambda x: slice(None), lambda x: T(x, [[1], [2], [3]], dtype=x.dtype))),
    ("value_int_dtype", _set(lambda x: 1, lambda x: lib(x).arange(4, device=x.device))),
    ("value_float64", _set(lambda x: (0, slice(None)), lambda x: T(x, [0.5, 1.5, 2.5, 3.5],
                                                                     dtype=lib(x).float64))),
    ("mask_tensor_value", _set(lambda x: T(x, [[True, False, False, True]] * 3),
                               lambda x: lib(x).arange(6, device=x.device).to(x.dtype))),
    ("adv_broadcast_value", _set(lambda x: (slice(None), [1, 3]), lambda x: T(x, [9, 8]).to(x.dtype))),
    ("0d_value", _set(lambda x: (1, 2), lambda x: T(x, 4).to(x.dtype))),
    ("none_key", _set(lambda x: (None, 0), lambda x: 1)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("name,fn", SETITEM, ids=[c[0] for c in SETITEM])
def test_setitem(device, name, fn, dtype):
    check_op(fn, [(3, 4)], dtype=dtype, low=-3, high=3, device=device, grad=False)


def test_setitem_float_into_int(device):
    check_op(_set(lambda x: 0, lambda x: 2.7), [(3, 4)], dtype="int32", device=device, grad=False)


def test_setitem_0d(device):
    check_op(_set(lambda x: (), lambda x: 3.0), [()], device=device, grad=False)
    check_op(_set(lambda x: Ellipsis, lambda x: 3.0), [()], device=device, grad=False)


def _nonleaf_set(key):
    """x = a * 2; x[key] = v * 3; the gradient flows to a (except the overwritten part) and v."""
    def fn(a, v):
        x = a * 2
        x[key(x)] = v * 3
        return x * a
    return fn


@pytest.mark.parametrize("key,vshape", [
    (lambda x: 0, (4,)),
    (lambda x: (slice(None), slice(1, 3)), (1,)),
    (lambda x: x.detach() > 0, ()),
    (lambda x: [2, 0], (2, 4)),
    (lambda x: (T(x, [0, 1]), T(x, [3, 3])), (1,)),
], ids=["int", "slice_broadcast", "mask", "list", "two_adv"])
def test_setitem_nonleaf_grad(device, key, vshape):
    check_op(_nonleaf_set(key), [(3, 4), vshape], device=device)
    check_op(_nonleaf_set(key), [(3, 4), vshape], dtype="float64", device=device)


@pytest.mark.parametrize("key", [lambda x: 0, lambda x: x.detach() > 0, lambda x: [2, 0]],
                         ids=["int", "mask", "list"])
def test_setitem_nonleaf_fd(device, key):
    fd_check(_nonleaf_set(key), [(3, 4), (1,)], device=device)


def test_setitem_value_requires_grad(device):
    # x itself needs no grad; the written values carry v's gradient into x
    def fn(v):
        x = lib(v).zeros(3, 4, dtype=v.dtype, device=v.device)
        x[1] = v
        x[:, 0] = v[:3] * 2
        x[[0, 2], 1:3] = v[:2]
        return x * x
    check_op(fn, [(4,)], device=device)


@pytest.mark.xfail(strict=True, reason="no view tracking in autograd: an in-place write into a "
                   "view of a non-leaf that requires grad does not reach the base tensor")
def test_setitem_into_view_of_nonleaf(device):
    def fn(a):
        y = a * 1
        y[1:][0] = 5        # writes through the view into y, as in PyTorch
        return y
    check_op(fn, [(3,)], device=device)


def test_setitem_nonleaf_scalar(device):
    # the example of the brief, compared with torch
    for lib_ in (torch, pg):
        a = lib_.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True,
                        device=device if lib_ is pg else "cpu")
        x = a * 2
        x[0] = 5
        x.sum().backward()
        assert a.grad.tolist() == [[0.0, 0.0], [2.0, 2.0]]


def test_setitem_leaf_requires_grad_raises(device):
    a = pg.zeros(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        a[0] = 1.0
    assert a.grad_fn is None and a.tolist() == [0.0, 0.0, 0.0]
    with pg.no_grad():      # allowed without grad mode, as in PyTorch
        a[0] = 1.0
    assert a.tolist() == [1.0, 0.0, 0.0]


def test_setitem_shape_mismatch(device):
    x = pg.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match=r"\(3,\).*\(3, 2\)"):
        x[:, :2] = pg.ones(3, device=device)
    assert not x.any().item()


# ---- gather / index_select / scatter / scatter_add -----------------------------------------------
IDX_OPS = [
    ("gather", lambda x: x.gather(1, T(x, [[0, 0], [3, 1], [2, 2]])), [(3, 4)]),
    ("gather_fn_dim0", lambda x: lib(x).gather(x, 0, T(x, [[2, 0, 1, 1]])), [(3, 4)]),
    ("gather_neg_dim", lambda x: x.gather(-1, T(x, [[[1], [0]], [[2], [2]]])), [(2, 2, 3)]),
    ("gather_smaller", lambda x: x.gather(0, T(x, [[1], [1]])), [(3, 4)]),
    ("index_select", lambda x: x.index_select(0, T(x, [2, 0, 2])), [(3, 4)]),
    ("index_select_fn", lambda x: lib(x).index_select(x, -1, T(x, [1, 3])), [(2, 3, 4)]),
    ("index_select_empty", lambda x: x.index_select(1, T(x, [], dtype=lib(x).int64)), [(3, 4)]),
    ("index_select_0d_idx", lambda x: x.index_select(0, T(x, 1)), [(3, 4)]),
    ("scatter_value", lambda x: x.scatter(1, T(x, [[0, 2], [3, 1], [1, 1]]), 2.5), [(3, 4)]),
    ("scatter_src", lambda x, s: x.scatter(1, T(x, [[0, 2], [3, 1], [1, 0]]), s), [(3, 4), (3, 2)]),
    ("scatter_fn", lambda x, s: lib(x).scatter(x, 0, T(x, [[2, 0, 1, 1]]), s), [(3, 4), (1, 4)]),
    ("scatter_big_src", lambda x, s: x.scatter(0, T(x, [[1, 2], [0, 1]]), s), [(3, 4), (3, 5)]),
    ("scatter_add", lambda x, s: x.scatter_add(1, T(x, [[0, 0], [3, 3], [1, 1]]), s),
     [(3, 4), (3, 2)]),
    ("scatter_add_fn_dup", lambda x, s: lib(x).scatter_add(x, 0, T(x, [[2, 2, 2, 0], [2, 0, 2, 0]]), s),
     [(3, 4), (2, 4)]),
    ("scatter_add_big_src", lambda x, s: x.scatter_add(-1, T(x, [[1], [0]]), s), [(2, 3), (3, 3)]),
    ("masked_select", lambda x: x.masked_select(x > 0), [(3, 4)]),
    ("masked_select_bcast", lambda x: lib(x).masked_select(x, T(x, [True, False, True, True])),
     [(3, 4)]),
    ("masked_select_bcast_x", lambda x: x.masked_select(T(x, [[True], [False], [True]]) & (x[:1] > 0)),
     [(1, 4)]),
]
IDX_IDS = [c[0] for c in IDX_OPS]


# torch's backward rejects a src larger than index ("invalid gradient ... got [2, 2] but
# expected shape compatible with [3, 5]"); paragrad's gradient (zeros outside the index block)
# is checked by finite differences only
TORCH_NO_GRAD = {"scatter_big_src", "scatter_add_big_src"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,shapes", IDX_OPS, ids=IDX_IDS)
def test_index_ops(device, name, fn, shapes, dtype):
    check_op(fn, shapes, dtype=dtype, device=device, grad=name not in TORCH_NO_GRAD)


@pytest.mark.parametrize("name,fn,shapes", IDX_OPS, ids=IDX_IDS)
def test_index_ops_int(device, name, fn, shapes):
    check_op(fn, shapes, dtype="int32", low=-5, high=5, device=device, grad=False)


@pytest.mark.parametrize("name,fn,shapes", IDX_OPS, ids=IDX_IDS)
def test_index_ops_fd(device, name, fn, shapes):
    fd_check(fn, shapes, device=device)


@pytest.mark.parametrize("shape,low", [((3, 4), -1), ((5,), -1), ((2, 0), 0), ((), 0), ((), 1),
                                       ((2, 2, 3), -1)])
@pytest.mark.parametrize("as_tuple", [False, True])
def test_nonzero(device, shape, low, as_tuple):
    check_op(lambda x: x.nonzero(as_tuple=as_tuple), [shape], dtype="int64", low=low, high=2,
             device=device, grad=False)
    check_op(lambda x: lib(x).nonzero(x > 0, as_tuple=as_tuple), [shape], low=low, device=device,
             grad=False)


def test_scatter_is_out_of_place(device):
    x = pg.zeros(2, 3, device=device)
    y = x.scatter(1, pg.tensor([[0], [2]], device=device), 1.0)
    assert not x.any().item() and y.tolist() == [[1, 0, 0], [0, 0, 1]]


@pytest.mark.parametrize("fn,exc,words", [
    (lambda x, i: x.gather(1, i.float()), RuntimeError, ["gather", "dtype", "float32"]),
    (lambda x, i: x.gather(1, i[0]), RuntimeError, ["gather", "dimensions", "1", "2"]),
    (lambda x, i: x.gather(1, i + 3), RuntimeError, ["gather", "index 4", "size 4"]),
    (lambda x, i: x.gather(1, pg.zeros(4, 1, dtype=pg.int64, device=x.device)), RuntimeError,
     ["gather", "(4, 1)", "(3, 4)"]),
    (lambda x, i: x.gather(2, i), IndexError, ["gather", "range"]),
    (lambda x, i: x.index_select(0, i), IndexError, ["index_select", "(3, 1)"]),
    (lambda x, i: x.index_select(1, pg.tensor([4], device=x.device)), IndexError, ["size 4", "(3, 4)"]),
    (lambda x, i: x.index_select(0, [0]), TypeError, ["index_select", "Tensor"]),
    (lambda x, i: x.scatter(1, i, pg.zeros(3, 1, dtype=pg.float64, device=x.device)), RuntimeError,
     ["scatter", "float32", "float64"]),
    (lambda x, i: x.scatter_add(1, i, pg.zeros(2, 1, device=x.device)), RuntimeError,
     ["scatter_add", "(3, 1)", "(2, 1)"]),
    (lambda x, i: x.scatter_add(0, i - 1, pg.zeros(3, 1, device=x.device)), RuntimeError,
     ["scatter_add", "-1", "size 3"]),
])
def test_index_op_errors(device, fn, exc, words):
    x = pg.zeros(3, 4, device=device, requires_grad=True)
    i = pg.tensor([[1], [0], [1]], device=device)
    with pytest.raises(exc) as info:
        fn(x, i.to(device))
    for w in words:
        assert w in str(info.value), f"{w!r} not in: {info.value}"
    assert x.grad_fn is None and not x.detach().any().item()


EMPTY_KEYS = {   # keys that address no element (makemore's y[len(ix)+1:] = -1 at full length)
    "slice past the end": (slice(5, None), -1), "empty 2-d slice": ((slice(None), slice(9, None)), -1),
    "empty range": (slice(4, 2), 1.5), "empty index tensor": ("index", 7),
    "all-false mask": ("mask", 7), "empty value tensor": (slice(5, 5), "empty"),
}


@pytest.mark.parametrize("name", EMPTY_KEYS)
@pytest.mark.parametrize("tracked", [False, True], ids=["plain", "in a graph"])
def test_setitem_of_no_elements_changes_nothing_as_torch(device, name, tracked):
    key, value = EMPTY_KEYS[name]

    def assign(x):
        m = lib(x)
        y = x * 1 if tracked else x.detach().clone()
        k = {"index": m.tensor([], dtype=m.int64, device=x.device), "mask": y.detach() > 100}.get(key, key) \
            if isinstance(key, str) else key
        y[k] = m.zeros(0, 5, device=x.device) if value == "empty" else value
        return y
    check_op(assign, [(3, 5)], device=device, grad=tracked)


def test_setitem_of_no_elements_still_checks_the_value_shape(device):
    x = pg.zeros(5, device=device)
    with pytest.raises(RuntimeError):
        x[5:] = pg.zeros(3, device=device)


@pytest.mark.parametrize("dtype", ["int8", "float16", "int32", "float64", "bool"])
def test_rows_picked_by_a_tensor_index_wrap_negative_ids(dtype, device):
    """x[idx] along the first dim for every element size (a device may copy rows as words of
    that size) with negative ids, an index of two dims and rows of several dims."""
    a = (np.arange(5 * 2 * 3).reshape(5, 2, 3) % 7).astype(dtype)
    idx = [[-1, 0, 4], [-5, 2, 2]]
    got = _np(pg.tensor(a, device=device)[pg.tensor(idx, device=device)])
    np.testing.assert_array_equal(got, torch.tensor(a)[torch.tensor(idx)].numpy())


def test_masked_select_refuses_what_torch_refuses(device):
    """A mask that isn't bool (an int mask would pick by position) and shapes that don't
    broadcast raise RuntimeError, as torch's do."""
    x = pg.ones(3, device=device)
    with pytest.raises(RuntimeError, match="expected BoolTensor for mask"):
        pg.masked_select(x, pg.tensor([1, 0, 1], device=device))
    with pytest.raises(RuntimeError):
        torch.masked_select(torch.ones(3), torch.tensor([1, 0, 1]))
    with pytest.raises(RuntimeError, match=r"input \[3\] and mask \[2\]"):
        pg.masked_select(x, pg.tensor([True, False], device=device))
