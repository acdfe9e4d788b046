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


def _fused_dropout_run(p, v, seed, causal=True, shape=(2, 3, 64, 64)):
    rng = np.random.default_rng(7)
    q, k = (pg.tensor(rng.standard_normal(shape), dtype=pg.bfloat16, device="cuda", requires_grad=True)
            for _ in range(2))
    v = pg.tensor(v, dtype=pg.bfloat16, device="cuda", requires_grad=True)
    pg.manual_seed(seed)
    return q, k, v, pg.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=causal)


def test_bf16_attention_dropout_inside_cudnn():
    """Dropout inside cuDNN's kernel: with v = I (E = S = 64) the output is the dropped, rescaled
    weights themselves; the same seed drops the same weights, another seed others, and the
    generator moves on after each call."""
    p, eye = 0.3, np.broadcast_to(np.eye(64), (2, 3, 64, 64))
    out = _fused_dropout_run(p, eye, 5)[3].detach().float().cpu().numpy()
    ref = _fused_dropout_run(0.0, eye, 5)[3].detach().float().cpu().numpy()
    live = ref > 0                                          # the causal triangle
    kept = (out != 0) & live
    assert abs(1 - kept.sum() / live.sum() - p) < 0.02
    np.testing.assert_allclose(out[kept], ref[kept] / (1 - p), rtol=2e-2)
    again = _fused_dropout_run(p, eye, 5)[3].detach().float().cpu().numpy()
    other = _fused_dropout_run(p, eye, 6)[3].detach().float().cpu().numpy()
    np.testing.assert_array_equal(out, again)
    assert (out != other).any()
    q, k, v, first = _fused_dropout_run(p, eye, 5)
    second = pg.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
    assert (first.detach().float().cpu().numpy() != second.detach().float().cpu().numpy()).any()
    # inside pg.jit each replay drops other weights
    f = pg.jit(lambda q: pg.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True))
    draws = [f(q.detach()).detach().float().cpu().numpy() for _ in range(4)]
    assert all((a != b).any() for a, b in zip(draws, draws[1:]))


def test_bf16_attention_dropout_gradients_drop_the_forward_weights():
    """The backward drops the weights the forward dropped: gradients equal torch's float32 math
    with the keep mask read off a v = I run from the same seed."""
    p, shape = 0.4, (2, 3, 64, 64)
    eye = np.broadcast_to(np.eye(64), shape)
    keep = _fused_dropout_run(p, eye, 11)[3].detach().float().cpu().numpy() != 0
    vals = np.random.default_rng(8).standard_normal(shape)
    q, k, v, out = _fused_dropout_run(p, vals, 11)
    w = np.random.default_rng(9).standard_normal(shape)
    (out * pg.tensor(w, dtype=pg.bfloat16, device="cuda")).sum().backward()
    tq, tk, tv = (torch.tensor(x.float().detach().cpu().numpy(), requires_grad=True) for x in (q, k, v))
    causal = torch.ones(64, 64, dtype=torch.bool).tril()
    scores = (tq @ tk.mT / 8).masked_fill(~causal, -float("inf"))
    tout = (torch.softmax(scores, -1) * torch.tensor(keep) / (1 - p)) @ tv
    (tout * torch.tensor(w, dtype=torch.float32)).sum().backward()

    def rel(a, b):
        a = a.detach().float().cpu().numpy()
        return np.linalg.norm(a - b.detach().numpy()) / np.linalg.norm(b.detach().numpy())
    assert rel(out, tout) < 1e-2
    for pt, t in ((q.grad, tq.grad), (k.grad, tk.grad), (v.grad, tv.grad)):
        assert rel(pt, t) < 3e-2
    with pytest.raises(RuntimeError, match="double backward"):
        q, k, v, out = _fused_dropout_run(p, vals, 11)
        pg.autograd.grad(out.float().sum(), [q], create_graph=True)


def _act_module(name):
    return {"relu": pg.nn.ReLU(), "gelu": pg.nn.GELU(approximate="tanh"), None: None}[name]


@pytest.mark.parametrize("layers,acts", [
    ((20, 64, 32, 5), ("relu", "relu")), ((20, 16, 5), ("relu",)),
    ((20, 64, 32, 5), ("gelu", "gelu")), ((20, 64, 32, 48, 5), ("gelu", None, "relu")),
    ((20, 64, 32, 5), ("relu", "gelu", "gelu"))])
def test_fused_mlp_chain_matches_the_pairwise_composition(layers, acts):
    """The whole chain as one op (cuBLASLt RELU/GELU_AUX_BIAS forward, DRELU/DGELU + BGRADB
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


def test_attention_gradients_come_back_in_the_layout_of_their_inputs():
    """q, k, v split from one (B, T, 3C) projection are read heads-inner; their gradients are
    written heads-inner into one buffer of the projection's layout (split's backward takes it
    whole), and q, k, v from three (B, T, C) tensors get three heads-inner buffers, so merging
    the heads back to (B, T, C) is a view, not a copy; the values match those of contiguous
    inputs."""
    from paragrad.backends.cuda import cudnn_frontend
    B, T, H, E = 2, 64, 3, 32
    C = H * E
    rng = np.random.default_rng(1)
    qkv = pg.tensor(rng.standard_normal((B, T, 3 * C)), dtype=pg.bfloat16, device="cuda")
    dout = pg.tensor(rng.standard_normal((B, H, T, E)), dtype=pg.bfloat16, device="cuda")
    packed = [t.view(B, T, H, E).transpose(1, 2) for t in qkv.split(C, dim=2)]       # (B, H, T, E)
    apart = [t.contiguous().view(B, T, H, E).transpose(1, 2) for t in qkv.split(C, dim=2)]
    dense = [t.contiguous()._data for t in packed]
    out2, stats2, _ = cudnn_frontend.sdpa(*dense, E ** -0.5, True)
    want = cudnn_frontend.sdpa_backward(*dense, out2, dout._data, stats2, E ** -0.5, True)
    for heads, row in ((packed, 3 * C), (apart, C)):
        out, stats, _ = cudnn_frontend.sdpa(*(t._data for t in heads), E ** -0.5, True)
        grads = cudnn_frontend.sdpa_backward(*(t._data for t in heads), out, dout._data, stats, E ** -0.5, True)
        for d, d2 in zip(grads, want):
            assert d.strides == (T * row * 2, E * 2, row * 2, 2)          # heads-inner bytes
            assert d2.flags.c_contiguous
            np.testing.assert_allclose(d.get().astype(np.float32), d2.get().astype(np.float32), rtol=2e-2, atol=2e-2)
        if heads is packed:         # one buffer: dk and dv start C and 2C elements after dq
            assert grads[0].data.mem is grads[1].data.mem is grads[2].data.mem
            assert [d.data.ptr - grads[0].data.ptr for d in grads] == [0, C * 2, 2 * C * 2]
