"""Memory formats against torch: channels_last strides from to() / contiguous() / clone(), the
is_contiguous flags (size-1 dims included), Module.to(memory_format=), layouts kept by
elementwise ops and clone, a leaf's gradient in the leaf's layout, gradients through a format
change, empty tensors' strides, and the errors."""
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


@pytest.mark.parametrize("op", ["add_scalar", "add_bias", "mul_same_layout", "relu", "exp"])
def test_elementwise_ops_keep_a_channels_last_layout(device, op):
    fns = {"add_scalar": lambda L, x: x + 1, "add_bias": lambda L, x: x + L.ones(3, 1, 1, device=x.device),
           "mul_same_layout": lambda L, x: x * x, "relu": lambda L, x: L.relu(x), "exp": lambda L, x: x.exp()}
    p, t = _both((2, 3, 4, 5), device)
    pp = fns[op](pg, p.to(memory_format=pg.channels_last))
    tt = fns[op](torch, t.to(memory_format=torch.channels_last))
    np.testing.assert_allclose(pp.cpu().numpy(), tt.numpy(), rtol=1e-6)
    assert _flags(pg, pp) == _flags(torch, tt) and pp.stride() == tt.stride()


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


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_channels_last_convnet_trains_as_the_row_major_one(device, dtype):
    """conv -> BatchNorm -> ReLU -> max pool -> conv + residual, forward and backward, with the
    model and input channels-last: the same outputs and gradients as row-major. Where the
    backend's kernels read channels-last (CUDA), each activation stays channels-last (no
    transposing copies between the layers) and the weights' gradients keep their layout."""
    def build():
        pg.manual_seed(0)
        nn = pg.nn
        return nn.ModuleList([nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                              nn.MaxPool2d(3, 2, 1), nn.Conv2d(8, 8, 3, padding=1, bias=False)]).to(device)
    x = np.random.default_rng(0).standard_normal((4, 3, 9, 9)).astype(np.float32)
    results = []
    for fmt in (pg.contiguous_format, pg.channels_last):
        conv1, bn, relu, pool, conv2 = mods = build().to(memory_format=fmt)
        inp = pg.tensor(x, device=device).to(getattr(pg, dtype)).contiguous(memory_format=fmt)
        with pg.autocast(device, dtype=pg.bfloat16, enabled=dtype == "bfloat16"):
            acts = [conv1(inp)]
            for m in (bn, relu, pool):
                acts.append(m(acts[-1]))
            acts.append(conv2(acts[-1]) + acts[-1])
            acts[-1].float().square().sum().backward()
        if fmt is pg.channels_last and pg.empty(0, device=device)._backend.takes_channels_last:
            for a in acts:
                assert a.is_contiguous(memory_format=pg.channels_last) and not a.is_contiguous()
            assert conv2.weight.grad.is_contiguous(memory_format=pg.channels_last)
        results.append([a.float().detach().cpu().numpy() for a in acts] +
                       [p.grad.float().cpu().numpy() for m in mods for p in m.parameters()])
    tol = 1e-4 if dtype == "float32" else 3e-2
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, float(np.abs(b).max())))


def _strided(shape, strides):
    """The same values as a torch tensor and a paragrad one, both with these strides."""
    base = torch.tensor(RNG.standard_normal(max(1, sum((n - 1) * s for n, s in zip(shape, strides)) + 1))
                        .astype(np.float32))
    t = base.as_strided(shape, strides)
    return pg.from_numpy(t.numpy()), t


# dense layouts in some order (transposed, channels-last, size-1 dims with either stride), one
# with gaps (a channels-last slice) and a broadcast one
_LAYOUTS = [((5, 4), (1, 5)), ((2, 3, 4, 5), (60, 1, 15, 3)), ((2, 1, 5, 6), (30, 1, 6, 1)),
            ((2, 1, 5, 6), (30, 30, 6, 1)), ((2, 3, 1, 1), (3, 1, 3, 3)), ((2, 2, 4, 5), (60, 1, 15, 3)),
            ((3, 4), (0, 1))]


@pytest.mark.parametrize("shape, strides", _LAYOUTS)
def test_clone_keeps_a_dense_layout_as_torch(shape, strides):
    p, t = _strided(shape, strides)
    assert p.stride() == t.stride()
    assert p.clone().stride() == t.clone().stride()
    np.testing.assert_array_equal(p.clone().numpy(), t.clone().numpy())


@pytest.mark.parametrize("shape, strides", _LAYOUTS[:-1])
@pytest.mark.parametrize("create_graph", [False, True])
def test_a_leaf_gradient_takes_the_leaf_layout(shape, strides, create_graph):
    """torch's gradient layout contract: a dense leaf's new .grad has the leaf's strides,
    whatever layout the gradient arrived in (here row-major, from .contiguous())."""
    grads = []
    for lib, x in zip((pg, torch), _strided(shape, strides)):
        x.requires_grad_()
        (x.contiguous() ** 2).sum().backward(create_graph=create_graph)
        grads.append(x.grad)
    big = [d for d, n in enumerate(shape) if n > 1]    # (under create_graph torch also copies
    if create_graph:                                    # the strides of size-1 dims; paragrad not)
        assert [grads[0].stride(d) for d in big] == [grads[1].stride(d) for d in big]
    else:
        assert grads[0].stride() == grads[1].stride()
    np.testing.assert_allclose(grads[0].detach().numpy(), grads[1].detach().numpy(), rtol=1e-6)


def test_ops_on_empty_tensors_report_torch_strides():
    cases = [lambda L: L.zeros(0, 3, 4, 5) + 1, lambda L: L.zeros(2, 0, 3).exp(),
             lambda L: L.zeros(2, 0, 3).sum(0), lambda L: L.zeros(0)]
    for f in cases:
        assert f(pg).stride() == f(torch).stride()
