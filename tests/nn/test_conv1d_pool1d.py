"""Conv1d and the 1-D pools (conv2d / the 2-D pools over a height-1 image) against PyTorch:
values, gradients, module reprs and parameter shapes."""
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
    ([(2, 3, 9), (4, 3, 3), (4,)], {}),
    ([(2, 4, 11), (6, 2, 3), (6,)], {"stride": 2, "padding": 2, "dilation": 2, "groups": 2}),
    ([(3, 10), (5, 3, 4)], {"padding": "same"}),
    ([(2, 3, 8), (4, 3, 3)], {"stride": (3,), "padding": (1,)}),
], ids=["plain", "strided-grouped", "unbatched-same", "tuples"])
def test_conv1d_matches_torch(shapes, kw, device):
    check_op(lambda x, w, b=None: lib_of(x).conv1d(x, w, b, **kw), shapes, device=device)


def test_conv1d_finite_differences(device):
    fd_check(lambda x, w, b: F.conv1d(x, w, b, padding=1), [(2, 2, 5), (3, 2, 3), (3,)], device=device)


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


def test_modules_match_torch():
    x = np.random.default_rng(1).standard_normal((2, 4, 12)).astype(np.float32)
    for name, args, kw in [("Conv1d", (4, 6, 3), {"padding": 1, "bias": False}),
                           ("Conv1d", (4, 8, 5), {"stride": 2, "groups": 2, "padding_mode": "circular", "padding": 2}),
                           ("MaxPool1d", (3,), {"stride": 2}), ("AvgPool1d", (4,), {"stride": 2}),
                           ("AdaptiveAvgPool1d", (5,), {})]:
        p, t = getattr(pg.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
        assert repr(p) == repr(t), name
        if name == "Conv1d":
            assert [(n, tuple(v.shape)) for n, v in p.named_parameters()] == \
                [(n, tuple(v.shape)) for n, v in t.named_parameters()]
            with torch.no_grad():
                for (_, tv), (_, pv) in zip(t.named_parameters(), p.named_parameters()):
                    tv.copy_(torch.tensor(pv.detach().numpy()))
        np.testing.assert_allclose(p(pg.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-5, atol=1e-5, err_msg=name)
