"""GPT, with nanoGPT's architecture and parameter names, so a nanoGPT state_dict loads by name:
token and learned position embeddings, pre-LayerNorm blocks of causal self-attention and a GELU
MLP, a final LayerNorm, and a language-model head that shares the token embedding's weight.

Generation keeps a key/value cache: the prompt runs through the model once, then each new token
runs alone, attending over the cached keys and values of the tokens before it. On a GPU that
one-token step is captured once as a CUDA graph (pg.jit) over a fixed-size cache and replayed for
every new token: a launch instead of a few hundred kernel launches from Python."""
from __future__ import annotations

import math
from dataclasses import dataclass

from .. import nn, optim
from ..amp.autocast_mode import get_autocast_dtype, is_autocast_enabled
from ..autograd import no_grad
from ..dtypes import bool_, float32
from ..nn import functional as F
from ..nn.module import untouched
from ..jit import jit
from ..ops import arange, cat, ones, tensor, tril
from .kv_cache import KVCache, StaticKVCache
from .sampling import check_sampling_args, sample_next_token


@dataclass
class GPTConfig:
    block_size: int = 1024      # the longest context the position embedding covers
    vocab_size: int = 50304     # GPT-2's 50257 padded up to a multiple of 64
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True           # bias in the Linears and LayerNorms, as GPT-2


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        if config.n_embd % config.n_head:
            raise ValueError(f"CausalSelfAttention: n_embd {config.n_embd} is not a multiple of "
                             f"n_head {config.n_head}")
        # query, key and value projections of all heads in one matmul
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        # attn_dropout holds no state and is not called: scaled_dot_product_attention drops the
        # attention weights itself (dropout_p); the name stays for nanoGPT's module layout
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout

    def forward(self, x, cache=None):
        return self.resid_dropout(self.attend(x, cache))

    def attend(self, x, cache=None):
        """forward before its residual dropout (Block adds the dropout into the residual add)."""
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)             # (B, T, C) each
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        dropout_p = self.dropout if self.training else 0.0
        if isinstance(cache, StaticKVCache):
            # one new token at the cache's device-side position: every slot is attended over,
            # those after the position masked out, so the shapes never change
            k, v = cache.extend(k, v)                                  # (B, nh, capacity, hs)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=cache.visible, dropout_p=dropout_p)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        past = 0 if cache is None else len(cache)
        if cache is not None:
            k, v = cache.extend(k, v)                                  # (B, nh, past + T, hs)
        if past == 0:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)
        elif T == 1:
            # the newest token sees every cached one: no mask at all
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
        else:
            # is_causal aligns the triangle top-left; the new queries sit at the bottom right
            # of the (T, past + T) score matrix: query i sees keys 0 .. past + i
            mask = tril(ones(T, past + T, dtype=bool_, device=x.device), diagonal=past)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        y = y.transpose(1, 2).contiguous().view(B, T, C)               # heads side by side
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.transform(x))

    def transform(self, x):
        """forward before its dropout (Block adds the dropout into the residual add)."""
        return self.c_proj(self.gelu(self.c_fc(x)))                    # (B, T, C)


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x, cache=None):
        if not self._runs_fused():
            x = x + self.attn(self.ln_1(x), cache)          # nanoGPT's, each module called
            return x + self.mlp(self.ln_2(x))
        # the same numbers in fewer passes: each residual add and its branch's dropout one op (not
        # dropout, the bf16 branch's cast to the float32 stream under autocast, then the add),
        # and each norm written in the dtype its Linear reads (_normed)
        x = _add_dropped(x, self.attn.attend(_normed(self.ln_1, x), cache), self.attn.resid_dropout)
        return _add_dropped(x, self.mlp.transform(_normed(self.ln_2, x)), self.mlp.dropout)  # (B, T, C)

    def _runs_fused(self):
        """Whether the fused forward computes what calling the modules would: they are the ones
        built here (not replaced, not subclassed), with no hooks."""
        return (untouched((self.ln_1, nn.LayerNorm), (self.attn, CausalSelfAttention),
                          (self.ln_2, nn.LayerNorm), (self.mlp, MLP))
                # (then their dropouts: a replacement may have none)
                and untouched((self.attn.resid_dropout, nn.Dropout), (self.mlp.dropout, nn.Dropout)))


def _add_dropped(x, branch, dropout):
    """x + dropout(branch), dropout an nn.Dropout (its p and training mode)."""
    return F.residual_dropout(x, branch, dropout.p, dropout.training)


def _normed(ln, x):
    """ln(x) as the Linear after it reads it: under autocast that Linear casts its float32
    input to the autocast dtype, so the norm writes that dtype itself (the same values) and
    takes its gradient back in it: no float32 output and cast either way."""
    device = x.device.type
    if x.dtype is float32 and is_autocast_enabled(device):
        return F.layer_norm_cast(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps,
                                 get_autocast_dtype(device))
    return ln(x)


class GPT(nn.Module):
    """GPT language model built from a GPTConfig, with nanoGPT's architecture and parameter names (a
    nanoGPT state_dict loads by name); as nanoGPT's model.GPT. forward(idx, targets) returns
    (logits, loss); generate samples continuations with a key/value cache."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # weight tying: one Parameter, reached by both names (so both are state_dict keys)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(_init_weights)
        # GPT-2's scaled init of the projections that add into the residual stream: the sum of
        # 2 * n_layer of them should stay near the embedding's scale
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def get_num_params(self, non_embedding=True):
        """The number of parameters; non_embedding leaves out the position embedding (the
        token embedding stays in: it is also the output layer's weight)."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.transformer.wpe.weight.numel()
        return n

    def new_cache(self):
        """An empty key/value cache for forward(..., cache=): one KVCache per block."""
        return [KVCache() for _ in self.transformer.h]

    def forward(self, idx, targets=None, cache=None):
        """idx (B, T) token ids -> (logits, loss). With targets (B, T): logits (B, T, vocab) and
        the mean cross-entropy over targets that are not -1. Without: the last position's
        logits (B, 1, vocab) and None. With a cache (from new_cache), idx continues the tokens
        already in it: positions start after them, and their keys and values join the cache."""
        B, T = idx.shape
        past = 0 if cache is None else len(cache[0])
        if past + T > self.config.block_size:
            seen = f"sequence length {T}" + (f" after {past} cached tokens" if past else "")
            raise ValueError(f"GPT.forward: {seen} exceeds block_size {self.config.block_size}")
        pos = arange(past, past + T, device=idx.device)                # (T,)
        tok_emb = self.transformer.wte(idx)                            # (B, T, C)
        pos_emb = self.transformer.wpe(pos)                            # (T, C)
        x = self.transformer.drop(tok_emb + pos_emb)                   # (B, T, C)
        for i, block in enumerate(self.transformer.h):
            x = block(x, None if cache is None else cache[i])
        x = self.transformer.ln_f(x)
        if targets is None:
            # only the last position predicts a new token: skip the head everywhere else
            return self.lm_head(x[:, -1:, :]), None                    # (B, 1, vocab)
        logits = self.lm_head(x)                                       # (B, T, vocab)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1), ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        """AdamW with weight decay on the matmul weights and embeddings (every parameter of 2 or
        more dims) and none on biases and LayerNorm gains; fused on CUDA."""
        params = [p for p in self.parameters() if p.requires_grad]
        decay = [p for p in params if p.dim() >= 2]
        no_decay = [p for p in params if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": no_decay, "weight_decay": 0.0}]
        return optim.AdamW(groups, lr=learning_rate, betas=betas,
                           fused=True if device_type == "cuda" else None)

    def decode_step(self, token, position, caches):
        """One new token per sequence through a fixed-size cache: token (B, 1) ids at `position`
        (a (1,) int64 tensor on the model's device, the number of tokens already cached) ->
        the next token's logits (B, 1, vocab). No host reads and no shape that depends on the
        position, so pg.jit captures it once for a whole generation."""
        visible = arange(caches[0].capacity, device=token.device) <= position     # (capacity,)
        for cache in caches:
            cache.position, cache.visible = position, visible
        x = self.transformer.wte(token) + self.transformer.wpe(position)         # (B, 1, C)
        for block, cache in zip(self.transformer.h, caches):
            x = block(x, cache)
        return self.lm_head(self.transformer.ln_f(x))                            # (B, 1, vocab)

    def generate_tokens(self, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None,
                        generator=None, use_cache=True):
        """Yield max_new_tokens new token ids, (B, 1) each, continuing idx (B, T); see generate.
        Gradients are off while a token is computed, but not between yields, where the caller's
        code runs."""
        check_sampling_args(temperature, top_k, top_p)
        block_size, device = self.config.block_size, idx.device
        # on a GPU the one-token step is one captured graph over fixed-size caches (made at the
        # first prompt run, refilled in place after each one, so the graph stays valid)
        graphs = use_cache and device.type != "cpu"
        context, cache, cached = idx, None, 0          # (B, T'), the tokens so far; cache length
        static = decode = None
        for _ in range(max_new_tokens):
            with no_grad():
                if use_cache and 0 < cached < block_size:
                    # the cache holds every token but the newest: run that one alone
                    if graphs:
                        logits = decode(context[:, -1:], tensor([cached], device=device))
                    else:
                        logits, _ = self(context[:, -1:], cache=cache)
                    cached += 1
                else:
                    # first step, or the context outgrew block_size: the cached keys belong to
                    # positions that cropping has shifted, so recompute them from the cropped context
                    cache = self.new_cache() if use_cache else None
                    logits, _ = self(context[:, -block_size:], cache=cache)
                    cached = len(cache[0]) if use_cache else 0
                    if graphs:
                        if static is None:
                            static = [StaticKVCache(c, block_size) for c in cache]
                            decode = jit(lambda token, position: self.decode_step(token, position, static))
                        else:
                            for s, c in zip(static, cache):
                                s.load(c)
                token = sample_next_token(logits[:, -1, :], temperature, top_k, top_p, generator)
                context = cat([context, token], 1)
            yield token                                                # (B, 1)

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None,
                 use_cache=True):
        """nanoGPT's generate: idx (B, T) followed by max_new_tokens sampled tokens, (B, T + n).
        Each step sees the last block_size tokens at most. temperature 0 is greedy; top_k keeps
        the k most likely tokens, top_p the smallest set whose probability reaches top_p; the
        draw uses `generator`. use_cache=False runs the whole context every step (the same
        tokens, slower). Call model.eval() first, as nanoGPT's sample.py does, if dropout > 0."""
        new = list(self.generate_tokens(idx, max_new_tokens, temperature, top_k, top_p, generator,
                                        use_cache))
        return cat([idx, *new], 1)


def _init_weights(module):
    # nanoGPT's init: N(0, 0.02) for Linear and Embedding weights, zero biases (the tied weight
    # is drawn twice, as in nanoGPT; the second draw stays)
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
