"""paragrad.models.GPT against nanoGPT's model written here in torch (same architecture, same
parameter names): state_dict keys, logits, loss and every gradient; nanoGPT's init statistics and
optimizer groups; and key/value-cache generation against generation without the cache."""
import math

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF

import paragrad as pg
from paragrad.models import GPT, GPTConfig
from paragrad.models.kv_cache import StaticKVCache
from paragrad.models.sampling import keep_top_k, keep_top_p

TINY = dict(n_layer=2, n_head=2, n_embd=16, block_size=16, vocab_size=37)


# ---- nanoGPT's model, in torch -------------------------------------------------------------------
class TorchAttention(tnn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_attn = tnn.Linear(c.n_embd, 3 * c.n_embd, bias=c.bias)
        self.c_proj = tnn.Linear(c.n_embd, c.n_embd, bias=c.bias)
        self.n_head, self.n_embd = c.n_head, c.n_embd

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.c_attn(x).split(self.n_embd, dim=2))
        y = TF.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class TorchMLP(tnn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = tnn.Linear(c.n_embd, 4 * c.n_embd, bias=c.bias)
        self.gelu = tnn.GELU()
        self.c_proj = tnn.Linear(4 * c.n_embd, c.n_embd, bias=c.bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class TorchBlock(tnn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = tnn.LayerNorm(c.n_embd, bias=c.bias)
        self.attn = TorchAttention(c)
        self.ln_2 = tnn.LayerNorm(c.n_embd, bias=c.bias)
        self.mlp = TorchMLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TorchGPT(tnn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = tnn.ModuleDict(dict(
            wte=tnn.Embedding(c.vocab_size, c.n_embd), wpe=tnn.Embedding(c.block_size, c.n_embd),
            h=tnn.ModuleList([TorchBlock(c) for _ in range(c.n_layer)]),
            ln_f=tnn.LayerNorm(c.n_embd, bias=c.bias)))
        self.lm_head = tnn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        for p in self.parameters():     # away from ones/zeros, so LayerNorm and biases matter
            tnn.init.normal_(p, std=0.3)

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is None:
            return self.lm_head(x[:, [-1], :]), None
        logits = self.lm_head(x)
        return logits, TF.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

    def optimizer_groups(self):
        """nanoGPT's configure_optimizers split: (decayed, not decayed) parameters."""
        params = [p for p in self.parameters() if p.requires_grad]
        return [p for p in params if p.dim() >= 2], [p for p in params if p.dim() < 2]


def _pair(dtype=np.float64, device="cpu", **overrides):
    """A torch nanoGPT (on the CPU) and a paragrad GPT on `device` holding the same weights (in
    `dtype`)."""
    config = GPTConfig(**{**TINY, **overrides})
    torch.manual_seed(0)
    tm = TorchGPT(config).to(torch.float64 if dtype == np.float64 else torch.float32)
    pm = GPT(config).to(device=device, dtype=pg.float64 if dtype == np.float64 else pg.float32)
    pm.load_state_dict({k: pg.tensor(v.detach().numpy().astype(dtype), device=device)
                        for k, v in tm.state_dict().items()})
    return tm, pm


def _tokens(shape, vocab=TINY["vocab_size"], seed=0):
    return np.random.default_rng(seed).integers(0, vocab, shape)


# ---- names and sizes -----------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
def test_state_dict_keys_and_parameter_count_are_nanogpts(bias):
    tm, pm = _pair(bias=bias)
    assert list(pm.state_dict()) == list(tm.state_dict())
    assert "lm_head.weight" in pm.state_dict() and "transformer.h.1.attn.c_attn.weight" in pm.state_dict()
    assert pm.lm_head.weight is pm.transformer.wte.weight
    assert [n for n, _ in pm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    n_torch = sum(p.numel() for p in tm.parameters())
    assert pm.get_num_params(non_embedding=False) == n_torch
    assert pm.get_num_params() == n_torch - TINY["block_size"] * TINY["n_embd"]


def test_config_defaults_are_nanogpts():
    c = GPTConfig()
    assert (c.block_size, c.vocab_size, c.n_layer, c.n_head, c.n_embd, c.dropout, c.bias) == \
        (1024, 50304, 12, 12, 768, 0.0, True)


def test_init_statistics():
    n_layer, n_embd = 4, 256
    pm = GPT(GPTConfig(n_layer=n_layer, n_head=4, n_embd=n_embd, block_size=64, vocab_size=300))
    for name, p in pm.named_parameters():
        a = p.detach().numpy()
        if name.endswith("c_proj.weight"):
            assert a.std() == pytest.approx(0.02 / math.sqrt(2 * n_layer), rel=0.05), name
        elif name.endswith(("c_attn.weight", "c_fc.weight", "wte.weight", "wpe.weight")):
            assert a.std() == pytest.approx(0.02, rel=0.05), name
        elif ".ln_" in name or "ln_f" in name:
            assert np.all(a == (1.0 if name.endswith("weight") else 0.0)), name
        else:
            assert name.endswith(".bias") and np.all(a == 0), name


# ---- forward and backward against nanoGPT --------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype,rtol,atol", [(np.float64, 1e-10, 1e-12), (np.float32, 1e-4, 1e-5)])
def test_logits_loss_and_gradients_match_nanogpt(bias, dtype, rtol, atol, device):
    tm, pm = _pair(dtype, device, bias=bias)
    idx = _tokens((3, 11))
    targets = _tokens((3, 11), seed=1)
    targets[0, :4] = -1                     # ignored positions
    targets[2, -1] = -1
    t_logits, t_loss = tm(torch.tensor(idx), torch.tensor(targets))
    p_logits, p_loss = pm(pg.tensor(idx, device=device), pg.tensor(targets, device=device))
    assert tuple(p_logits.shape) == (3, 11, TINY["vocab_size"])
    np.testing.assert_allclose(p_logits.detach().cpu().numpy(), t_logits.detach().numpy(),
                               rtol=rtol, atol=atol)
    np.testing.assert_allclose(p_loss.item(), t_loss.item(), rtol=rtol)
    # the -1 targets are left out of the mean, not counted as a class
    kept = targets.reshape(-1) != -1
    by_hand = TF.cross_entropy(t_logits.view(-1, TINY["vocab_size"])[kept],
                               torch.tensor(targets.reshape(-1)[kept]))
    np.testing.assert_allclose(p_loss.item(), by_hand.item(), rtol=rtol)

    t_loss.backward()
    p_loss.backward()
    t_params = dict(tm.named_parameters())
    for name, p in pm.named_parameters():
        np.testing.assert_allclose(p.grad.cpu().numpy(), t_params[name].grad.numpy(), rtol=rtol, atol=atol,
                                   err_msg=name)
    # the tied weight's gradient sums the embedding's and the head's
    assert pm.lm_head.weight.grad is pm.transformer.wte.weight.grad
    assert np.abs(pm.transformer.wte.weight.grad.cpu().numpy()[idx.reshape(-1)]).sum() > 0


def test_without_targets_only_the_last_position():
    tm, pm = _pair()
    idx = _tokens((2, 9))
    logits, loss = pm(pg.tensor(idx))
    assert loss is None and tuple(logits.shape) == (2, 1, TINY["vocab_size"])
    logits = logits.detach().numpy()
    np.testing.assert_allclose(logits, tm(torch.tensor(idx))[0].detach().numpy(), rtol=1e-10)
    full, _ = pm(pg.tensor(idx), pg.tensor(idx))
    np.testing.assert_allclose(logits[:, 0], full.detach().numpy()[:, -1], rtol=1e-10)


def test_a_negative_token_id_is_refused_and_changes_nothing(device):
    """nanoGPT raises for id -1 (its embedding does); a NumPy take alone would read the last
    row. The refused forward records nothing: no gradient lands on any parameter."""
    tm, pm = _pair(device=device)
    idx = _tokens((2, 6))
    idx[1, 3] = -1
    with pytest.raises(IndexError, match="index out of range in self"):
        tm(torch.tensor(idx), torch.tensor(_tokens((2, 6), seed=1)))
    before = {k: v.cpu().numpy().copy() for k, v in pm.state_dict().items()}
    with pytest.raises(IndexError, match="index out of range in self"):
        pm(pg.tensor(idx, device=device), pg.tensor(_tokens((2, 6), seed=1), device=device))
    assert all(p.grad is None for p in pm.parameters())
    for k, v in pm.state_dict().items():
        np.testing.assert_array_equal(v.cpu().numpy(), before[k])


def test_too_long_sequence_raises():
    pm = GPT(GPTConfig(**TINY))
    with pytest.raises(ValueError, match=r"GPT.forward: sequence length 17 exceeds block_size 16"):
        pm(pg.tensor(_tokens((1, 17))))
    cache = pm.new_cache()
    pm(pg.tensor(_tokens((1, 10))), cache=cache)
    with pytest.raises(ValueError, match=r"sequence length 7 after 10 cached tokens exceeds block_size 16"):
        pm(pg.tensor(_tokens((1, 7))), cache=cache)
    assert len(cache[0]) == 10              # the refused call left the cache as it was


@pytest.mark.gpu
def test_bf16_autocast_on_cuda_matches_nanogpt_in_float32():
    """Under bf16 autocast on CUDA, attention runs in cuDNN's fused kernel on the heads where the
    fused c_attn projection left them (strided, no copies) and gelu in its fused kernel: loss and
    every gradient stay within bfloat16's rounding of nanoGPT's float32 ones."""
    config = dict(TINY, n_embd=64, n_head=2, block_size=32)
    tm, pm = _pair(np.float32, "cuda", **config)
    idx, targets = _tokens((4, 32)), _tokens((4, 32), seed=1)
    t_loss = tm(torch.tensor(idx), torch.tensor(targets))[1]
    with pg.autocast("cuda", dtype=pg.bfloat16):
        p_loss = pm(pg.tensor(idx, device="cuda"), pg.tensor(targets, device="cuda"))[1]
    t_loss.backward()
    p_loss.backward()
    assert p_loss.item() == pytest.approx(t_loss.item(), rel=1e-2)
    t_params = dict(tm.named_parameters())
    for name, p in pm.named_parameters():
        got, want = p.grad.float().cpu().numpy(), t_params[name].grad.numpy()
        assert p.grad.dtype is pg.float32, name
        assert np.linalg.norm(got - want) <= 5e-2 * np.linalg.norm(want) + 1e-6, name


# ---- key/value cache -----------------------------------------------------------------------------
def test_cached_forward_matches_full_forward(device):
    _, pm = _pair(device=device)
    idx = pg.tensor(_tokens((2, 12)), device=device)
    cache = pm.new_cache()
    with pg.no_grad():
        full = pm(idx, idx)[0].cpu().numpy()                                  # (2, 12, V)
        pm(idx[:, :5], cache=cache)                                           # prompt: causal
        chunk = pm(idx[:, 5:9], cache=cache)[0].cpu().numpy()                 # several after a cache: mask
        steps = [pm(idx[:, t:t + 1], cache=cache)[0].cpu().numpy() for t in range(9, 12)]  # no mask
    np.testing.assert_allclose(chunk[:, 0], full[:, 8], rtol=1e-10)
    np.testing.assert_allclose(np.concatenate(steps, 1), full[:, 9:], rtol=1e-10)
    assert len(cache[0]) == len(cache[1]) == 12
    assert tuple(cache[0].k.shape) == (2, TINY["n_head"], 12, TINY["n_embd"] // TINY["n_head"])


def test_decode_step_over_a_fixed_size_cache_matches_the_full_forward(device):
    """GPT.decode_step (the step generation captures as a CUDA graph): one token at a device-side
    position over a StaticKVCache of block_size slots, the slots past the position masked."""
    _, pm = _pair(device=device)
    idx = pg.tensor(_tokens((2, 12)), device=device)
    cache = pm.new_cache()
    with pg.no_grad():
        full = pm(idx, idx)[0].cpu().numpy()                                  # (2, 12, V)
        pm(idx[:, :5], cache=cache)
        static = [StaticKVCache(c, TINY["block_size"]) for c in cache]
        steps = [pm.decode_step(idx[:, t:t + 1], pg.tensor([t], device=device), static).cpu().numpy()
                 for t in range(5, 12)]
    np.testing.assert_allclose(np.concatenate(steps, 1), full[:, 5:], rtol=1e-10, atol=1e-12)
    assert tuple(static[0].k.shape) == (2, TINY["n_head"], TINY["block_size"], TINY["n_embd"] // TINY["n_head"])


def test_greedy_generation_matches_nanogpt():
    tm, pm = _pair()
    prompt = _tokens((2, 4))
    want = torch.tensor(prompt)
    with torch.no_grad():
        for _ in range(20):                 # nanoGPT's loop with argmax; runs past block_size
            logits, _ = tm(want[:, -TINY["block_size"]:])
            want = torch.cat([want, logits[:, -1, :].argmax(-1, keepdim=True)], 1)
    got = pm.generate(pg.tensor(prompt), 20, temperature=0)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("kwargs", [
    dict(temperature=0),
    dict(temperature=0.8, top_k=5),
    dict(temperature=1.3, top_p=0.7),
    dict(temperature=1.0, top_k=10, top_p=0.9),
    dict(temperature=1.0),
], ids=["greedy", "top_k", "top_p", "top_k_top_p", "plain"])
@pytest.mark.parametrize("new_tokens", [8, 30], ids=["within_block", "past_block"])
def test_cached_generation_equals_uncached(kwargs, new_tokens, device):
    _, pm = _pair(device=device)
    prompt = pg.tensor(_tokens((3, 5)), device=device)
    runs = [pm.generate(prompt, new_tokens, generator=pg.Generator(device).manual_seed(7), use_cache=c,
                        **kwargs).cpu().numpy() for c in (True, False)]
    assert runs[0].shape == (3, 5 + new_tokens)
    np.testing.assert_array_equal(runs[0][:, :5], prompt.cpu().numpy())
    np.testing.assert_array_equal(runs[0], runs[1])
    if kwargs.get("temperature") != 0:      # the draws do depend on the generator
        other = pm.generate(prompt, new_tokens, generator=pg.Generator(device).manual_seed(8), **kwargs)
        assert not np.array_equal(other.cpu().numpy(), runs[0])


def test_generate_tokens_streams_without_disabling_grad():
    _, pm = _pair()
    prompt = pg.tensor(_tokens((2, 3)))
    stream = pm.generate_tokens(prompt, 4, temperature=0)
    first = next(stream)
    assert tuple(first.shape) == (2, 1) and first.dtype == pg.int64
    assert pg.is_grad_enabled()             # grad mode is the caller's between tokens
    rest = list(stream)
    assert len(rest) == 3
    np.testing.assert_array_equal(pg.cat([prompt, first, *rest], 1).numpy(),
                                  pm.generate(prompt, 4, temperature=0).numpy())


def test_top_k_one_and_tiny_top_p_are_greedy():
    _, pm = _pair()
    prompt = pg.tensor(_tokens((2, 4)))
    greedy = pm.generate(prompt, 10, temperature=0).numpy()
    np.testing.assert_array_equal(pm.generate(prompt, 10, top_k=1).numpy(), greedy)
    np.testing.assert_array_equal(pm.generate(prompt, 10, top_p=1e-9).numpy(), greedy)


def test_sampling_filters():
    logits = pg.tensor(np.log([[0.5, 0.05, 0.3, 0.15], [0.25, 0.25, 0.25, 0.25]]))
    keep = lambda out: np.isfinite(out.numpy())          # noqa: E731
    np.testing.assert_array_equal(keep(keep_top_k(logits, 2)), [[1, 0, 1, 0], [1, 1, 1, 1]])  # ties kept
    np.testing.assert_array_equal(keep(keep_top_p(logits, 0.79)), [[1, 0, 1, 0], [1, 1, 1, 1]])
    np.testing.assert_array_equal(keep(keep_top_p(logits, 0.81)), [[1, 0, 1, 1], [1, 1, 1, 1]])
    np.testing.assert_array_equal(keep(keep_top_p(logits, 0.3))[0], [1, 0, 0, 0])
    assert keep(keep_top_p(logits, 0.3))[1].sum() == 2       # 0.25 alone doesn't reach 0.3
    # equal logits give exactly 0.25 each: two of them reach 0.5, and a third is not needed
    assert keep(keep_top_p(pg.zeros(1, 4), 0.5)).sum() == 2


@pytest.mark.parametrize("kwargs,message", [
    (dict(temperature=-1), "temperature must be >= 0"),
    (dict(top_k=0), "top_k must be a positive integer"),
    (dict(top_p=1.5), r"top_p must be in \(0, 1\]"),
])
def test_bad_sampling_arguments_raise(kwargs, message):
    _, pm = _pair()
    with pytest.raises(ValueError, match=message):
        pm.generate(pg.tensor(_tokens((1, 3))), 2, **kwargs)


# ---- training ------------------------------------------------------------------------------------
def test_optimizer_groups_are_nanogpts():
    tm, pm = _pair()
    opt = pm.configure_optimizers(weight_decay=0.1, learning_rate=3e-4, betas=(0.9, 0.95), device_type="cpu")
    assert isinstance(opt, pg.optim.AdamW)
    decay, no_decay = opt.param_groups
    t_decay, t_no_decay = tm.optimizer_groups()
    assert (decay["weight_decay"], no_decay["weight_decay"]) == (0.1, 0.0)
    assert decay["lr"] == 3e-4 and decay["betas"] == (0.9, 0.95)
    assert [len(decay["params"]), len(no_decay["params"])] == [len(t_decay), len(t_no_decay)]
    assert sum(p.numel() for p in decay["params"]) == sum(p.numel() for p in t_decay)
    assert sum(p.numel() for p in no_decay["params"]) == sum(p.numel() for p in t_no_decay)
    assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() < 2 for p in no_decay["params"])
    assert sum(p is pm.lm_head.weight for p in decay["params"]) == 1      # the tied weight once
    assert not opt.defaults["fused"]
    cuda_opt = pm.configure_optimizers(0.1, 3e-4, (0.9, 0.95), device_type="cuda")
    assert cuda_opt.defaults["fused"] is True


def test_a_few_training_steps_lower_the_loss(device):
    pg.manual_seed(0)
    model = GPT(GPTConfig(**TINY)).to(device)
    opt = model.configure_optimizers(weight_decay=0.1, learning_rate=1e-2, betas=(0.9, 0.99),
                                     device_type=pg.device(device).type)
    data = pg.tensor(_tokens((4, TINY["block_size"] + 1)), device=device)
    x, y = data[:, :-1], data[:, 1:]
    losses = []
    for _ in range(30):
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(math.log(TINY["vocab_size"]), abs=0.2)   # near uniform at init
    assert losses[-1] < losses[0] - 1.0


def test_module_hooks_still_run():
    """A block runs its residual adds, dropouts and norms fused, calling no attn, mlp or ln
    module; with a hook on one of them it calls each module as nanoGPT does, so the hook sees
    the module's output, and the model's output stays the same."""
    _, pm = _pair()
    idx = pg.tensor(_tokens((2, 12)))
    plain = pm(idx, idx)[1].item()
    seen = []
    pm.transformer.h[1].attn.register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))
    pm.transformer.h[0].ln_2.register_forward_hook(lambda m, args, out: seen.append("ln_2"))
    assert pm(idx, idx)[1].item() == pytest.approx(plain, rel=1e-12)
    assert seen == ["ln_2", (2, 12, TINY["n_embd"])]


def test_a_replaced_module_is_called():
    """A block whose mlp is replaced by another module calls it (the fused form is only for the
    modules it was built with)."""
    _, pm = _pair()
    calls = []

    class Zero(pg.nn.Module):
        def forward(self, x):
            calls.append(tuple(x.shape))
            return x * 0
    pm.transformer.h[0].mlp = Zero()
    pm(pg.tensor(_tokens((2, 12))))
    assert calls == [(2, 12, TINY["n_embd"])]
