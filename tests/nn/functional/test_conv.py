"""F's convolutions against PyTorch: conv1d, the transposed convolutions (through the backend's
conv_transpose2d fast path where it has one, and through the composition), unfold / fold (values,
gradients, finite differences, double backward, integer dtypes), the argument errors of these
and of the shuffles, and the top-level aliases (pg.conv_transpose2d, pg.pixel_shuffle, ...)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
from paragrad.backends.base import fast_paths
from tests.helpers import check_op, fd_check


F = pg.nn.functional


def lib_of(x):
    return TF if isinstance(x, torch.Tensor) else F


@pytest.mark.parametrize("shapes,kw", [
    ([(2, 3, 9), (4, 3, 3), (4,)], {}),
    ([(2, 4, 11), (6, 2, 3), (6,)], {"stride": 2, "padding": 2, "dilation": 2, "groups": 2}),
    ([(3, 10), (5, 3, 4)], {"padding": "same"}),
    ([(2, 3, 8), (4, 3, 3)], {"stride": (3,), "padding": (1,)}),
], ids=["plain", "strided-grouped", "unbatched-same", "tuples"])
def test_conv1d_matches_torch(shapes, kw, device):
    check_op(lambda x, w, b=None: lib_of(x).conv1d(x, w, b, **kw), shapes, device=device)


def test_conv1d_finite_differences(device):
    fd_check(lambda x, w, b: F.conv1d(x, w, b, padding=1), [(2, 2, 5), (3, 2, 3), (3,)], device=device)


@pytest.mark.parametrize("shapes,kw", [
    ([(2, 4, 5, 6), (4, 3, 3, 2), (6,)], {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
    ([(2, 4, 5, 6), (4, 3, 3, 2)], {"stride": (2, 3), "padding": (2, 0), "output_padding": (0, 1),
                                    "dilation": (2, 1)}),
    ([(4, 5, 6), (4, 3, 3, 3)], {"padding": 4, "dilation": 3}),
    ([(1, 3, 4, 4), (3, 2, 2, 2), (2,)], {}),
    ([(2, 16, 4, 4), (16, 8, 4, 4)], {"stride": 2, "padding": 1}),        # a DCGAN's upsampling
], ids=["strided-grouped", "mixed", "unbatched-crop", "plain", "dcgan"])
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "composite"])
def test_conv_transpose2d_matches_torch(shapes, kw, fast, device):
    with fast_paths(fast):
        check_op(lambda x, w, b=None: lib_of(x).conv_transpose2d(x, w, b, **kw), shapes, device=device)


@pytest.mark.parametrize("shapes,kw", [
    ([(2, 4, 7), (4, 3, 3), (3,)], {"stride": 3, "padding": 1, "output_padding": 2}),
    ([(4, 6), (4, 1, 2)], {"groups": 2, "dilation": (2,)}),
])
def test_conv_transpose1d_matches_torch(shapes, kw, device):
    check_op(lambda x, w, b=None: lib_of(x).conv_transpose1d(x, w, b, **kw), shapes, device=device)


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "composite"])
def test_conv_transpose_finite_differences(fast, device):
    with fast_paths(fast):
        fd_check(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                 [(1, 2, 3, 3), (2, 2, 2, 2), (2,)], device=device)


def test_conv_transpose2d_double_backward_as_torch(device):
    """create_graph through conv_transpose2d (a gradient penalty on a generator's input)."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in [(2, 4, 3, 3), (4, 3, 3, 3), (3,)]]
    results = []
    for lib in (torch, pg):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in arrays)
        if lib is pg:
            x, w, b = (t.to(device).detach().requires_grad_() for t in (x, w, b))
        y = lib_of(x).conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)
        gx, gw = lib.autograd.grad((y * y).sum(), (x, w), create_graph=True)
        ((gx * gx).sum() + (gw * gw * gw).sum()).backward()
        results.append([t.grad.detach().cpu().numpy() for t in (x, w, b)])
    for a, p in zip(*results):
        np.testing.assert_allclose(p, a, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kw", [{"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1, "stride": (2, 1)},
                                {"kernel_size": 3}, {"kernel_size": 2, "stride": 2}])
@pytest.mark.parametrize("shape", [(2, 3, 7, 8), (3, 6, 6)])
def test_unfold_matches_torch(kw, shape, device):
    check_op(lambda x: lib_of(x).unfold(x, **kw), [shape], device=device)


@pytest.mark.parametrize("shape,out,kw", [
    ((2, 18, 24), (7, 8), {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1, "stride": (2, 1)}),
    ((12, 9), (6, 6), {"kernel_size": 2, "stride": 2}),
    ((1, 12, 4), (5, 5), {"kernel_size": 2, "stride": 3}),
])
def test_fold_matches_torch(shape, out, kw, device):
    check_op(lambda x: lib_of(x).fold(x, out, **kw), [shape], device=device)


def test_unfold_fold_int_dtype(device):
    a = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5).astype("int64")
    got = F.unfold(pg.tensor(a, device=device), 2, padding=1).cpu().numpy()
    np.testing.assert_array_equal(got, TF.unfold(torch.tensor(a).double(), 2, padding=1).long().numpy())


@pytest.mark.parametrize("call", [
    lambda L, T: L.conv_transpose2d(T(1, 4, 5, 5), T(4, 2, 3, 3), stride=2, output_padding=2),
    lambda L, T: L.conv_transpose2d(T(1, 5, 5, 5), T(4, 2, 3, 3)),
    lambda L, T: L.conv_transpose2d(T(5, 5), T(4, 2, 3, 3)),
    lambda L, T: L.conv_transpose2d(T(1, 4, 5, 5), T(4, 2, 3, 3), groups=3),
    lambda L, T: L.conv_transpose2d(T(1, 4, 5, 5), T(4, 2, 3, 3), T(3)),
    lambda L, T: L.conv_transpose2d(T(1, 4, 5, 5), T(4, 2, 3, 3), padding=5),
    lambda L, T: L.conv_transpose2d(T(1, 4, 5, 5), T(4, 2, 3, 3), stride=0),
    lambda L, T: L.conv_transpose2d(T(1, 4, 5, 5), T(4, 2, 3, 3), padding=(1, 2, 3)),
    lambda L, T: L.conv_transpose1d(T(1, 4, 5), T(4, 2, 3), stride=2, output_padding=2),
    lambda L, T: L.unfold(T(1, 2, 3, 3), 4),
    lambda L, T: L.fold(T(1, 12, 5), (3, 3), 2),
    lambda L, T: L.fold(T(1, 7, 4), (3, 3), 2),
    lambda L, T: L.pixel_shuffle(T(1, 5, 2, 2), 2),
    lambda L, T: L.pixel_shuffle(T(5, 2), 2),
    lambda L, T: L.pixel_unshuffle(T(1, 1, 3, 4), 2),
    lambda L, T: L.pixel_unshuffle(T(1, 1, 4, 3), 2),
    lambda L, T: L.channel_shuffle(T(1, 5, 2, 2), 2),
    lambda L, T: L.channel_shuffle(T(5, 2), 1),
])
def test_errors_match_torch_types(call):
    with pytest.raises(Exception) as te:
        call(TF, torch.randn)
    with pytest.raises(type(te.value)):
        call(F, pg.randn)


def test_top_level_aliases_as_torch():
    x = np.arange(32.0, dtype=np.float32).reshape(1, 8, 2, 2)
    for name, args in [("pixel_shuffle", (2,)), ("pixel_unshuffle", (2,)), ("channel_shuffle", (2,))]:
        a = getattr(pg, name)(pg.tensor(x), *args)
        b = getattr(torch, name)(torch.tensor(x), *args)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    w = np.ones((8, 3, 2, 2), dtype=np.float32)
    np.testing.assert_allclose(pg.conv_transpose2d(pg.tensor(x), pg.tensor(w), stride=2).numpy(),
                               torch.conv_transpose2d(torch.tensor(x), torch.tensor(w), stride=2).numpy())
    assert pg.conv_transpose1d is pg.nn.functional.conv_transpose1d
