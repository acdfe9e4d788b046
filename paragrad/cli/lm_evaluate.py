"""The loss of a language model over random windows of its token splits: nanoGPT's
estimate_loss (LossEstimator), shared by `paragrad train shakespeare|tinystories` and
`paragrad evaluate`.

The windows are drawn from a generator seeded afresh at each call, so every evaluation of a run
sees the same batches: successive val losses differ by what the model learnt, not by which
windows were drawn, and `paragrad evaluate` repeats the val loss the run printed last.
"""
from __future__ import annotations

from pathlib import Path

from ..autograd import no_grad
from ..data.token_dataset import random_windows
from ..jit import jit
from ..ops import zeros
from ..random import Generator
from .precision import forward_autocast


class LossEstimator:
    """estimate() -> {name: mean loss over eval_iters batches} for splits {name: 1-D token
    tensor on the model's device}; one host read per split. Leaves the model in training mode.

    With jitted (CUDA), each split's batch (its windows, the forward, the loss added into a
    device-side sum) is one CUDA graph, captured at the first evaluation and replayed after:
    eagerly, a run's evaluations (nanoGPT's 200 batches a split every 250 iterations) took twice
    the time of its training steps. The generators are reseeded in place, so the graphs keep
    reading the same state."""

    def __init__(self, model, splits, batch_size, block_size, eval_iters, precision, seed, jitted=False):
        self.model, self.splits, self.eval_iters, self.seed, self.jitted = model, splits, eval_iters, seed, jitted
        self.gens = {name: Generator(tokens.device).manual_seed(seed + 1) for name, tokens in splits.items()}
        self.sums = {name: zeros((), device=tokens.device) for name, tokens in splits.items()}

        def batch_loss_into(gen, total):
            # (the generator and the sum are closed over: a graph reads and writes them in place;
            # the tokens are the argument, so that the call has a device to be captured on)
            def add_batch_loss(tokens):
                x, y = random_windows(tokens, batch_size, block_size, gen)
                with forward_autocast(precision, tokens.device):
                    _, loss = model(x, y)
                total.add_(loss.float())
            return jit(add_batch_loss) if jitted else add_batch_loss
        self.batches = {name: batch_loss_into(self.gens[name], self.sums[name]) for name in splits}

    @no_grad()
    def estimate(self):
        self.model.eval()
        losses = {}
        for name, tokens in self.splits.items():
            gen, total = self.gens[name], self.sums[name]
            if self.jitted:     # manual_seed in place (a CUDA generator's state is (seed, offset))
                gen.set_state({"seed": self.seed + 1, "offset": 0})
            else:
                gen.manual_seed(self.seed + 1)
            total.zero_()
            for _ in range(self.eval_iters):
                self.batches[name](tokens)
            losses[name] = float(total) / self.eval_iters
        self.model.train()
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
    model, tokenizer, _ = load_language_model(args.checkpoint, args.device, padded_rows=True)
    run = recorded_run(state)
    data_dir = data_folder(args.data_dir, run.get("data_dir"))
    # token files cached in the run's folder (tokens/) if there are intact ones, else the user's
    # cache: evaluating must not write beside a checkpoint (the folder may be read-only, or someone's)
    data = language_model_data(run["dataset"], data_dir, tokenizer,
                               read_only=[Path(args.checkpoint).parent / "tokens"])
    eval_iters = args.eval_iters or run["eval_iters"]
    val = data.val.tokens_on_device(args.device)
    losses = LossEstimator(model, {"val": val}, run["batch_size"], run["block_size"], eval_iters,
                           run["precision"], run["seed"], jitted=val.device.type != "cpu").estimate()
    print(f"{args.checkpoint}: val loss {losses['val']:.4f} over {eval_iters} batches of "
          f"{run['batch_size']}x{run['block_size']} {run['dataset']} tokens")
    return 0
