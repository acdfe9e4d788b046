"""GPT training and generation on one GPU: paragrad (the training step under pg.jit, generation
with its key/value cache) vs PyTorch (eager, torch.compile, generation with and without a
key/value cache), side by side in one process run.

    python bench/gpt.py [--iters 50] [--warmup 10] [--gen-tokens 500] [--precision bf16|fp32] [--json PATH]
    python bench/gpt.py --device cpu --n-layer 1 --n-embd 32 --n-head 2 --block-size 32 \
        --batch-size 4 --iters 3 --warmup 1 --gen-tokens 20        # CPU smoke test

The model is nanoGPT's shakespeare-char one (n_layer 6, n_head 6, n_embd 384, block_size 256,
batch 64, vocab 65, bias on, dropout 0.2 as nanoGPT's config has it: dropout is part of the timed
step), trained on Shakespeare's characters. The PyTorch model is a compact copy of nanoGPT's
model.py written into this file (the GPU machines need no nanoGPT checkout), with the same
parameter names: both frameworks start from the same weights (paragrad's GPT built with a seed,
its state_dict copied into the PyTorch model by name, the tied embedding / lm_head weight once).
Training: AdamW (lr 1e-3, betas (0.9, 0.99), weight decay 0.1 on the parameters of 2 or more
dims, none on the others, as nanoGPT's configure_optimizers; fused on CUDA), gradient-norm
clipping at 1.0, forward and loss under bf16 autocast on CUDA (--precision fp32: float32
throughout, the default of the CPU smoke test; TF32 stays off in both frameworks).
Both frameworks see the same batches: window offsets drawn with NumPy from one seeded generator,
a fixed set of 8 (x, y) batches uploaded to the device before timing and cycled, so no sampling
is timed. Each training row: --warmup untimed iterations (compiles, the pg.jit capture), then
--iters timed iterations between two synchronizations; tokens/s = iters * batch * block_size /
seconds. After them, the val loss: the mean over 10 fixed val batches in eval mode without
gradients (same autocast), so the rows, trained on the same batches, can be compared.
Generation: --gen-tokens new tokens from a 1-token prompt at batch 1 and 8 (temperature 1.0,
top_k 200 as nanoGPT's sample.py, seeded, eval mode, same autocast), from the initial weights;
the context is cropped to block_size as nanoGPT does (paragrad then rebuilds its cache from the
cropped context, and so does the PyTorch cache variant here). A short untimed generation first.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time

import numpy as np

from common import default_data_dir, per_second, print_header

N_BATCHES, N_VAL, GEN_BATCHES, TOP_K = 8, 10, (1, 8), 200


# ----------------------------------------------------------------------------------------------
# nanoGPT's model.py for PyTorch (compact; same parameter names), with a key/value cache variant


def torch_gpt(cfg):
    import torch
    import torch.nn.functional as F
    from torch import nn

    class LayerNorm(nn.Module):
        """LayerNorm with an optional bias (PyTorch's has no bias=False before 2.1)."""
        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, x):
            return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(cfg["n_embd"], 3 * cfg["n_embd"], bias=cfg["bias"])
            self.c_proj = nn.Linear(cfg["n_embd"], cfg["n_embd"], bias=cfg["bias"])
            self.attn_dropout = nn.Dropout(cfg["dropout"])
            self.resid_dropout = nn.Dropout(cfg["dropout"])
            self.n_head, self.n_embd, self.dropout = cfg["n_head"], cfg["n_embd"], cfg["dropout"]

        def forward(self, x, cache=None):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)   # (B, nh, T, hs)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            past = 0
            if cache is not None:    # cache: a [k, v] list, extended in place
                if cache[0] is not None:
                    past = cache[0].shape[2]
                    k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
                cache[0], cache[1] = k, v
            p = self.dropout if self.training else 0.0
            if past == 0:
                y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
            elif T == 1:             # the newest token sees every cached one
                y = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
            else:
                mask = torch.ones(T, past + T, dtype=torch.bool, device=x.device).tril(diagonal=past)
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(cfg["n_embd"], 4 * cfg["n_embd"], bias=cfg["bias"])
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * cfg["n_embd"], cfg["n_embd"], bias=cfg["bias"])
            self.dropout = nn.Dropout(cfg["dropout"])

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = LayerNorm(cfg["n_embd"], cfg["bias"])
            self.attn = CausalSelfAttention()
            self.ln_2 = LayerNorm(cfg["n_embd"], cfg["bias"])
            self.mlp = MLP()

        def forward(self, x, cache=None):
            x = x + self.attn(self.ln_1(x), cache)
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.block_size = cfg["block_size"]
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(cfg["vocab_size"], cfg["n_embd"]),
                wpe=nn.Embedding(cfg["block_size"], cfg["n_embd"]),
                drop=nn.Dropout(cfg["dropout"]),
                h=nn.ModuleList([Block() for _ in range(cfg["n_layer"])]),
                ln_f=LayerNorm(cfg["n_embd"], cfg["bias"])))
            self.lm_head = nn.Linear(cfg["n_embd"], cfg["vocab_size"], bias=False)
            self.transformer.wte.weight = self.lm_head.weight     # tied
            # the weights are copied in from paragrad's model (load_paragrad_weights)

        def forward(self, idx, targets=None, cache=None):
            b, t = idx.size()
            past = 0 if cache is None or cache[0][0] is None else cache[0][0].shape[2]
            assert past + t <= self.block_size, f"sequence length {past + t} > block_size {self.block_size}"
            pos = torch.arange(past, past + t, dtype=torch.long, device=idx.device)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for i, block in enumerate(self.transformer.h):
                x = block(x, None if cache is None else cache[i])
            x = self.transformer.ln_f(x)
            if targets is None:
                return self.lm_head(x[:, [-1], :]), None
            logits = self.lm_head(x)
            return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

        def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
            params = [p for p in self.parameters() if p.requires_grad]
            groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                      {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
            return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, fused=device_type == "cuda")

        @staticmethod
        def _sample(logits, temperature, top_k, generator):
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            return torch.multinomial(F.softmax(logits, dim=-1), num_samples=1, generator=generator)

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
            """nanoGPT's generate: the whole (cropped) context runs every step."""
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
                logits, _ = self(idx_cond)
                idx = torch.cat((idx, self._sample(logits, temperature, top_k, generator)), dim=1)
            return idx

        @torch.no_grad()
        def generate_cached(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
            """The same tokens with a key/value cache: after the first step only the newest token
            runs; once the context outgrows block_size the cache is rebuilt from the cropped one
            (the cached keys belong to shifted positions), as paragrad's GPT.generate does."""
            cache = None
            for _ in range(max_new_tokens):
                if cache is not None and cache[0][0].shape[2] < self.block_size:
                    logits, _ = self(idx[:, -1:], cache=cache)
                else:
                    cache = [[None, None] for _ in self.transformer.h]
                    logits, _ = self(idx[:, -self.block_size:], cache=cache)
                idx = torch.cat((idx, self._sample(logits, temperature, top_k, generator)), dim=1)
            return idx

    return GPT()


# ----------------------------------------------------------------------------------------------


def paragrad_gpt(cfg, device):
    import paragrad as pg
    from paragrad.models import GPT, GPTConfig
    pg.manual_seed(0)
    return GPT(GPTConfig(**cfg)).to(device)


def load_paragrad_weights(tmodel, cfg, device):
    """The torch model on `device` holding the weights of paragrad_gpt(cfg) (the same seed),
    copied by name; the tied weight once (lm_head.weight)."""
    import torch
    state = paragrad_gpt(cfg, "cpu").state_dict()
    own = tmodel.state_dict()
    if sorted(own) != sorted(state):
        raise RuntimeError(f"parameter names differ: {sorted(set(own) ^ set(state))}")
    with torch.no_grad():
        for name, p in tmodel.named_parameters():          # named_parameters lists a tied one once
            p.copy_(torch.tensor(state[name].numpy()))
    return tmodel.to(device)


def make_batches(tokens, batch, block, k, seed):
    """k (x, y) int64 NumPy batches of windows of `tokens`, offsets from one seeded generator."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        ix = rng.integers(0, len(tokens) - block - 1, batch)
        x = np.stack([np.asarray(tokens[i:i + block], dtype=np.int64) for i in ix])
        y = np.stack([np.asarray(tokens[i + 1:i + 1 + block], dtype=np.int64) for i in ix])
        out.append((x, y))
    return out


class Result:
    def __init__(self, rate=None, val=None, err=""):
        self.rate, self.val, self.err = rate, val, err


def measure(fn, *args):
    """fn(*args) -> Result; a failure is the error in one line: one failing row must not end the run."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - reported in the table
        return Result(err=f"{type(e).__name__}: {e}".strip().split("\n")[0][:160])


def paragrad_step(cfg, device, bf16):
    """(model, step(x, y) -> loss): the bench's eager training step (AdamW, clipping, bf16
    autocast when asked); train_paragrad captures it with pg.jit, bench/gpt_kernels.py profiles it."""
    import paragrad as pg
    from paragrad.nn.utils.clip_grad import clip_grad_norm_
    model = paragrad_gpt(cfg, device)
    model.train()
    opt = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99), device)

    def step(x, y):
        with pg.autocast(device, dtype=pg.bfloat16, enabled=bf16):
            _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss
    return model, step


def torch_step(cfg, device, bf16, compiled=False):
    """(model, forward, step(x, y)): nanoGPT's model and the same step in PyTorch, from paragrad's
    weights; `forward` is torch.compile(model) when compiled."""
    import torch
    torch.manual_seed(0)
    model = load_paragrad_weights(torch_gpt(cfg), cfg, device)
    model.train()
    opt = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99), device)
    fwd = torch.compile(model) if compiled else model

    def step(x, y):
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            _, loss = fwd(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return model, fwd, step


def train_paragrad(cfg, a, data, val, device):
    import paragrad as pg
    model, step = paragrad_step(cfg, device, a.precision == "bf16")
    return _trained(pg, model, model, pg.jit(step), a, data, val, device,
                    pg.cuda.synchronize if device == "cuda" else (lambda: None))


def train_torch(cfg, a, data, val, device, compiled):
    import torch
    model, fwd, step = torch_step(cfg, device, a.precision == "bf16", compiled)
    return _trained(torch, model, fwd, step, a, data, val, device,
                    torch.cuda.synchronize if device == "cuda" else (lambda: None))


def _trained(lib, model, forward, step, a, data, val, device, sync):
    """Tokens/s of `step` over the batches `data`, then the mean val loss of `forward` (the
    model, or its compiled form) over `val`: the same measurement for either framework, `lib`
    paragrad or torch."""
    batches = [(lib.tensor(x, device=device), lib.tensor(y, device=device)) for x, y in data]
    vbatches = [(lib.tensor(x, device=device), lib.tensor(y, device=device)) for x, y in val]
    rate = per_second(lambda i: step(*batches[i % len(batches)]), sync,
                      a.batch_size * a.block_size, a.iters, a.warmup, windows=1)
    model.eval()
    with lib.no_grad(), lib.autocast(device, dtype=lib.bfloat16, enabled=a.precision == "bf16"):
        losses = [forward(x, y)[1].float().item() for x, y in vbatches]
    return Result(rate, float(np.mean(losses)))


def add_model_arguments(p):
    """The model and batch flags bench/gpt.py and bench/gpt_kernels.py share (nanoGPT's
    shakespeare-char config by default)."""
    p.add_argument("--n-layer", type=int, default=6)
    p.add_argument("--n-head", type=int, default=6)
    p.add_argument("--n-embd", type=int, default=384)
    p.add_argument("--block-size", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--dropout", type=float, default=0.2, help="nanoGPT shakespeare-char's 0.2 by default")


def parse_arguments(p):
    """p's flags, the model's checked (exit 2 naming the flags)."""
    a = p.parse_args()
    if a.n_embd % a.n_head:
        p.error(f"--n-embd {a.n_embd} is not a multiple of --n-head {a.n_head}")
    return a


def model_config(a, vocab_size):
    """GPTConfig's fields from those flags (bias on, as nanoGPT's config)."""
    return dict(n_layer=a.n_layer, n_head=a.n_head, n_embd=a.n_embd, block_size=a.block_size,
                vocab_size=vocab_size, dropout=a.dropout, bias=True)


def timed_generation(run, sync, batch, tokens):
    """run(n) generates n tokens per sequence; a short untimed run first -> new tokens/s (all rows)."""
    run(min(tokens, 16))
    sync()
    t0 = time.perf_counter()
    run(tokens)
    sync()
    return Result(batch * tokens / (time.perf_counter() - t0))


def gen_paragrad(cfg, a, batch, device):
    import paragrad as pg
    model = paragrad_gpt(cfg, device)
    model.eval()
    bf16 = a.precision == "bf16"
    idx = pg.zeros((batch, 1), dtype=pg.int64, device=device)
    gen = pg.Generator(device).manual_seed(0)

    def run(n):
        with pg.autocast(device, dtype=pg.bfloat16, enabled=bf16):
            out = model.generate(idx, n, temperature=1.0, top_k=TOP_K, generator=gen, use_cache=True)
        assert tuple(out.shape) == (batch, 1 + n)
    sync = pg.cuda.synchronize if device == "cuda" else (lambda: None)
    return timed_generation(run, sync, batch, a.gen_tokens)


def gen_torch(cfg, a, batch, device, cached):
    import torch
    model = load_paragrad_weights(torch_gpt(cfg), cfg, device)
    model.eval()
    bf16 = a.precision == "bf16"
    idx = torch.zeros((batch, 1), dtype=torch.long, device=device)
    gen = torch.Generator(device).manual_seed(0)
    generate = model.generate_cached if cached else model.generate

    def run(n):
        with torch.autocast(device, dtype=torch.bfloat16, enabled=bf16):
            out = generate(idx, n, temperature=1.0, top_k=TOP_K, generator=gen)
        assert tuple(out.shape) == (batch, 1 + n)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    return timed_generation(run, sync, batch, a.gen_tokens)


def ratio(mine, peer):
    return f"{mine.rate / peer.rate:6.2f}" if mine.rate and peer.rate else f"{'-':>6s}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_arguments(p)
    p.add_argument("--iters", type=int, default=50, help="timed training iterations per row")
    p.add_argument("--warmup", type=int, default=10, help="untimed training iterations first")
    p.add_argument("--gen-tokens", type=int, default=500, help="new tokens per generation row (0: none)")
    p.add_argument("--precision", default=None, choices=("bf16", "fp32"),
                   help="bf16: the forward and the loss under bfloat16 autocast (default on CUDA, as "
                        "nanoGPT); fp32: float32 throughout, TF32 off (default on the CPU)")
    p.add_argument("--json", default=None, help="also write the numbers to this file")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help=argparse.SUPPRESS)  # CPU smoke test
    a = parse_arguments(p)
    import torch
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("bench/gpt.py needs a CUDA GPU (torch.cuda.is_available() is False); CPU smoke test: "
                 "python bench/gpt.py --device cpu --n-layer 1 --n-embd 32 --n-head 2 --block-size 32 "
                 "--batch-size 4 --iters 3 --warmup 1 --gen-tokens 20")
    from paragrad.data.text_corpora import language_model_data
    root = default_data_dir("shakespeare")
    with tempfile.TemporaryDirectory(prefix="paragrad-gpt-bench-") as cache:
        tok, train, val = language_model_data("shakespeare", root, "char", cache_dir=cache)
        data = make_batches(train.tokens, a.batch_size, a.block_size, N_BATCHES, seed=0)
        vdata = make_batches(val.tokens, a.batch_size, a.block_size, N_VAL, seed=1)
    cfg = model_config(a, tok.vocab_size)
    print_header(a.device)
    a.precision = a.precision or ("bf16" if a.device == "cuda" else "fp32")
    precision = "bf16 autocast" if a.precision == "bf16" else "float32"
    tokens_per_iter = a.batch_size * a.block_size
    print(f"model   : nanoGPT shakespeare-char GPT, n_layer {a.n_layer}, n_head {a.n_head}, n_embd {a.n_embd}, "
          f"block_size {a.block_size}, vocab {cfg['vocab_size']}, dropout {a.dropout}, bias; "
          f"{paragrad_gpt(cfg, 'cpu').get_num_params() / 1e6:.2f}M parameters; {precision}")

    print(f"\nTraining, batch {a.batch_size} x {a.block_size} tokens (AdamW lr 1e-3 betas (0.9, 0.99) wd 0.1, "
          f"clip 1.0; {a.iters} timed iterations after {a.warmup} warm-up ones, {N_BATCHES} fixed batches "
          f"cycled); val loss: mean of {N_VAL} fixed val batches after them; ratio = paragrad jit / row "
          f"(>1 = paragrad faster)")
    print(f"{'row':22s} {'ms/iter':>9s} {'tokens/s':>11s} {'val loss':>9s} {'ratio':>6s}")
    rows, train_json = {}, []
    for name in ("paragrad jit", "torch eager", "torch.compile"):
        r = rows[name] = (measure(train_paragrad, cfg, a, data, vdata, a.device) if name == "paragrad jit" else
                          measure(train_torch, cfg, a, data, vdata, a.device, name == "torch.compile"))
        ms = f"{tokens_per_iter / r.rate * 1e3:9.1f}" if r.rate else f"{'failed':>9s}"
        tps = f"{r.rate:11,.0f}" if r.rate else f"{'-':>11s}"
        vl = f"{r.val:9.4f}" if r.val is not None and math.isfinite(r.val) else f"{'-':>9s}"
        rat = f"{'':>6s}" if name == "paragrad jit" else ratio(rows["paragrad jit"], r)
        print(f"{name:22s} {ms} {tps} {vl} {rat}", flush=True)
        if r.err:
            print(f"  failed: {r.err}")
        train_json.append({"row": name, "ms_per_iter": tokens_per_iter / r.rate * 1e3 if r.rate else None,
                           "tokens_per_s": r.rate, "val_loss": r.val, "error": r.err or None})

    gen_json = []
    if a.gen_tokens > 0:
        print(f"\nGeneration, new tokens/s: {a.gen_tokens} new tokens from a 1-token prompt (temperature 1.0, "
              f"top_k {TOP_K}, seeded; context cropped at block_size {a.block_size}); "
              f"ratio = paragrad kv-cache / row (>1 = paragrad faster)")
        print(f"{'batch':6s} {'paragrad kv-cache':>18s} {'torch no cache':>15s} {'ratio':>6s} "
              f"{'torch kv-cache':>15s} {'ratio':>6s}")
        for b in GEN_BATCHES:
            pg_r = measure(gen_paragrad, cfg, a, b, a.device)
            nc = measure(gen_torch, cfg, a, b, a.device, False)
            kv = measure(gen_torch, cfg, a, b, a.device, True)
            cells = [f"{r.rate:,.0f}" if r.rate else "failed" for r in (pg_r, nc, kv)]
            print(f"{b:<6d} {cells[0]:>18s} {cells[1]:>15s} {ratio(pg_r, nc)} {cells[2]:>15s} {ratio(pg_r, kv)}",
                  flush=True)
            for who, r in (("paragrad kv-cache", pg_r), ("torch no cache", nc), ("torch kv-cache", kv)):
                if r.err:
                    print(f"  {who} failed: {r.err}")
            gen_json.append({"batch": b, "paragrad kv-cache": pg_r.rate, "torch no cache": nc.rate,
                             "torch kv-cache": kv.rate,
                             "errors": [f"{w}: {r.err}" for w, r in (("paragrad kv-cache", pg_r),
                                        ("torch no cache", nc), ("torch kv-cache", kv)) if r.err]})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "device": a.device,
                       "device_name": torch.cuda.get_device_name() if a.device == "cuda" else "cpu", "config": cfg,
                       "batch_size": a.batch_size, "iters": a.iters, "warmup": a.warmup,
                       "gen_tokens": a.gen_tokens, "precision": precision,
                       "training": train_json, "generation": gen_json}, f, indent=1)


if __name__ == "__main__":
    main()
