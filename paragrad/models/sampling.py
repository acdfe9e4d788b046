"""Choosing the next token from a language model's logits: greedy, or a draw after temperature,
top-k and top-p (nucleus) filtering, in that order (nanoGPT's and Hugging Face's order)."""
from __future__ import annotations

import math

from ..ops import multinomial, softmax


def check_sampling_args(temperature, top_k, top_p):
    """Raise ValueError naming the bad argument before any work is done."""
    if temperature < 0:
        raise ValueError(f"sampling: temperature must be >= 0 (0 means greedy), got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"sampling: top_k must be a positive integer or None, got {top_k}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"sampling: top_p must be in (0, 1] or None, got {top_p}")


def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
    """logits (B, V) -> token ids (B, 1), int64. temperature == 0 picks the argmax (top_k and
    top_p then change nothing); otherwise the logits are divided by the temperature, filtered,
    and one token is drawn from their softmax with `generator`."""
    check_sampling_args(temperature, top_k, top_p)
    if temperature == 0:
        return logits.argmax(-1, keepdim=True)                        # (B, 1)
    logits = logits / temperature
    if top_k is not None:
        logits = keep_top_k(logits, top_k)
    if top_p is not None and top_p < 1:
        logits = keep_top_p(logits, top_p)
    probs = softmax(logits, dim=-1)                                   # (B, V)
    return multinomial(probs, 1, generator=generator)                 # (B, 1)


def keep_top_k(logits, k):
    """logits (B, V) with all but the k largest of each row set to -inf (ties with the k-th
    largest are kept, as in nanoGPT)."""
    k = min(k, logits.shape[-1])
    kth = logits.topk(k, dim=-1).values[:, -1:]                       # (B, 1)
    return logits.masked_fill(logits < kth, -math.inf)


def keep_top_p(logits, p):
    """logits (B, V) with -inf outside each row's nucleus: the fewest most likely tokens whose
    probabilities add up to at least p. The most likely token is always kept."""
    probs = softmax(logits, dim=-1)                                   # (B, V)
    sorted_probs, order = probs.sort(dim=-1, descending=True)         # (B, V) each
    # a token is outside once the more likely ones before it already reach p; the first has
    # nothing before it and p > 0, so it is always in
    mass_before = sorted_probs.cumsum(-1) - sorted_probs              # (B, V)
    outside_sorted = mass_before >= p
    outside = outside_sorted.scatter(-1, order, outside_sorted)       # back to vocabulary order
    return logits.masked_fill(outside, -math.inf)
