"""The loss of a language model over random windows of its token splits: nanoGPT's
estimate_loss, shared by `paragrad train shakespeare|tinystories` and `paragrad evaluate`.

The windows are drawn from a generator seeded afresh at each call, so every evaluation of a run
sees the same batches: successive val losses differ by what the model learnt, not by which
windows were drawn, and `paragrad evaluate` repeats the val loss the run printed last.
"""
from __future__ import annotations

from pathlib import Path

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


def evaluate_lm_checkpoint(args, state):
    """`paragrad evaluate` of a language model: its val loss, over the run's batch shape and
    seeded windows (the same as the run's evaluations when --eval-iters is the run's)."""
    from ..data.text_corpora import language_model_data
    from .arguments import UsageError
    from .lm_checkpoint import load_language_model
    from .run_config import data_folder, recorded_run
    if args.limit is not None:
        raise UsageError(f"--limit is for image checkpoints; {args.checkpoint} is a language model "
                         f"(--eval-iters sets how many batches its val loss averages)")
    model, tokenizer, _ = load_language_model(args.checkpoint, args.device)
    run = recorded_run(state)
    data_dir = data_folder(args.data_dir, run.get("data_dir"))
    data = language_model_data(run["dataset"], data_dir, tokenizer,
                               cache_dir=Path(args.checkpoint).parent / "tokens")
    eval_iters = args.eval_iters or run["eval_iters"]
    losses = estimate_loss(model, {"val": data.val.tokens_on_device(args.device)}, run["batch_size"],
                           run["block_size"], eval_iters, run["precision"], run["seed"])
    print(f"{args.checkpoint}: val loss {losses['val']:.4f} over {eval_iters} batches of "
          f"{run['batch_size']}x{run['block_size']} {run['dataset']} tokens")
    return 0
