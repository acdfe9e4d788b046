"""linear_act (GEMM + bias + activation as one op) against PyTorch, through the backend fast
path and through the composition, and nn.Sequential's use of it."""
import numpy as np
import pytest
import torch

import paragrad as pg
from paragrad.backends.base import fast_paths
from tests.helpers import check_op, fd_check

ACTS = {"relu": lambda t: torch.relu(t), "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh")}


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "composite"])
@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("shapes", [[(6, 5), (4, 5), (4,)], [(2, 3, 5), (4, 5), (4,)], [(6, 5), (4, 5)]],
                         ids=["2d", "3d", "nobias"])
def test_linear_act_matches_torch(shapes, act, fast, device):
    def fn(x, w, b=None):
        if isinstance(x, torch.Tensor):
            return ACTS[act](torch.nn.functional.linear(x, w, b))
        return pg.ops.neural.linear.linear_act(x, w, b, act)
    with fast_paths(fast):
        check_op(fn, shapes, device=device)


@pytest.mark.parametrize("act", list(ACTS))
def test_linear_act_finite_differences(act, device):
    fd_check(lambda x, w, b: pg.ops.neural.linear.linear_act(x, w, b, act), [(3, 4), (2, 4), (2,)], device=device)


def test_linear_act_rejects_unknown_activation():
    with pytest.raises(ValueError, match="linear_act"):
        pg.ops.neural.linear.linear_act(pg.ones(2, 3), pg.ones(4, 3), None, "tanh")


@pytest.mark.parametrize("act", [pg.nn.ReLU, lambda: pg.nn.GELU("tanh")], ids=["relu", "gelu_tanh"])
def test_sequential_fuses_transparently(act, device):
    pg.manual_seed(0)
    m = pg.nn.Sequential(pg.nn.Linear(5, 8), act(), pg.nn.Linear(8, 3)).to(device)
    x = pg.randn(4, 5, device=device)
    y_fused = m(x)
    y_fused.sum().backward()
    g_fused = [p.grad.cpu().numpy().copy() for p in m.parameters()]
    m.zero_grad()
    seen = []
    m[1].register_forward_hook(lambda mod, i, o: seen.append(1))   # a hook turns the fusion off
    y_plain = m(x)
    y_plain.sum().backward()
    assert seen == [1]
    # (a GPU epilogue evaluates GELU in its own order: float32 rounding apart)
    np.testing.assert_allclose(y_fused.detach().cpu().numpy(), y_plain.detach().cpu().numpy(), rtol=1e-5, atol=1e-5)
    for a, p in zip(g_fused, m.parameters()):
        np.testing.assert_allclose(a, p.grad.cpu().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "composite"])
@pytest.mark.parametrize("acts", [("relu", None, "relu"), ("gelu_tanh", None, "gelu_tanh"),
                                  ("relu", "gelu_tanh", None), ("gelu_tanh", "relu", "relu")],
                         ids=["relu", "gelu", "mixed", "mixed-top"])
def test_mlp_chain_matches_torch(acts, fast, device):
    """ops.linalg.mlp: one op for a whole Linear[act] chain (on CUDA, cuBLASLt epilogues)."""
    dims = [(6, 5), (7, 5), (7,), (4, 7), (4,), (3, 4), (3,)]

    def fn(x, *params):
        layers = [(params[2 * i], params[2 * i + 1], a) for i, a in enumerate(acts)]
        if isinstance(x, torch.Tensor):
            for w, b, a in layers:
                x = torch.nn.functional.linear(x, w, b)
                x = ACTS[a](x) if a else x
            return x
        return pg.ops.neural.linear.mlp(x, layers)
    with fast_paths(fast):
        check_op(fn, dims, device=device)


def test_mlp_rejects_unknown_activation():
    with pytest.raises(ValueError, match="mlp"):
        pg.ops.neural.linear.mlp(pg.ones(2, 3), [(pg.ones(4, 3), None, "tanh")])


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "composite"])
@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_linear_act_matches_torch_and_keeps_its_dtype(dtype, act, fast, device):
    """Half inputs: computed in float32 and rounded once (as torch's CPU GEMM), within the
    suite's half tolerances; the output, saved pre-activation and gradients are buffers of
    the half dtype, not the float32 the computation ran in."""
    def fn(x, w, b):
        if isinstance(x, torch.Tensor):
            return ACTS[act](torch.nn.functional.linear(x, w, b))
        return pg.ops.neural.linear.linear_act(x, w, b, act)
    with fast_paths(fast):
        y = check_op(fn, [(6, 40), (24, 40), (24,)], dtype=dtype, device=device, low=-1, high=1)
        x, w, b = (pg.randn(*s, dtype=getattr(pg, dtype), device=device, requires_grad=True)
                   for s in ((6, 40), (24, 40), (24,)))
        out = fn(x, w, b)
        saved = [out] + ([out.grad_fn.saved[2]] if fast else [])       # (the pre-activation)
        out.sum().backward()
    want = str(getattr(pg, dtype).to_numpy())
    for t in (y, *saved, x.grad, w.grad, b.grad):
        assert str(t._data.dtype) == want
