"""Transposed convolutions, unfold/fold, pixel/channel shuffles against PyTorch: values,
gradients, module parameters and reprs, errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
from tests.helpers import check_op, fd_check

F = pg.nn.functional


def lib_of(x):
    return TF if isinstance(x, torch.Tensor) else F


@pytest.mark.parametrize("shapes,kw", [
    ([(2, 4, 5, 6), (4, 3, 3, 2), (6,)], {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
    ([(2, 4, 5, 6), (4, 3, 3, 2)], {"stride": (2, 3), "padding": (2, 0), "output_padding": (0, 1),
                                    "dilation": (2, 1)}),
    ([(4, 5, 6), (4, 3, 3, 3)], {"padding": 4, "dilation": 3}),
    ([(1, 3, 4, 4), (3, 2, 2, 2), (2,)], {}),
], ids=["strided-grouped", "mixed", "unbatched-crop", "plain"])
def test_conv_transpose2d_matches_torch(shapes, kw, device):
    check_op(lambda x, w, b=None: lib_of(x).conv_transpose2d(x, w, b, **kw), shapes, device=device)


@pytest.mark.parametrize("shapes,kw", [
    ([(2, 4, 7), (4, 3, 3), (3,)], {"stride": 3, "padding": 1, "output_padding": 2}),
    ([(4, 6), (4, 1, 2)], {"groups": 2, "dilation": (2,)}),
])
def test_conv_transpose1d_matches_torch(shapes, kw, device):
    check_op(lambda x, w, b=None: lib_of(x).conv_transpose1d(x, w, b, **kw), shapes, device=device)


def test_conv_transpose_finite_differences(device):
    fd_check(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
             [(1, 2, 3, 3), (2, 2, 2, 2), (2,)], device=device)


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


@pytest.mark.parametrize("fn,arg,shape", [("pixel_shuffle", 2, (2, 3, 8, 2, 3)),
                                          ("pixel_shuffle", 3, (9, 2, 2)),
                                          ("pixel_unshuffle", 2, (2, 3, 4, 6)),
                                          ("channel_shuffle", 3, (2, 6, 3)),
                                          ("channel_shuffle", 2, (2, 4, 3, 2))])
def test_shuffles_match_torch(fn, arg, shape, device):
    check_op(lambda x: getattr(lib_of(x), fn)(x, arg), [shape], device=device)


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


@pytest.mark.parametrize("cls,args,kw,shape", [
    ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}, (2, 4, 5, 5)),
    ("ConvTranspose2d", (3, 2, (2, 3)), {"bias": False, "dilation": 2}, (3, 4, 4)),
    ("ConvTranspose1d", (4, 2, 3), {"stride": 3}, (2, 4, 6)),
])
def test_conv_transpose_modules(cls, args, kw, shape, device):
    tm = getattr(torch.nn, cls)(*args, **kw)
    pm = getattr(pg.nn, cls)(*args, **kw)
    assert repr(pm) == repr(tm)
    assert {k: tuple(v.shape) for k, v in pm.state_dict().items()} == \
           {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    bound = 1 / np.sqrt(tm.weight.shape[1] * np.prod(tm.weight.shape[2:]))   # fan_in of (in, out/g, k)
    assert np.abs(pm.weight.detach().numpy()).max() <= bound + 1e-6
    pm.load_state_dict({k: pg.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    pm = pm.to(device)
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    want = tm(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(pm(pg.tensor(x, device=device)).cpu().detach().numpy(), want, atol=1e-5)


def test_conv_transpose_output_size(device):
    tm, pm = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2), pg.nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2)
    pm.load_state_dict({k: pg.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    pm = pm.to(device)
    x = np.random.default_rng(1).standard_normal((1, 4, 5, 5)).astype("float32")
    for size in [(12, 12), [1, 6, 11, 12], (11, 11)]:
        want = tm(torch.tensor(x), output_size=size).detach().numpy()
        got = pm(pg.tensor(x, device=device), output_size=size).cpu().detach().numpy()
        np.testing.assert_allclose(got, want, atol=1e-5)
    with pytest.raises(ValueError, match="requested an output size"):
        pm(pg.tensor(x, device=device), output_size=(20, 20))
    with pytest.raises(ValueError, match="padding mode"):
        pg.nn.ConvTranspose2d(4, 6, 3, padding_mode="reflect")


def test_shape_modules(device):
    x = pg.randn(2, 8, 4, 6, device=device)
    for pm, tm in [(pg.nn.Unfold(2), torch.nn.Unfold(2)),
                   (pg.nn.Fold((4, 4), 2), torch.nn.Fold((4, 4), 2)),
                   (pg.nn.PixelShuffle(2), torch.nn.PixelShuffle(2)),
                   (pg.nn.PixelUnshuffle(2), torch.nn.PixelUnshuffle(2)),
                   (pg.nn.ChannelShuffle(2), torch.nn.ChannelShuffle(2))]:
        assert repr(pm) == repr(tm)
        assert not pm.state_dict()
    t = torch.tensor(x.cpu().numpy())
    for pm, tm, inp in [(pg.nn.PixelShuffle(2), torch.nn.PixelShuffle(2), x),
                        (pg.nn.PixelUnshuffle(2), torch.nn.PixelUnshuffle(2), x),
                        (pg.nn.ChannelShuffle(4), torch.nn.ChannelShuffle(4), x),
                        (pg.nn.Unfold(3, padding=1), torch.nn.Unfold(3, padding=1), x)]:
        np.testing.assert_array_equal(pm(inp).cpu().numpy(), tm(t).numpy())
    cols = pg.randn(2, 12, 9, device=device)
    np.testing.assert_allclose(pg.nn.Fold((4, 4), 2)(cols).cpu().numpy(),
                               torch.nn.Fold((4, 4), 2)(torch.tensor(cols.cpu().numpy())).numpy(), atol=1e-6)


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
