"""cuDNN fast paths on the GPU: conv2d (float32 through cuDNN, checked against PyTorch by the
conformance suite; here the cases it must decline) and bfloat16 attention against PyTorch's
float32 math. Marked `gpu` (run by scripts/gpu-check)."""
import numpy as np
import pytest
import torch

import paragrad as pg

pytestmark = pytest.mark.gpu


def test_conv2d_int_input_declines_to_the_composite():
    x = pg.ones(1, 2, 4, 4, dtype=pg.int32, device="cuda")
    w = pg.ones(3, 2, 3, 3, dtype=pg.int32, device="cuda")
    assert pg.conv2d(x, w, padding=1).cpu().numpy()[0, 0, 1, 1] == 18


@pytest.mark.parametrize("causal", [False, True])
def test_bf16_attention_through_cudnn(causal):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 64, 32)).astype(np.float32) for _ in range(3))
    dout = rng.standard_normal((2, 3, 64, 32)).astype(np.float32)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    ref.backward(torch.tensor(dout))
    pq, pk, pv = (pg.tensor(a, dtype=pg.bfloat16, device="cuda", requires_grad=True) for a in (q, k, v))
    out = pg.nn.functional.scaled_dot_product_attention(pq, pk, pv, is_causal=causal)
    out.backward(pg.tensor(dout, dtype=pg.bfloat16, device="cuda"))

    def rel(a, b):
        a = a.detach().float().cpu().numpy() if isinstance(a, pg.Tensor) else a
        return np.linalg.norm(a - b.detach().numpy()) / np.linalg.norm(b.detach().numpy())
    assert rel(out, ref) < 1e-2
    for p, t in ((pq, tq), (pk, tk), (pv, tv)):
        assert rel(p.grad, t.grad) < 2e-2


def _act_module(name):
    return {"relu": pg.nn.ReLU(), "gelu": pg.nn.GELU(approximate="tanh"), None: None}[name]


@pytest.mark.parametrize("layers,acts", [
    ((20, 64, 32, 5), ("relu", "relu")), ((20, 16, 5), ("relu",)),
    ((20, 64, 32, 5), ("gelu", "gelu")), ((20, 64, 32, 48, 5), ("gelu", None, "relu")),
    ((20, 64, 32, 5), ("relu", "gelu", "gelu"))])
def test_fused_mlp_chain_matches_the_pairwise_composition(layers, acts):
    """The whole chain as one op (cuBLASLt RELU/GELU_AUX_BIAS forward, DRELU/DGELU_BGRAD
    backward) against the layers run one by one; the last act, if any, ends the chain."""
    from paragrad.backends.base import fast_paths
    results = []
    for fast in (True, False):
        pg.manual_seed(0)
        mods = []
        for (a, b), act in zip(zip(layers, layers[1:]), acts + (None,) * len(layers)):
            mods += [pg.nn.Linear(a, b)] + ([_act_module(act)] if act else [])
        m = pg.nn.Sequential(*mods).to("cuda")
        x = pg.randn(8, layers[0], device="cuda", requires_grad=True)
        with fast_paths(fast):
            y = m(x)
            (y * pg.arange(float(layers[-1]), device="cuda")).sum().backward()
        results.append([y.detach().cpu().numpy(), x.grad.cpu().numpy()] +
                       [p.grad.cpu().numpy() for p in m.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
