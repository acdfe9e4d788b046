"""Movement ops against PyTorch: values, dtypes and gradients (float32/float64), forward-only for
integers, float64 finite differences, and the errors PyTorch raises."""
import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import _np, check_op, fd_check, lib, make_input


def F_pad(x, *args, **kwargs):
    return torch.nn.functional.pad(x, *args, **kwargs) if isinstance(x, torch.Tensor) else \
        pg.pad(x, *args, **kwargs)


# (id, fn, input shapes). Every fn runs unchanged on paragrad and torch tensors.
CASES = [
    ("reshape", lambda x: x.reshape(4, 3), [(3, 4)]),
    ("reshape_tuple", lambda x: x.reshape((2, -1, 3)), [(3, 4)]),
    ("reshape_neg1_last", lambda x: x.reshape(6, -1), [(3, 4)]),
    ("reshape_0d_to_2d", lambda x: x.reshape(1, 1), [()]),
    ("reshape_to_0d", lambda x: x.reshape(()), [(1, 1)]),
    ("reshape_empty", lambda x: x.reshape(3, 0, 2), [(0, 6)]),
    ("view", lambda x: x.view(12), [(3, 4)]),
    ("view_neg1", lambda x: x.view(-1), [(2, 3, 2)]),
    ("view_as", lambda x, y: x.view_as(y), [(3, 4), (2, 6)]),
    ("permute", lambda x: x.permute(2, 0, 1), [(2, 3, 4)]),
    ("permute_tuple_neg", lambda x: x.permute((-1, 0, 1)), [(2, 3, 4)]),
    ("permute_empty", lambda x: x.permute(1, 0), [(0, 3)]),
    ("transpose", lambda x: x.transpose(0, 2), [(2, 3, 4)]),
    ("transpose_neg", lambda x: x.transpose(-1, -2), [(2, 3, 4)]),
    ("transpose_0d", lambda x: x.transpose(0, -1), [()]),
    ("T_2d", lambda x: x.T, [(3, 4)]),
    ("mT", lambda x: x.mT, [(2, 3, 4)]),
    ("t_2d", lambda x: x.t(), [(3, 4)]),
    ("t_1d", lambda x: x.t(), [(4,)]),
    ("t_0d", lambda x: x.t(), [()]),
    ("unsqueeze0", lambda x: x.unsqueeze(0), [(3, 4)]),
    ("unsqueeze_neg", lambda x: x.unsqueeze(-1), [(3, 4)]),
    ("unsqueeze_mid", lambda x: x.unsqueeze(1), [(3, 4)]),
    ("unsqueeze_0d", lambda x: x.unsqueeze(0), [()]),
    ("squeeze_all", lambda x: x.squeeze(), [(1, 3, 1, 2)]),
    ("squeeze_dim", lambda x: x.squeeze(0), [(1, 3, 1, 2)]),
    ("squeeze_neg", lambda x: x.squeeze(-2), [(1, 3, 1, 2)]),
    ("squeeze_tuple", lambda x: x.squeeze((0, 2)), [(1, 3, 1, 2)]),
    ("squeeze_non1_noop", lambda x: x.squeeze(1), [(1, 3, 1, 2)]),
    ("squeeze_0d", lambda x: x.squeeze(), [()]),
    ("squeeze_empty", lambda x: x.squeeze(), [(0, 1)]),
    ("flatten", lambda x: x.flatten(), [(2, 3, 4)]),
    ("flatten_start", lambda x: x.flatten(1), [(2, 3, 4)]),
    ("flatten_start_end", lambda x: x.flatten(0, 1), [(2, 3, 4)]),
    ("flatten_neg", lambda x: x.flatten(-2, -1), [(2, 3, 4)]),
    ("flatten_0d", lambda x: x.flatten(), [()]),
    ("unflatten", lambda x: x.unflatten(1, (2, 2)), [(3, 4)]),
    ("unflatten_neg1", lambda x: x.unflatten(-1, (2, -1)), [(3, 4)]),
    ("expand", lambda x: x.expand(3, 4), [(1, 4)]),
    ("expand_neg1", lambda x: x.expand(-1, 4), [(3, 1)]),
    ("expand_lead", lambda x: x.expand(2, 3, 4), [(3, 1)]),
    ("expand_lead_neg1", lambda x: x.expand((2, -1, -1)), [(3, 4)]),
    ("expand_0d", lambda x: x.expand(2, 3), [()]),
    ("expand_as", lambda x, y: x.expand_as(y), [(1, 4), (3, 4)]),
    ("repeat", lambda x: x.repeat(2, 3), [(2, 3)]),
    ("repeat_lead", lambda x: x.repeat(2, 1, 2), [(3,)]),
    ("repeat_ones", lambda x: x.repeat(1, 1), [(2, 3)]),
    ("repeat_0d", lambda x: x.repeat(3), [()]),
    ("cat", lambda x, y: lib(x).cat([x, y]), [(2, 3), (1, 3)]),
    ("cat_dim1", lambda x, y: lib(x).cat((x, y), dim=1), [(2, 3), (2, 2)]),
    ("cat_neg", lambda x, y, z: lib(x).cat([x, y, z], -1), [(2, 1), (2, 3), (2, 2)]),
    ("cat_empty_part", lambda x, y: lib(x).cat([x, y], 0), [(0, 3), (2, 3)]),
    ("cat_legacy_1d_empty", lambda x, y: lib(x).cat([x, y], 1), [(0,), (2, 3)]),
    ("stack", lambda x, y: lib(x).stack([x, y]), [(2, 3), (2, 3)]),
    ("stack_dim1", lambda x, y: lib(x).stack([x, y], 1), [(2, 3), (2, 3)]),
    ("stack_neg", lambda x, y: lib(x).stack((x, y), dim=-1), [(2, 3), (2, 3)]),
    ("stack_0d", lambda x, y: lib(x).stack([x, y]), [(), ()]),
    ("split_int", lambda x: x.split(2, dim=1), [(3, 5)]),
    ("split_sections", lambda x: x.split([1, 3, 1], 1), [(3, 5)]),
    ("split_fn", lambda x: lib(x).split(x, 2), [(5, 2)]),
    ("chunk_uneven", lambda x: x.chunk(3, 1), [(2, 5)]),
    ("chunk_fewer", lambda x: x.chunk(4), [(5, 2)]),
    ("chunk_neg", lambda x: x.chunk(2, -1), [(2, 4)]),
    ("unbind", lambda x: x.unbind(1), [(2, 3)]),
    ("unbind_fn", lambda x: lib(x).unbind(x), [(3, 2)]),
    ("narrow", lambda x: x.narrow(1, 1, 2), [(3, 4)]),
    ("narrow_neg", lambda x: x.narrow(-1, -3, 2), [(3, 4)]),
    ("narrow_empty", lambda x: x.narrow(0, 3, 0), [(3, 4)]),
    ("pad_constant", lambda x: F_pad(x, (1, 2)), [(2, 3)]),
    ("pad_value", lambda x: F_pad(x, (1, 0, 2, 1), value=1.5), [(2, 3)]),
    ("pad_mode_value", lambda x: F_pad(x, [0, 1, 1, 1], "constant", 2.0), [(2, 3)]),
    ("pad_negative", lambda x: F_pad(x, (-1, 1, 0, -1)), [(3, 4)]),
    ("pad_negative_only", lambda x: F_pad(x, (-1, -2)), [(2, 5)]),
    ("pad_reflect", lambda x: F_pad(x, (2, 1), mode="reflect"), [(2, 3, 4)]),
    ("pad_reflect_2d", lambda x: F_pad(x, (1, 2, 2, 1), mode="reflect"), [(1, 2, 3, 4)]),
    ("pad_replicate", lambda x: F_pad(x, (3, 1), mode="replicate"), [(2, 3, 4)]),
    ("pad_replicate_2d", lambda x: F_pad(x, (1, 2, 2, 0), mode="replicate"), [(1, 2, 3, 4)]),
    ("pad_circular", lambda x: F_pad(x, (2, 1), mode="circular"), [(2, 3, 4)]),
    ("pad_circular_2d", lambda x: F_pad(x, (1, 1, 3, 2), mode="circular"), [(1, 2, 3, 4)]),
    ("flip", lambda x: x.flip(0), [(3, 4)]),
    ("flip_many", lambda x: x.flip((0, 2)), [(2, 3, 4)]),
    ("flip_neg", lambda x: lib(x).flip(x, [-1]), [(2, 3, 4)]),
    ("movedim", lambda x: x.movedim(0, -1), [(2, 3, 4)]),
    ("movedim_many", lambda x: x.movedim((0, 1), (2, 0)), [(2, 3, 4)]),
    ("movedim_fn", lambda x: lib(x).movedim(x, -1, 1), [(2, 3, 4)]),
    ("flip_0d", lambda x: x.flip(0), [()]),
    ("unsqueeze_0d_neg", lambda x: x.unsqueeze(-1), [()]),
    ("expand_empty", lambda x: x.expand(0, 3), [(0, 1)]),
    ("repeat_zero", lambda x: x.repeat(0, 2), [(2, 3)]),
    ("movedim_0d", lambda x: x.movedim(0, 0), [()]),
    ("squeeze_0d_dim", lambda x: x.squeeze(0), [()]),
    ("chunk_empty", lambda x: x.chunk(2, 1), [(2, 0)]),
    ("flatten_0d_dims", lambda x: x.flatten(0, 0), [()]),
    ("unflatten_one", lambda x: x.unflatten(1, (3, 1)), [(2, 3)]),
    ("swapaxes", lambda x: x.swapaxes(0, 1), [(2, 3)]),
    ("chain_view_grad", lambda x: x.permute(1, 0).reshape(-1)[::2].unsqueeze(0), [(3, 4)]),
]
IDS = [c[0] for c in CASES]
# torch implements the non-constant pad modes for floating point only
FLOAT_ONLY = {"pad_reflect", "pad_reflect_2d", "pad_replicate", "pad_replicate_2d", "pad_circular",
              "pad_circular_2d"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,shapes", CASES, ids=IDS)
def test_movement_float(device, name, fn, shapes, dtype):
    check_op(fn, shapes, dtype=dtype, device=device)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("name,fn,shapes", [c for c in CASES if c[0] not in FLOAT_ONLY],
                         ids=[i for i in IDS if i not in FLOAT_ONLY])
def test_movement_int(device, name, fn, shapes, dtype):
    check_op(fn, shapes, dtype=dtype, device=device, low=0, high=100, grad=False)


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=IDS)
def test_movement_fd(device, name, fn, shapes):
    fd_check(fn, shapes, device=device)


def test_movement_bool(device):
    check_op(lambda x: x.permute(1, 0).flip(0).reshape(-1), [(3, 4)], dtype="bool", device=device)


# ---- dtype promotion and views -----------------------------------------------------------------
@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("float32", "int32"), ("int64", "int32"),
                                    ("uint8", "int8"), ("bool", "int64")])
def test_cat_promotes(device, dtypes):
    import numpy as np
    from tests.helpers import make_input
    rng = np.random.default_rng(0)
    inputs = [make_input((2, 3), d, 0, 5, rng) for d in dtypes]
    check_op(lambda x, y: lib(x).cat([x, y], 0), None, device=device, inputs=inputs)
    check_op(lambda x, y: lib(x).cat([y, x], -1), None, device=device, inputs=inputs)


def test_views_share_memory(device):
    # views write through as in PyTorch (reshape of contiguous, permute, expand reads)
    x = pg.zeros(2, 3, device=device)
    x.view(6)[1] = 5
    x.t()[2, 1] = 7
    x.unsqueeze(0).squeeze(0).narrow(1, 0, 1)[0, 0] = 3
    assert x.tolist() == [[3, 5, 0], [0, 0, 7]]


def test_split_returns_tuple(device):
    parts = pg.arange(5, device=device).split(2)
    assert isinstance(parts, tuple) and [p.tolist() for p in parts] == [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("size", [2, 0, [0]])
def test_split_of_an_empty_dim_is_one_empty_piece(device, requires_grad, size):
    shapes = []
    for L in (torch, pg):
        x = L.zeros(0, 3, requires_grad=requires_grad, device=device if L is pg else "cpu")
        pieces = x.split(size)
        shapes.append([tuple(p.shape) for p in pieces])
    assert shapes[0] == shapes[1] == [(0, 3)]


def test_split_is_one_node_and_differentiates_twice(device):
    """split's pieces share one node (torch's SplitBackward0, output_nr per piece); a piece
    left unused gets zeros, and the join is itself differentiable (create_graph)."""
    a = make_input((4, 9), "float64")
    got = {}
    for lib in (pg, torch):
        x = lib.tensor(a, requires_grad=True) if lib is torch else pg.tensor(a, device=device, requires_grad=True)
        p = x.split([2, 3, 4], dim=1)
        assert p[0].grad_fn is p[2].grad_fn and [q.grad_fn is not None for q in p] == [True] * 3
        assert [q._output_nr if lib is pg else q.output_nr for q in p] == [0, 1, 2]
        loss = (p[0] ** 3).sum() + (p[2] * 2).sum()
        g, = lib.autograd.grad(loss, x, create_graph=True)
        gg, = lib.autograd.grad((g * g).sum(), x)
        got[lib] = (_np(g.detach()), _np(gg))
    for mine, theirs in zip(got[pg], got[torch]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


@pytest.mark.parametrize("write", [lambda p, q: p.mul_(3), lambda p, q: p.copy_(q),
                                   lambda p, q: p.__setitem__(0, 1.0), lambda p, q: p.relu_()])
def test_split_pieces_refuse_in_place_writes_as_torch(write):
    """Pieces of split/chunk (one node returning several views) can't be written in place
    while they require grad: torch's error, and nothing changes. Without grad they can."""
    for lib in (pg, torch):
        x = lib.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
        y = x * 1
        p, q = y.chunk(2)
        with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
            write(p, q)
        assert y.tolist() == np.arange(12.0).reshape(4, 3).tolist()
    with pg.no_grad():
        p, q = (pg.arange(12.0).reshape(4, 3) * 1).chunk(2)
        write(p, q)


# ---- errors: type, op name and the shapes in the message ------------------------------------
@pytest.mark.parametrize("fn,exc,words", [
    (lambda x: x.reshape(5, 2), RuntimeError, ["reshape", "[5, 2]", "12", "(3, 4)"]),
    (lambda x: x.view(-1, 5), RuntimeError, ["reshape", "[-1, 5]", "12", "(3, 4)"]),
    (lambda x: x.reshape(-1, -1), RuntimeError, ["reshape", "only one dimension"]),
    (lambda x: x.permute(0, 1, 2), RuntimeError, ["permute", "3", "2"]),
    (lambda x: x.permute(0, 0), RuntimeError, ["permute", "repeated"]),
    (lambda x: x.transpose(0, 2), IndexError, ["transpose", "range", "2"]),
    (lambda x: x.expand(3, 5), RuntimeError, ["expand", "[3, 5]", "[3, 4]"]),
    (lambda x: x.expand(4), RuntimeError, ["expand", "number of sizes"]),
    (lambda x: x.repeat(2), RuntimeError, ["repeat", "dimensions"]),
    (lambda x: x.t().t().unsqueeze(0).t(), RuntimeError, ["t()", "3D"]),
    (lambda x: x.squeeze(3), IndexError, ["squeeze", "range"]),
    (lambda x: x.flatten(1, 0), RuntimeError, ["flatten", "start_dim"]),
    (lambda x: x.unflatten(1, (3, 2)), RuntimeError, ["unflatten", "4"]),
    (lambda x: x.split([1, 1], 0), RuntimeError, ["split", "[1, 1]", "3"]),
    (lambda x: x.chunk(0), RuntimeError, ["chunk", "0"]),
    (lambda x: x.narrow(1, 3, 2), RuntimeError, ["narrow", "3", "2", "4"]),
    (lambda x: x.movedim((0, 1), 0), RuntimeError, ["movedim"]),
    (lambda x: x.flip((0, 0)), RuntimeError, ["flip"]),
    (lambda x: pg.cat([x, pg.zeros(3, 5, device=x.device)], 0), RuntimeError, ["cat", "[3, 4]", "[3, 5]"]),
    (lambda x: pg.cat([x, pg.zeros(3, device=x.device)], 0), RuntimeError, ["cat", "[3, 4]", "[3]"]),
    (lambda x: pg.cat([], 0), ValueError, ["cat", "non-empty"]),     # torch: ValueError
    (lambda x: pg.cat(x, 0), TypeError, ["cat", "tuple or list"]),
    (lambda x: pg.stack([x, pg.zeros(4, 3, device=x.device)]), RuntimeError, ["stack", "[3, 4]", "[4, 3]"]),
    (lambda x: pg.pad(x, (1,)), RuntimeError, ["pad", "divisible by 2"]),
    (lambda x: pg.pad(x, (4, 0), mode="reflect"), RuntimeError, ["pad", "(4, 0)", "(3, 4)"]),
    (lambda x: pg.pad(x, (5, 0), mode="circular"), RuntimeError, ["pad", "wrapping"]),
    (lambda x: pg.pad(x, (-3, -2)), RuntimeError, ["pad", "(-3, -2)", "(3, 4)"]),
    (lambda x: pg.pad(x, (1, 1), mode="edge"), NotImplementedError, ["pad", "edge"]),
])
def test_movement_errors(device, fn, exc, words):
    x = pg.zeros(3, 4, device=device, requires_grad=True)
    with pytest.raises(exc) as info:
        fn(x)
    for w in words:
        assert w in str(info.value), f"{w!r} not in message: {info.value}"
    assert x.grad_fn is None and x.grad is None   # a failing op leaves its input untouched


def test_movement_errors_match_torch_types():
    # spot check that PyTorch raises the same exception classes for the same misuse
    x = torch.zeros(3, 4)
    for fn, exc in [(lambda x: x.reshape(5, 2), RuntimeError), (lambda x: x.transpose(0, 2), IndexError),
                    (lambda x: x.expand(3, 5), RuntimeError), (lambda x: x.squeeze(3), IndexError),
                    (lambda x: x.narrow(1, 3, 2), RuntimeError), (lambda x: x.chunk(0), RuntimeError)]:
        with pytest.raises(exc):
            fn(x)


def test_cat_of_mixed_dtypes_gives_each_input_a_gradient_of_its_dtype(device):
    """cat promotes; its gradient goes back to each input in that input's dtype, as torch's engine
    casts it (a float32 gradient reaching a float16 matmul corrupted CUDA GEMMs)."""
    for create_graph in (False, True):      # the buffer path and the recorded path
        grads = {}
        for lib in (torch, pg):
            kw = {"device": device} if lib is pg else {}
            a = lib.tensor([[1.0, 2.0]], requires_grad=True, **kw)
            c = lib.tensor([[3.0, 4.0]], requires_grad=True, **kw)
            h = a.half() * 2
            h.retain_grad()
            out = lib.cat([h, c])
            assert str(out.dtype).endswith("float32")
            (out * lib.tensor([[1.0, 2.0], [3.0, 4.0]], **kw)).sum().backward(create_graph=create_graph)
            grads[lib] = (str(h.grad.dtype).split(".")[-1], a.grad.tolist(), c.grad.tolist())
        assert grads[pg] == grads[torch] and grads[pg][0] == "float16"
