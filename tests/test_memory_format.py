"""Memory formats against torch: channels_last strides from to() / contiguous() / clone(), the
is_contiguous flags (size-1 dims included), Module.to(memory_format=), layouts kept by
elementwise ops, gradients through a format change, and the errors."""
import pickle

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_raises

RNG = np.random.default_rng(0)


def _both(shape, device="cpu"):
    a = RNG.standard_normal(shape).astype(np.float32)
    return pg.tensor(a, device=device), torch.tensor(a)


def _flags(lib, t):
    return (t.is_contiguous(), t.is_contiguous(memory_format=lib.channels_last),
            t.is_contiguous(memory_format=lib.channels_last_3d))


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 3, 1, 1), (2, 1, 4, 5), (3, 4, 1, 2), (2, 3, 2, 4, 5)])
def test_layouts_and_flags_match_torch(device, shape):
    p, t = _both(shape, device)
    fmt = "channels_last" if len(shape) == 4 else "channels_last_3d"
    cases = [
        lambda L, x: x.to(memory_format=getattr(L, fmt)),
        lambda L, x: x.contiguous(memory_format=getattr(L, fmt)),
        lambda L, x: x.to(memory_format=getattr(L, fmt)).clone(),                 # preserve_format
        lambda L, x: x.to(memory_format=getattr(L, fmt)).contiguous(),
        lambda L, x: x.to(memory_format=getattr(L, fmt)).to(L.float64),
        lambda L, x: x.to(memory_format=getattr(L, fmt)).to(memory_format=L.contiguous_format),
    ]
    for fn in cases:
        pp, tt = fn(pg, p), fn(torch, t)
        assert _flags(pg, pp) == _flags(torch, tt)
        if tt.numel() and all(s > 1 for s in shape):        # strides of size-1 dims are free
            assert pp.stride() == tt.stride()
        np.testing.assert_array_equal(pp.cpu().numpy(), tt.numpy())


def test_elementwise_ops_keep_a_channels_last_layout_on_the_cpu(device):
    p, t = _both((2, 3, 4, 5), device)
    pp, tt = p.to(memory_format=pg.channels_last) + 1, t.to(memory_format=torch.channels_last) + 1
    np.testing.assert_array_equal(pp.cpu().numpy(), tt.numpy())
    if device == "cpu":
        assert _flags(pg, pp) == _flags(torch, tt) and pp.stride() == tt.stride()
    else:       # CUDA's elementwise kernels write row-major outputs (NHWC kernels: still to do)
        assert pp.is_contiguous()


def test_to_an_already_laid_out_tensor_is_itself():
    p = pg.randn(2, 3, 4, 5).to(memory_format=pg.channels_last)
    assert p.to(memory_format=pg.channels_last) is p and p.contiguous(memory_format=pg.channels_last) is p


def test_module_to_lays_out_only_4d_and_5d_tensors_as_torch():
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                             torch.nn.Linear(4 * 6 * 6, 2))
    pm = pg.nn.Sequential(pg.nn.Conv2d(3, 4, 3), pg.nn.BatchNorm2d(4), pg.nn.Flatten(),
                          pg.nn.Linear(4 * 6 * 6, 2))
    pm.load_state_dict({k: pg.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    tm, pm = tm.to(memory_format=torch.channels_last), pm.to(memory_format=pg.channels_last)
    for (name, t), (_, p) in zip(tm.named_parameters(), pm.named_parameters()):
        assert _flags(pg, p) == _flags(torch, t), name
        assert isinstance(p, pg.nn.Parameter) and p.requires_grad
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    tx = torch.tensor(x).to(memory_format=torch.channels_last)
    px = pg.tensor(x).to(memory_format=pg.channels_last)
    tm(tx).square().sum().backward()
    pm(px).square().sum().backward()
    for (name, t), (_, p) in zip(tm.named_parameters(), pm.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_gradient_flows_through_a_format_change():
    for_lib = {}
    for lib in (torch, pg):
        x = lib.tensor(np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4), requires_grad=True)
        y = x.to(memory_format=lib.channels_last) * lib.arange(24.0).reshape(1, 2, 3, 4)
        y.sum().backward()
        for_lib[lib] = x.grad.numpy()
    np.testing.assert_array_equal(for_lib[pg], for_lib[torch])


def test_errors_match_torch():
    check_raises(lambda L, x: x.to(memory_format=L.channels_last), np.ones((2, 3), np.float32),
                 match="required rank 4 tensor to use channels_last format")
    check_raises(lambda L, x: x.contiguous(memory_format=L.channels_last_3d), np.ones((2, 3, 4, 5), np.float32),
                 match="required rank 5 tensor to use channels_last_3d format")
    check_raises(lambda L, x: x.to(memory_format=L.channels_last).contiguous(memory_format=L.preserve_format),
                 np.ones((2, 3, 4, 5), np.float32),
                 match="preserve memory format is unsupported by the contiguous operator")
    for lib in (torch, pg):         # nothing to copy: the tensor itself, no error
        x = lib.ones(2, 3)
        assert x.contiguous(memory_format=lib.preserve_format) is x


def test_formats_are_singletons_with_torch_names():
    assert repr(pg.channels_last) == "paragrad.channels_last"
    assert pickle.loads(pickle.dumps(pg.channels_last)) is pg.channels_last
    assert isinstance(pg.contiguous_format, pg.memory_format)
