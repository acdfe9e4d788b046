"""F's pooling against PyTorch: the 1-D pools (conv2d's pools over a height-1 image) with indices,
adaptive max pooling, LP pooling and max unpooling (F and modules): values, indices,
gradients, reprs and errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
from tests.helpers import check_op, lib


F = pg.nn.functional


def lib_of(x):
    return TF if isinstance(x, torch.Tensor) else F


@pytest.mark.parametrize("fn,kw", [("max_pool1d", {"kernel_size": 3}),
                                   ("max_pool1d", {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
                                   ("max_pool1d", {"kernel_size": 2, "dilation": 2}),
                                   ("avg_pool1d", {"kernel_size": 3, "stride": 2, "padding": 1}),
                                   ("avg_pool1d", {"kernel_size": 3, "count_include_pad": False, "padding": 1}),
                                   ("adaptive_avg_pool1d", {"output_size": 4})])
@pytest.mark.parametrize("shape", [(2, 3, 10), (3, 9)])
def test_pool1d_matches_torch(fn, kw, shape, device):
    check_op(lambda x: getattr(lib_of(x), fn)(x, **kw), [shape], device=device)


def test_max_pool1d_indices_match_torch():
    x = np.random.default_rng(0).standard_normal((2, 3, 10)).astype(np.float32)
    v, i = F.max_pool1d(pg.tensor(x), 3, 2, return_indices=True)
    tv, ti = TF.max_pool1d(torch.tensor(x), 3, 2, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_allclose(v.numpy(), tv.numpy())


@pytest.mark.parametrize("shape,size", [((2, 3, 7, 5), (3, 2)), ((2, 2, 6, 6), 4), ((3, 5, 9), (None, 4)),
                                        ((1, 2, 4, 4), (6, 7)), ((2, 1, 5, 5), 1)])
def test_adaptive_max_pool2d_matches_torch(shape, size, device):
    check_op(lambda x: lib(x).nn.functional.adaptive_max_pool2d(x, size, return_indices=True), [shape],
             device=device)


def test_adaptive_max_pool_ties_nan_and_1d(device):
    x = np.random.default_rng(3).integers(-1, 2, size=(2, 3, 7, 6)).astype(np.float64)   # many ties
    check_op(lambda t: lib(t).nn.functional.adaptive_max_pool2d(t, (3, 4), True), [x.shape], dtype="float64",
             device=device, inputs=[x])
    y = x.copy()
    y[0, 0, 1, 1] = y[0, 0, 2, 0] = np.nan
    got = pg.nn.functional.adaptive_max_pool2d(pg.tensor(y, device=device), (3, 4), True)
    want = torch.nn.functional.adaptive_max_pool2d(torch.tensor(y), (3, 4), True)
    np.testing.assert_array_equal(got[0].cpu().numpy(), want[0].numpy())
    np.testing.assert_array_equal(got[1].cpu().numpy(), want[1].numpy())
    check_op(lambda t: lib(t).nn.functional.adaptive_max_pool1d(t, 4, True), [(2, 3, 10)], device=device)


@pytest.mark.parametrize("p,k,s,shape", [(2.0, 3, None, (2, 3, 7, 8)), (3.0, (2, 3), (1, 2), (1, 2, 6, 7)),
                                         (1.5, 2, 1, (2, 5, 5))])
def test_lp_pool2d_matches_torch(p, k, s, shape, device):
    check_op(lambda x: lib(x).nn.functional.lp_pool2d(x.abs() + 0.1, p, k, s), [shape], device=device)


def test_lp_pool1d_matches_torch(device):
    check_op(lambda x: lib(x).nn.functional.lp_pool1d(x.abs() + 0.1, 2.0, 3, 2), [(2, 3, 9)], device=device)


@pytest.mark.parametrize("shape,k,s,pad", [((2, 3, 8, 6), 2, None, 0), ((1, 2, 9, 9), 3, 2, 1)])
def test_max_unpool2d_inverts_max_pool2d_as_torch(shape, k, s, pad, device):
    def fn(x):
        F = lib(x).nn.functional
        y, i = F.max_pool2d(x, k, s, pad, return_indices=True)
        return F.max_unpool2d(y, i, k, s, pad, output_size=x.shape)
    check_op(fn, [shape], device=device)


def test_max_unpool1d_and_modules(device):
    def fn(x):
        F = lib(x).nn.functional
        y, i = F.max_pool1d(x, 2, return_indices=True)
        return F.max_unpool1d(y, i, 2)
    check_op(fn, [(2, 3, 8)], device=device)
    for make in (lambda nn: nn.AdaptiveMaxPool2d((2, None)), lambda nn: nn.AdaptiveMaxPool1d(3),
                 lambda nn: nn.LPPool2d(2, 3), lambda nn: nn.LPPool1d(1.5, 2, 1),
                 lambda nn: nn.MaxUnpool2d(2), lambda nn: nn.MaxUnpool1d(3, 2, 1)):
        assert repr(make(pg.nn)) == repr(make(torch.nn))
    x = pg.randn(1, 2, 6, 6, device=device)
    y, i = pg.nn.MaxPool2d(2, return_indices=True)(x)
    np.testing.assert_array_equal(pg.nn.MaxUnpool2d(2)(y, i).cpu().numpy(),
                                  pg.nn.functional.max_unpool2d(y, i, 2).cpu().numpy())


def test_pool_extra_errors(device):
    x = pg.ones(1, 1, 4, 4, device=device)
    y, i = pg.nn.functional.max_pool2d(x, 2, return_indices=True)
    with pytest.raises(ValueError, match="output_size"):
        pg.nn.functional.max_unpool2d(y, i, 2, output_size=(9, 9))
    with pytest.raises(RuntimeError, match="adaptive_max_pool2d"):
        pg.nn.functional.adaptive_max_pool2d(pg.ones(4, device=device), 2)
    with pytest.raises(RuntimeError, match="max_unpool2d"):
        pg.nn.functional.max_unpool2d(y, i.float(), 2)
