"""pg.autocast against torch.autocast: the dtype each op runs in (torch's own lists, which differ
by device type), values and float32 gradients, nesting, enabled=False, the decorator form, the
parameter-cast cache, and a backward pass that is not autocast."""
import warnings

import numpy as np
import pytest
import torch

import paragrad as pg
from paragrad import autocast_state

RNG = np.random.default_rng(0)


def _pair(shape, device, requires_grad=True):
    a = RNG.standard_normal(shape).astype(np.float32)
    p = pg.tensor(a, device=device, requires_grad=requires_grad)
    t = torch.tensor(a, device=device if torch.cuda.is_available() else "cpu", requires_grad=requires_grad)
    return p, t


def _torch_device(device):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.fail("the CUDA comparison needs a CUDA build of torch on the GPU machine")
    return device


# op -> (input shapes, function of (library, *inputs)): run under both autocasts on float32 inputs
CASES = {
    "matmul": ([(3, 4), (4, 5)], lambda L, a, b: a @ b),
    "mm": ([(3, 4), (4, 5)], lambda L, a, b: L.mm(a, b)),
    "bmm": ([(2, 3, 4), (2, 4, 5)], lambda L, a, b: L.bmm(a, b)),
    "baddbmm": ([(2, 3, 5), (2, 3, 4), (2, 4, 5)], lambda L, c, a, b: L.baddbmm(c, a, b)),
    "addmm": ([(3, 5), (3, 4), (4, 5)], lambda L, c, a, b: L.addmm(c, a, b)),
    "linear": ([(3, 4), (5, 4), (5,)], lambda L, x, w, b: L.nn.functional.linear(x, w, b)),
    "linear_relu": ([(3, 4), (5, 4), (5,)], lambda L, x, w, b: L.relu(L.nn.functional.linear(x, w, b))),
    "conv2d": ([(1, 2, 5, 5), (3, 2, 3, 3), (3,)], lambda L, x, w, b: L.nn.functional.conv2d(x, w, b)),
    "conv1d": ([(1, 2, 7), (3, 2, 3)], lambda L, x, w: L.nn.functional.conv1d(x, w)),
    "sdpa": ([(1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)],
             lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)),
    "softmax_of_matmul": ([(3, 4), (4, 5)], lambda L, a, b: L.softmax(a @ b, -1)),
    "exp_of_matmul": ([(3, 4), (4, 5)], lambda L, a, b: (a @ b).exp()),
    "sum_of_matmul": ([(3, 4), (4, 5)], lambda L, a, b: (a @ b).sum(0)),
    "layer_norm_of_matmul": ([(3, 4), (4, 5)], lambda L, a, b: L.nn.functional.layer_norm(a @ b, (5,))),
    "cross_entropy": ([(4, 5), (5, 5)], lambda L, a, b: L.nn.functional.cross_entropy(
        a @ b, L.tensor([0, 1, 2, 3], device=a.device))),
    "mse_loss": ([(3, 4), (4, 5), (3, 5)], lambda L, a, b, y: L.nn.functional.mse_loss(a @ b, y)),
    "l1_loss": ([(3, 4), (4, 5), (3, 5)], lambda L, a, b, y: L.nn.functional.l1_loss(a @ b, y)),
    "prod_of_matmul": ([(3, 4), (4, 5)], lambda L, a, b: (a @ b).prod()),
    "cat_mixed": ([(3, 4), (4, 5), (3, 5)], lambda L, a, b, c: L.cat([a @ b, c])),
    "stack_mixed": ([(3, 4), (4, 5), (3, 5)], lambda L, a, b, c: L.stack([a @ b, c])),
    "add_mixed": ([(3, 4), (4, 5), (3, 5)], lambda L, a, b, c: a @ b + c),
    "pow_of_matmul": ([(3, 4), (4, 5)], lambda L, a, b: (a @ b) ** 2),
    "log_softmax_of_matmul": ([(3, 4), (4, 5)], lambda L, a, b: L.log_softmax(a @ b, -1)),
    "cdist": ([(3, 4), (5, 4)], lambda L, a, b: L.cdist(a, b)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_dtype_values_and_gradients_match_torch(device, name):
    shapes, fn = CASES[name]
    tdev = _torch_device(device)
    pairs = [_pair(s, device) for s in shapes]
    ps, ts = [p for p, _ in pairs], [t for _, t in pairs]
    with pg.autocast(device):
        out_p = fn(pg, *ps)
    with torch.autocast(tdev):
        out_t = fn(torch, *ts)
    assert out_p.dtype.name == str(out_t.dtype).replace("torch.", ""), (out_p.dtype, out_t.dtype)
    # both round to bfloat16 or float16 somewhere inside, maybe at different places: a few ulps
    want = out_t.float().detach().cpu().numpy()
    np.testing.assert_allclose(out_p.float().detach().cpu().numpy(), want,
                               atol=0.05 * max(1.0, float(np.abs(want).max())), rtol=0.05)
    g = RNG.standard_normal(tuple(out_t.shape)).astype(np.float32)
    out_p.backward(pg.tensor(g, device=device).to(out_p.dtype))
    out_t.backward(torch.tensor(g, device=out_t.device).to(out_t.dtype))
    for p, t in zip(ps, ts):
        assert p.grad.dtype is pg.float32 and t.grad.dtype == torch.float32
        scale = max(1.0, float(np.abs(t.grad.cpu().numpy()).max()))
        np.testing.assert_allclose(p.grad.cpu().numpy(), t.grad.cpu().numpy(), atol=0.1 * scale, rtol=0.1)


def test_module_forward_and_parameter_gradients(device):
    """An nn.Sequential of Linear/ReLU (run as paragrad's fused chain) under autocast: bfloat16
    or float16 activations, float32 gradients on the float32 parameters."""
    model = pg.nn.Sequential(pg.nn.Linear(4, 8), pg.nn.ReLU(), pg.nn.Linear(8, 3)).to(device)
    x = pg.randn(5, 4, device=device)
    with pg.autocast(device):
        y = model(x)
        loss = pg.nn.functional.cross_entropy(y, pg.tensor([0, 1, 2, 0, 1], device=device))
    assert y.dtype is pg.get_autocast_dtype(device) and loss.dtype is pg.float32
    loss.backward()
    for p in model.parameters():
        assert p.grad is not None and p.grad.dtype is pg.float32


def test_state_functions_nesting_and_enabled_false():
    assert pg.get_autocast_dtype("cpu") is pg.bfloat16 and pg.get_autocast_dtype("cuda") is pg.float16
    assert not pg.is_autocast_enabled("cpu") and not pg.is_autocast_enabled()
    x = pg.randn(3, 3)
    with pg.autocast("cpu"):
        assert pg.is_autocast_enabled("cpu") and not pg.is_autocast_enabled()   # no argument: CUDA
        assert (x @ x).dtype is pg.bfloat16
        with pg.autocast("cpu", enabled=False):
            assert not pg.is_autocast_enabled("cpu") and (x @ x).dtype is pg.float32
        with pg.autocast("cpu", dtype=pg.float16):
            assert pg.get_autocast_dtype("cpu") is pg.float16 and (x @ x).dtype is pg.float16
        assert (x @ x).dtype is pg.bfloat16 and pg.get_autocast_dtype("cpu") is pg.bfloat16
    assert not pg.is_autocast_enabled("cpu") and (x @ x).dtype is pg.float32
    assert pg.amp.autocast is pg.autocast


def test_decorator_form():
    @pg.autocast("cpu")
    def f(a):
        return a @ a
    assert f(pg.randn(2, 2)).dtype is pg.bfloat16
    assert not pg.is_autocast_enabled("cpu")


def test_unsupported_dtype_warns_and_disables_as_torch():
    for lib in (torch, pg):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with lib.autocast("cpu", dtype=lib.float64):
                assert not lib.is_autocast_enabled("cpu")
        assert "CPU Autocast only supports dtypes of" in str(caught[0].message)


def test_cuda_autocast_without_cuda_warns_and_disables_as_torch():
    if pg.cuda.is_available():          # the GPU machine: it stays on
        with pg.autocast("cuda"):
            assert pg.is_autocast_enabled("cuda")
        return
    for lib in (torch, pg):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with lib.autocast("cuda"):
                assert not lib.is_autocast_enabled("cuda")
        assert "CUDA is not available" in str(caught[0].message)


def test_bad_device_type_raises():
    with pytest.raises(RuntimeError, match="device type 'xla2'"):
        pg.autocast("xla2")
    with pytest.raises(ValueError, match="device_type"):
        pg.autocast(3)


def test_parameter_cast_is_cached_per_context():
    w = pg.randn(4, 4, requires_grad=True)
    x = pg.randn(4, 4)
    with pg.autocast("cpu"):
        x @ w
        cast = autocast_state.weight_cache[id(w)][1]
        x @ w
        assert autocast_state.weight_cache[id(w)][1] is cast and cast.dtype is pg.bfloat16
    assert not autocast_state.weight_cache          # emptied on leaving the outermost context
    with pg.autocast("cpu", cache_enabled=False):
        x @ w
        assert not autocast_state.weight_cache


def test_an_ops_casts_are_made_together_with_the_bits_of_single_casts(device):
    """autocast casts the inputs one op needs cast together: one autograd node (one launch on
    CUDA) for a Linear's weight and bias. Values, gradients and second derivatives are those of
    casting each tensor alone; an input that needs no gradient gets none."""
    x = pg.randn(6, 4, device=device)
    w = pg.randn(6, 4, device=device, requires_grad=True)
    b = pg.randn(6, device=device, requires_grad=True)
    with pg.autocast(device, dtype=pg.bfloat16):      # (b[1:] starts off a 16-byte boundary)
        y = pg.nn.functional.linear(x, w[1:], b[1:])
    edges = [e for e in y.grad_fn.next_edges if e is not None]
    assert len(edges) == 2 and edges[0][0] is edges[1][0] and [i for _, i in edges] == [1, 2]
    assert type(edges[0][0]).__name__ == "ToCopyBackward0"
    ref = pg.nn.functional.linear(*(t.to(pg.bfloat16) for t in (x, w[1:], b[1:])))
    assert pg.equal(y, ref)
    grads = []
    for out in (y, ref):
        loss = (out.float() ** 2).sum()
        gw, gb = pg.autograd.grad(loss, (w, b), create_graph=True)
        assert gw.dtype is pg.float32 and gb.dtype is pg.float32
        (dw,) = pg.autograd.grad((gw ** 2).sum() + gb.sum(), (w,))
        grads.append((gw.detach(), gb.detach(), dw))
    for a, r in zip(*grads):
        assert pg.equal(a, r)


def test_cross_entropy_of_half_logits_reads_them_without_a_cast(device):
    """autocast runs cross_entropy in float32: the fused kernels read bf16 logits as they are,
    with the loss, gradient and second derivative of casting them first (no cast node)."""
    x = pg.randn(5, 7, device=device, requires_grad=True)
    t = pg.tensor([0, 3, 6, 2, -100], device=device)
    results = []
    for autocast in (True, False):
        logits = x * 2.0
        with pg.autocast(device, dtype=pg.bfloat16, enabled=autocast):
            lo = logits.to(pg.bfloat16)
            loss = pg.nn.functional.cross_entropy(lo if autocast else lo.float(), t)
        assert loss.dtype is pg.float32
        if autocast:
            assert loss.grad_fn.next_edges[0][0] is lo.grad_fn       # no cast between them
        (gx,) = pg.autograd.grad(loss, (x,), create_graph=True)
        (gg,) = pg.autograd.grad((gx ** 2).sum(), (x,))
        results.append((loss.detach(), gx.detach(), gg))
    for a, r in zip(*results):
        assert pg.equal(a, r)


def test_backward_inside_the_context_is_not_autocast():
    """torch runs backward formulas without autocast: a float32 graph stays float32 even when
    backward() is called inside the context."""
    for lib in (torch, pg):
        a = lib.ones(3, 3, requires_grad=True)
        with lib.autocast("cpu"):
            y = (a.exp() * 2).sum()         # exp and mul are not on the CPU lists: float32
            y.backward()
        assert a.grad.dtype == (torch.float32 if lib is torch else pg.float32)


def test_cuda_lists_differ_from_the_cpu_lists():
    """The op tables follow torch's per device type (checked on the GPU by the comparison tests):
    softmax and exp run in float32 under CUDA autocast but not under the CPU's."""
    from paragrad.ops.autocast_policy import POLICIES
    assert POLICIES["cuda"]["softmax"] == "fp32_out" and "softmax" not in POLICIES["cpu"]
    assert POLICIES["cuda"]["exp"] == "fp32" and "exp" not in POLICIES["cpu"]
    assert POLICIES["cpu"]["cat"] == "promote" and "cat" not in POLICIES["cuda"]
    assert POLICIES["cpu"]["einsum" if "einsum" in POLICIES["cpu"] else "matmul"] == "lower"


# the dtype sweep: op -> (input shapes, function); each runs under CPU autocast on float32
# inputs and on bfloat16 inputs, and must give torch's output dtype
SWEEP = {
    "exp": ([(3, 4)], lambda L, a: a.exp()), "log": ([(3, 4)], lambda L, a: a.abs().log()),
    "tanh": ([(3, 4)], lambda L, a: a.tanh()), "sigmoid": ([(3, 4)], lambda L, a: a.sigmoid()),
    "gelu": ([(3, 4)], lambda L, a: L.nn.functional.gelu(a)),
    "softmax": ([(3, 4)], lambda L, a: a.softmax(-1)),
    "log_softmax": ([(3, 4)], lambda L, a: a.log_softmax(-1)),
    "sum": ([(3, 4)], lambda L, a: a.sum()), "mean": ([(3, 4)], lambda L, a: a.mean(0)),
    "prod": ([(3, 4)], lambda L, a: a.prod(1)), "cumsum": ([(3, 4)], lambda L, a: a.cumsum(0)),
    "pow": ([(3, 4)], lambda L, a: a.pow(3)), "logsumexp": ([(3, 4)], lambda L, a: a.logsumexp(1)),
    "layer_norm": ([(3, 4)], lambda L, a: L.nn.functional.layer_norm(a, (4,))),
    "group_norm": ([(2, 4, 3)], lambda L, a: L.nn.functional.group_norm(a, 2)),
    "norm": ([(3, 4)], lambda L, a: a.norm()), "vector_norm": ([(3, 4)], lambda L, a: L.linalg.vector_norm(a)),
    "trace": ([(4, 4)], lambda L, a: a.trace()), "cdist": ([(3, 4), (2, 4)], lambda L, a, b: L.cdist(a, b)),
    "einsum": ([(3, 4), (4, 5)], lambda L, a, b: L.einsum("ij,jk->ik", a, b)),
    "mv": ([(3, 4), (4,)], lambda L, a, b: L.mv(a, b)), "dot": ([(4,), (4,)], lambda L, a, b: L.dot(a, b)),
    "outer": ([(3,), (4,)], lambda L, a, b: L.outer(a, b)),
    "addmv": ([(3,), (3, 4), (4,)], lambda L, c, a, b: L.addmv(c, a, b)),
    "atan2": ([(3, 4), (3, 4)], lambda L, a, b: L.atan2(a, b)),
    "addcmul": ([(3, 4), (3, 4), (3, 4)], lambda L, a, b, c: L.addcmul(a, b, c)),
    "where": ([(3, 4), (3, 4)], lambda L, a, b: L.where(a > 0, a, b)),
    "max_pool2d": ([(1, 2, 4, 4)], lambda L, a: L.nn.functional.max_pool2d(a, 2)),
    "avg_pool2d": ([(1, 2, 4, 4)], lambda L, a: L.nn.functional.avg_pool2d(a, 2)),
    "interpolate": ([(1, 2, 4, 4)], lambda L, a: L.nn.functional.interpolate(a, scale_factor=2)),
    "quantile": ([(3, 4)], lambda L, a: L.quantile(a, 0.5)),
    "nll_loss": ([(4, 5)], lambda L, a: L.nn.functional.nll_loss(a.log_softmax(-1), L.tensor([0, 1, 2, 3]))),
    "bce_with_logits": ([(3, 4), (3, 4)], lambda L, a, b: L.nn.functional.binary_cross_entropy_with_logits(a, b.sigmoid())),
    "binary_cross_entropy": ([(3, 4), (3, 4)], lambda L, a, b: L.nn.functional.binary_cross_entropy(a.sigmoid(), b.sigmoid())),
    "smooth_l1_loss": ([(3, 4), (3, 4)], lambda L, a, b: L.nn.functional.smooth_l1_loss(a, b)),
    "huber_loss": ([(3, 4), (3, 4)], lambda L, a, b: L.nn.functional.huber_loss(a, b)),
    "kl_div": ([(3, 4), (3, 4)], lambda L, a, b: L.nn.functional.kl_div(a.log_softmax(-1), b.softmax(-1), reduction="batchmean")),
    "cosine_similarity": ([(3, 4), (3, 4)], lambda L, a, b: L.nn.functional.cosine_similarity(a, b)),
    "linear_mixed": ([(3, 4), (5, 4)], lambda L, a, w: L.nn.functional.linear(a, w.double().float())),
}


@pytest.mark.parametrize("inputs", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", sorted(SWEEP))
def test_cpu_output_dtypes_match_torch(name, inputs):
    shapes, fn = SWEEP[name]
    arrays = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    dtypes = []
    for lib in (torch, pg):
        tensors = [lib.tensor(a).to(getattr(lib, inputs)) for a in arrays]
        with lib.autocast("cpu"):
            dtypes.append(str(fn(lib, *tensors).dtype).split(".")[-1])
    assert dtypes[1] == dtypes[0], f"{name} on {inputs}: paragrad {dtypes[1]}, torch {dtypes[0]}"


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"])
def test_recurrent_layers_under_autocast_match_torch(device, cls):
    """A recurrent layer is one autocast op, as torch's fused kernels: on the CPU LSTM and RNN run
    in bfloat16 and GRU in float32, and the cells op by op; on CUDA all in float16."""
    tdev = _torch_device(device)
    cell = cls.endswith("Cell")
    kw = {} if cell else {"num_layers": 2, "batch_first": True}
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(4, 6, **kw).to(tdev)
    pm = getattr(pg.nn, cls)(4, 6, **kw).to(device)
    pm.load_state_dict({k: pg.tensor(v.detach().cpu().numpy()) for k, v in tm.state_dict().items()})
    x = RNG.standard_normal((3, 4) if cell else (2, 5, 4)).astype(np.float32)
    outs = []
    for lib, m, dev in ((torch, tm, tdev), (pg, pm, device)):
        with lib.autocast(device):
            out = m(lib.tensor(x, device=dev))
        y = out[0] if isinstance(out, tuple) else out
        y.float().sum().backward()
        outs.append((str(y.dtype).split(".")[-1], y.float().detach().cpu().numpy(),
                     [str(p.grad.dtype).split(".")[-1] for p in m.parameters()]))
    (t_dtype, t_y, t_grads), (p_dtype, p_y, p_grads) = outs
    assert p_dtype == t_dtype and p_grads == t_grads == ["float32"] * len(t_grads)
    np.testing.assert_allclose(p_y, t_y, atol=0.05, rtol=0.05)


def test_convnet_with_batch_norm_under_autocast_matches_torch(device):
    """conv -> BatchNorm (a low-precision input with float32 parameters: torch's mixed type) ->
    ReLU -> max pool -> a residual add -> average pool -> linear, in train mode under autocast:
    output dtype and values, float32 parameter gradients and running statistics as torch's."""
    tdev = _torch_device(device)

    def build(lib):
        nn = lib.nn
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Conv2d(8, 8, 1, bias=False), nn.BatchNorm2d(8),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    torch.manual_seed(0)
    tm = build(torch).to(tdev)
    pm = build(pg).to(device)
    pm.load_state_dict({k: pg.tensor(v.detach().cpu().numpy()) for k, v in tm.state_dict().items()})
    x = RNG.standard_normal((4, 3, 8, 8)).astype(np.float32)
    outs = []
    for lib, m, dev in ((torch, tm, tdev), (pg, pm, device)):
        with lib.autocast(device):
            y = m(lib.tensor(x, device=dev))
            loss = lib.nn.functional.cross_entropy(y, lib.tensor([0, 1, 2, 3], device=dev))
        loss.backward()
        outs.append((str(y.dtype).split(".")[-1], y.float().detach().cpu().numpy(),
                     [p.grad for p in m.parameters()], [b.float().cpu().numpy() for b in m.buffers()]))
    (t_dtype, t_y, t_grads, t_bufs), (p_dtype, p_y, p_grads, p_bufs) = outs
    assert p_dtype == t_dtype == str(pg.get_autocast_dtype(device)).split(".")[-1]
    np.testing.assert_allclose(p_y, t_y, atol=0.05, rtol=0.05)
    for pg_grad, t_grad in zip(p_grads, t_grads):
        assert pg_grad.dtype is pg.float32 and t_grad.dtype == torch.float32
        scale = max(1.0, float(t_grad.abs().max()))
        np.testing.assert_allclose(pg_grad.cpu().numpy(), t_grad.cpu().numpy(), atol=0.05 * scale, rtol=0.1)
    for a, b in zip(p_bufs, t_bufs):
        np.testing.assert_allclose(a, b, atol=0.02, rtol=0.02)


def test_binary_cross_entropy_is_refused_under_cuda_autocast_only(device):
    """torch bans binary_cross_entropy under CUDA autocast (unsafe in float16); the CPU runs it
    in float32."""
    p = pg.tensor([0.2, 0.7], device=device)
    y = pg.tensor([0.0, 1.0], device=device)
    with pg.autocast(device):
        if device == "cuda":
            with pytest.raises(RuntimeError, match="unsafe to autocast"):
                pg.nn.functional.binary_cross_entropy(p, y)
        else:
            assert pg.nn.functional.binary_cross_entropy(p, y).dtype is pg.float32


def test_torch_cuda_amp_deprecated_forms_warn_as_torch():
    """pg.cuda.amp.autocast(...) / GradScaler(...) are amp's CUDA forms with torch's FutureWarning."""
    for lib in (torch, pg):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scaler = lib.cuda.amp.GradScaler(init_scale=8.0)
            with lib.cuda.amp.autocast(dtype=lib.bfloat16):
                enabled = lib.is_autocast_enabled("cuda")
        future = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
        assert any("torch.cuda.amp.GradScaler(args...)` is deprecated" in m for m in future)
        assert any("torch.cuda.amp.autocast(args...)` is deprecated" in m for m in future)
        assert scaler.is_enabled() == enabled == (lib.cuda.is_available())
