"""The loss of a language model over random windows of its token splits: nanoGPT's
estimate_loss, shared by `paragrad train shakespeare|tinystories` and `paragrad evaluate`.

The windows are drawn from a generator seeded afresh at each call, so every evaluation of a run
sees the same batches: successive val losses differ by what the model learnt, not by which
windows were drawn, and `paragrad evaluate` repeats the val loss the run printed last.
"""
from __future__ import annotations

from ..autograd import no_grad
from ..data.token_dataset import random_windows
from ..random import Generator
from .precision import forward_autocast


@no_grad()
def estimate_loss(model, splits, batch_size, block_size, eval_iters, precision, seed):
    """{name: mean loss over eval_iters batches} for splits {name: 1-D token tensor on the
    model's device}; one host read per split. Leaves the model in training mode."""
    model.eval()
    losses = {}
    for name, tokens in splits.items():
        gen = Generator(tokens.device).manual_seed(seed + 1)
        forward, total = forward_autocast(precision, tokens.device), None
        for _ in range(eval_iters):
            x, y = random_windows(tokens, batch_size, block_size, gen)
            with forward:
                _, loss = model(x, y)
            total = loss.float() if total is None else total + loss.float()
        losses[name] = float(total) / eval_iters
    model.train()
    return losses

