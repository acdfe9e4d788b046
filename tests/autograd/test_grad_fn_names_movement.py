"""grad_fn class names of the movement, view, indexing, conversion and in-place ops: each form
of each op (overloads and layouts that torch names differently) gives torch's CPU name,
computed live by running the same call on torch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import needs_torch_2_13


def T(L, data, dtype=None):
    """An index (or value) tensor of library L."""
    return L.tensor(data, dtype=getattr(L, dtype) if dtype else None)


def inplace(op):
    """op applied in place to a non-leaf copy of the input: the copy's node after it."""
    def f(L, x):
        y = x * 1
        op(L, y)
        return y
    return f


def F(L):
    return L.nn.functional


IDX = [[0], [2], [1]]          # a (3, 1) index into a (3, 4) input along dim 1
ROWS = [
    # reshape family: a view of a contiguous tensor, an alias of a strided one it can view, a copy
    ("reshape", lambda L, x: x.reshape(4, 3), [(3, 4)]),
    ("reshape_strided_view", lambda L, x: x.t().reshape(4, 3, 1), [(3, 4)]),
    ("reshape_strided_same", lambda L, x: x.t().reshape(4, 3), [(3, 4)]),
    ("reshape_copy", lambda L, x: x.t().reshape(-1), [(3, 4)]),
    ("reshape_sliced_copy", lambda L, x: x[:, :2].reshape(6), [(3, 4)]),
    ("reshape_expanded_copy", lambda L, x: x.expand(2, 4).reshape(8), [(4,)]),
    ("reshape_as_strided", lambda L, x: x.t().reshape_as(x.t()), [(3, 4)]),
    ("view", lambda L, x: x.view(12), [(3, 4)]),
    ("view_strided", lambda L, x: x.t().view(4, 3, 1), [(3, 4)]),
    ("view_as", lambda L, x: x.t().view_as(x.t()), [(3, 4)]),
    ("flatten", lambda L, x: x.flatten(), [(2, 3, 4)]),
    ("flatten_copy", lambda L, x: x.transpose(0, 1).flatten(), [(2, 3, 4)]),
    ("flatten_0d", lambda L, x: x.flatten(), [()]),
    ("unflatten_strided", lambda L, x: x.t().unflatten(0, (2, 2)), [(3, 4)]),
    ("ravel_strided", lambda L, x: x.t().ravel(), [(3, 4)]),
    ("unsqueeze", lambda L, x: x.unsqueeze(1), [(3, 4)]),
    ("squeeze()", lambda L, x: x.squeeze(), [(1, 3, 1)]),
    ("squeeze(dim)", lambda L, x: x.squeeze(2), [(1, 3, 1)]),
    ("squeeze(dims)", lambda L, x: x.squeeze((0, 2)), [(1, 3, 1)]),
    ("atleast_2d", lambda L, x: L.atleast_2d(x), [(3,)]),
    ("atleast_3d_0d", lambda L, x: L.atleast_3d(x), [()]),
    ("atleast_3d_1d", lambda L, x: L.atleast_3d(x), [(3,)]),
    # permutations
    ("permute", lambda L, x: x.permute(2, 0, 1), [(2, 3, 4)]),
    ("T", lambda L, x: x.T, [(3, 4)]),
    ("movedim", lambda L, x: x.movedim(0, -1), [(2, 3, 4)]),
    ("movedim_0d", lambda L, x: x.movedim(0, 0), [()]),
    ("transpose", lambda L, x: x.transpose(0, 2), [(2, 3, 4)]),
    ("transpose_0d", lambda L, x: x.transpose(0, -1), [()]),
    ("swapaxes", lambda L, x: x.swapaxes(0, 1), [(2, 3)]),
    ("mT", lambda L, x: x.mT, [(2, 3, 4)]),
    ("adjoint", lambda L, x: x.adjoint(), [(3, 4)]),
    ("t", lambda L, x: x.t(), [(3, 4)]),
    ("t_1d", lambda L, x: x.t(), [(4,)]),
    # broadcasting and repeats
    ("expand", lambda L, x: x.expand(3, 4), [(1, 4)]),
    ("expand_same", lambda L, x: x.expand(3, 4), [(3, 4)]),
    ("broadcast_to", lambda L, x: L.broadcast_to(x, (2, 4)), [(4,)]),
    ("meshgrid_xy", lambda L, x, y: L.meshgrid(x, y, indexing="xy")[0], [(3,), (4,)]),
    ("repeat", lambda L, x: x.repeat(2, 1), [(2, 3)]),
    ("tile", lambda L, x: x.tile(2), [(2, 3)]),
    ("repeat_interleave", lambda L, x: x.repeat_interleave(2, 1), [(2, 3)]),
    ("repeat_interleave_flat", lambda L, x: x.repeat_interleave(2), [(2, 3)]),
    ("repeat_interleave_tensor", lambda L, x: x.repeat_interleave(T(L, 2), 0), [(2, 3)]),
    ("repeat_interleave_counts", lambda L, x: x.repeat_interleave(T(L, [1, 0, 2]), 1), [(2, 3)]),
    # slicing and splitting
    ("narrow", lambda L, x: x.narrow(1, 1, 2), [(3, 4)]),
    ("select", lambda L, x: x.select(1, -1), [(3, 4)]),
    ("split", lambda L, x: x.split(2, 1)[1], [(3, 5)]),
    ("split_one_piece", lambda L, x: x.split(5, 1)[0], [(3, 4)]),
    ("split_sizes", lambda L, x: x.split([1, 3], 1)[0], [(3, 4)]),
    ("split_sizes_one_piece", lambda L, x: x.split([4], 1)[0], [(3, 4)]),
    ("chunk", lambda L, x: x.chunk(2)[0], [(4, 3)]),
    ("chunk_empty_dim", lambda L, x: x.chunk(2, 1)[0], [(2, 0)]),
    ("unbind", lambda L, x: x.unbind(1)[0], [(2, 3)]),
    ("tensor_split", lambda L, x: x.tensor_split(2, 1)[0], [(3, 4)]),
    # copies: join, pad, flip, roll
    ("cat", lambda L, x, y: L.cat([x, y]), [(2, 3), (1, 3)]),
    ("stack", lambda L, x, y: L.stack([x, y], 1), [(2, 3), (2, 3)]),
    ("hstack", lambda L, x, y: L.hstack([x, y]), [(2, 3), (2, 3)]),
    ("column_stack", lambda L, x, y: L.column_stack([x, y]), [(3,), (3,)]),
    ("pad_constant", lambda L, x: F(L).pad(x, (1, 2)), [(2, 3)]),
    ("pad_reflect_1d", lambda L, x: F(L).pad(x, (2, 1), mode="reflect"), [(2, 3, 4)]),
    ("pad_reflect_2d", lambda L, x: F(L).pad(x, (1, 1, 1, 1), mode="reflect"), [(1, 2, 3, 4)]),
    ("pad_replicate_1d", lambda L, x: F(L).pad(x, (2, 1), mode="replicate"), [(2, 3, 4)]),
    ("pad_replicate_3d", lambda L, x: F(L).pad(x, (1,) * 6, mode="replicate"), [(1, 2, 3, 3, 3)]),
    ("pad_circular", lambda L, x: F(L).pad(x, (2, 1), mode="circular"), [(2, 3, 4)]),
    ("flip", lambda L, x: x.flip(0), [(3, 4)]),
    ("fliplr", lambda L, x: x.fliplr(), [(3, 4)]),
    ("roll", lambda L, x: x.roll(1, 0), [(3, 4)]),
    ("roll_flat", lambda L, x: x.roll(2), [(3, 4)]),
    ("narrow_copy", lambda L, x: x.narrow_copy(1, 1, 2), [(3, 4)]),
    # rearrangements
    ("rot90", lambda L, x: x.rot90(1), [(3, 4)]),
    ("rot90_k2", lambda L, x: x.rot90(2), [(3, 4)]),
    ("rot90_k4", lambda L, x: x.rot90(4), [(3, 4)]),
    ("tril", lambda L, x: x.tril(), [(3, 4)]),
    ("triu", lambda L, x: x.triu(1), [(3, 4)]),
    ("diagonal", lambda L, x: x.diagonal(1, 0, 2), [(3, 2, 4)]),
    ("diag_2d", lambda L, x: x.diag(), [(3, 4)]),
    ("diag_1d", lambda L, x: x.diag(1), [(3,)]),
    ("diag_embed", lambda L, x: x.diag_embed(), [(2, 3)]),
    ("diagflat", lambda L, x: x.diagflat(), [(2, 2)]),
    ("trace", lambda L, x: x.trace(), [(3, 4)]),
    ("cumsum", lambda L, x: x.cumsum(1), [(3, 4)]),
    ("cumprod", lambda L, x: x.cumprod(1), [(3, 4)]),
    ("logcumsumexp", lambda L, x: x.logcumsumexp(0), [(3, 4)]),
    ("unfold", lambda L, x: x.unfold(1, 2, 1), [(3, 4)]),
    ("cross", lambda L, x, y: L.linalg.cross(x, y), [(2, 3), (2, 3)]),
    ("block_diag", lambda L, x, y: L.block_diag(x, y), [(2, 2), (1, 3)]),
    ("combinations", lambda L, x: L.combinations(x), [(4,)]),
    ("vander", lambda L, x: L.vander(x), [(3,)]),
    ("vander_increasing", lambda L, x: L.vander(x, increasing=True), [(3,)]),
    ("cdist", lambda L, x, y: L.cdist(x, y), [(3, 2), (4, 2)]),
    ("cdist_p1", lambda L, x, y: L.cdist(x, y, p=1), [(3, 2), (4, 2)]),
    ("cdist_many_rows", lambda L, x, y: L.cdist(x, y), [(26, 2), (3, 2)]),
    ("tensordot", lambda L, x, y: L.tensordot(x, y, 1), [(2, 3), (3, 4)]),
    # indexing
    ("getitem_int", lambda L, x: x[1], [(3, 4)]),
    ("getitem_slice", lambda L, x: x[1:], [(3, 4)]),
    ("getitem_full_slice", lambda L, x: x[:], [(3, 4)]),
    ("getitem_full_slices", lambda L, x: x[:, 0:9], [(3, 4)]),
    ("getitem_slice_then_int", lambda L, x: x[1:, 2], [(3, 4)]),
    ("getitem_int_then_full", lambda L, x: x[1, :], [(3, 4)]),
    ("getitem_ellipsis", lambda L, x: x[...], [(3, 4)]),
    ("getitem_0d_empty_tuple", lambda L, x: x[()], [()]),
    ("getitem_none", lambda L, x: x[:, None], [(3, 4)]),
    ("getitem_int_none", lambda L, x: x[1, None], [(3, 4)]),
    ("getitem_0d_int_tensor", lambda L, x: x[T(L, 1)], [(3, 4)]),
    ("getitem_0d_int_tensor_slice", lambda L, x: x[T(L, 1), 1:], [(3, 4)]),
    ("getitem_list", lambda L, x: x[[2, 0]], [(3, 4)]),
    ("getitem_mask", lambda L, x: x[x > 0], [(3, 4)]),
    ("getitem_two_lists", lambda L, x: x[:, [0, 1], [1, 2]], [(2, 3, 4)]),
    ("getitem_bool", lambda L, x: x[True], [(3, 4)]),
    ("index_select", lambda L, x: x.index_select(1, T(L, [0, 2])), [(3, 4)]),
    ("index_select_0d", lambda L, x: x.index_select(0, T(L, [0])), [()]),
    ("masked_select", lambda L, x: x.masked_select(T(L, [True, False, True, True])), [(3, 4)]),
    ("take", lambda L, x: x.take(T(L, [0, 5])), [(3, 4)]),
    ("take_along_dim", lambda L, x: x.take_along_dim(T(L, IDX), 1), [(3, 4)]),
    ("gather", lambda L, x: x.gather(1, T(L, IDX)), [(3, 4)]),
    ("scatter", lambda L, x, s: x.scatter(1, T(L, IDX), s), [(3, 4), (3, 1)]),
    ("scatter_value", lambda L, x: x.scatter(1, T(L, IDX), 1.5), [(3, 4)]),
    ("scatter_add", lambda L, x, s: x.scatter_add(1, T(L, IDX), s), [(3, 4), (3, 1)]),
    *((f"scatter_reduce_{r}", lambda L, x, s, r=r: x.scatter_reduce(1, T(L, IDX), s, r), [(3, 4), (3, 1)])
      for r in ("sum", "mean", "prod", "amax")),
    ("index_add", lambda L, x, s: x.index_add(1, T(L, [0, 2]), s), [(3, 4), (3, 2)]),
    ("index_copy", lambda L, x, s: x.index_copy(1, T(L, [0, 2]), s), [(3, 4), (3, 2)]),
    ("index_fill", lambda L, x: x.index_fill(1, T(L, [0, 2]), 1.5), [(3, 4)]),
    ("index_fill_tensor", lambda L, x: x.index_fill(1, T(L, [0, 2]), T(L, 1.5)), [(3, 4)]),
    ("index_put", lambda L, x, v: x.index_put((T(L, [0, 2]),), v), [(3, 4), (4,)]),
    ("put", lambda L, x, v: x.put(T(L, [0, 5]), v), [(3, 4), (2,)]),
    ("masked_scatter", lambda L, x, v: x.masked_scatter(x > 0, v), [(3, 4), (12,)]),
    # conversion
    ("to_dtype", lambda L, x: x.to(L.float64), [(3, 4)]),
    ("double", lambda L, x: x.double(), [(3, 4)]),
    ("to_copy", lambda L, x: x.to(L.float32, copy=True), [(3, 4)]),
    ("to_channels_last", lambda L, x: x.to(memory_format=L.channels_last), [(1, 2, 3, 4)]),
    ("clone", lambda L, x: x.clone(), [(3, 4)]),
    ("contiguous", lambda L, x: x.t().contiguous(), [(3, 4)]),
    ("contiguous_channels_last", lambda L, x: x.contiguous(memory_format=L.channels_last),
     [(1, 2, 3, 4)]),
    # in place
    ("setitem_int", inplace(lambda L, y: y.__setitem__(0, 1.0)), [(3, 4)]),
    ("setitem_int_then_list", inplace(lambda L, y: y.__setitem__((1, [0, 1]), 1.0)), [(3, 4)]),
    ("setitem_none", inplace(lambda L, y: y.__setitem__(None, 1.0)), [(3, 4)]),
    ("setitem_list", inplace(lambda L, y: y.__setitem__([0, 2], 1.0)), [(3, 4)]),
    ("setitem_mask", inplace(lambda L, y: y.__setitem__(y > 0, 1.0)), [(3, 4)]),
    ("setitem_all_number", inplace(lambda L, y: y.__setitem__(slice(None), 1.0)), [(3, 4)]),
    ("setitem_all_tensor", inplace(lambda L, y: y.__setitem__(..., T(L, [1.0, 2.0, 3.0, 4.0]))),
     [(3, 4)]),
    ("setitem_empty_slice", inplace(lambda L, y: y.__setitem__(slice(5, None), -1.0)), [(3, 4)]),
    ("index_put_", inplace(lambda L, y: y.index_put_((T(L, [0]),), T(L, 1.0))), [(3, 4)]),
    ("index_add_", inplace(lambda L, y: y.index_add_(0, T(L, [0]), L.ones(1, 4))), [(3, 4)]),
    ("scatter_", inplace(lambda L, y: y.scatter_(0, T(L, [[0]]), 1.0)), [(3, 4)]),
    ("tril_", inplace(lambda L, y: y.tril_()), [(3, 4)]),
    ("copy_", lambda L, x, s: (x * 1).copy_(s), [(3, 4), (4,)]),
    ("copy_source_without_grad", lambda L, x: (x * 1).copy_(L.zeros(4)), [(3, 4)]),
    *((f"{op}_", inplace(lambda L, y, op=op, a=a: getattr(y, op + "_")(*a)), [(3, 4)]) for op, a in (
        ("uniform", ()), ("normal", ()), ("bernoulli", (0.5,)), ("exponential", ()),
        ("geometric", (0.5,)), ("random", (0, 5)))),
    ("fill_", inplace(lambda L, y: y.fill_(2.0)), [(3, 4)]),
    ("fill_tensor", inplace(lambda L, y: y.fill_(T(L, 2.0))), [(3, 4)]),
    ("zero_", inplace(lambda L, y: y.zero_()), [(3, 4)]),
    ("t_", inplace(lambda L, y: y.t_()), [(3, 4)]),
    ("transpose_", inplace(lambda L, y: y.transpose_(0, 1)), [(3, 4)]),
    ("unsqueeze_", inplace(lambda L, y: y.unsqueeze_(0)), [(3, 4)]),
    ("squeeze_()", inplace(lambda L, y: y.squeeze_()), [(1, 4)]),
    ("squeeze_(dim)", inplace(lambda L, y: y.squeeze_(0)), [(1, 4)]),
    ("squeeze_(dims)", inplace(lambda L, y: y.squeeze_((0,))), [(1, 4)]),
]


NAMED_SINCE_2_13 = {"narrow_copy"}     # older torch calls its node NotImplemented


@pytest.mark.parametrize("fn,shapes", [
    pytest.param(*r[1:], id=r[0], marks=needs_torch_2_13 if r[0] in NAMED_SINCE_2_13 else ()) for r in ROWS])
def test_grad_fn_is_named_as_torch(fn, shapes, device):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want = fn(torch, *(torch.tensor(a, requires_grad=True) for a in arrays)).grad_fn
    pg.set_default_device(device)        # (the index and value tensors the rows make)
    try:
        got = fn(pg, *(pg.tensor(a, requires_grad=True) for a in arrays)).grad_fn
    finally:
        pg.set_default_device(None)
    assert type(got).__name__ == type(want).__name__ == got.name()
