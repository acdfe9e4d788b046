"""`--model gpt2`: GPT-2 124M as nanoGPT's config/train_gpt2.py trains it, for every flag of a
language-model run left out (an explicit flag still wins; --resume keeps the run's own).

The step: nanoGPT's batch_size 12 is each GPU's micro-batch, and its gradient_accumulation_steps
40 (5 * 8 GPUs) is the whole step's, divided by the world size: 480 windows of 1024 tokens
(491,520 tokens) a step however many GPUs share it. paragrad's --batch-size is the global batch,
split over the ranks, so on W ranks the preset's --batch-size is 12 * W (12 windows a rank, as in
nanoGPT) and its --grad-accum 40 / W (micro-batches each rank runs a step): the same step.

The vocabulary: nanoGPT pads GPT-2's 50257 tokens up to 50304, a multiple of 64 (the embedding
and head matmuls run faster). With the preset the GPT has max(the tokenizer's ids, 50304) rows,
so any tokenizer's ids fit; a smaller tokenizer (tinystories' 4096) leaves rows no target uses.
"""
from __future__ import annotations

from .arguments import UsageError

PRESETS = ("gpt2",)
GPT2_VOCAB_SIZE = 50304         # GPT-2's 50257 padded up to a multiple of 64
GPT2_MICRO_BATCH = 12           # windows each GPU runs at once
GPT2_GRAD_ACCUM = 40            # micro-batches a step over all GPUs (5 * 8)
GPT2 = {"n_layer": 12, "n_head": 12, "n_embd": 768, "block_size": 1024, "bias": False, "dropout": 0.0,
        "lr": 6e-4, "min_lr": 6e-5, "warmup_iters": 2000, "max_iters": 600000, "weight_decay": 0.1,
        "beta1": 0.9, "beta2": 0.95, "grad_clip": 1.0, "eval_interval": 1000, "eval_iters": 200}


def check_model_flag(args):
    """Language models take --model gpt2 or no --model; an image model's name is refused."""
    if args.model is not None and args.model not in PRESETS:
        raise UsageError(f"--model {args.model} is an image model, not one for {args.dataset}; "
                         f"language models take --model gpt2 (GPT-2 124M, nanoGPT's "
                         f"config/train_gpt2.py) or no --model (nanoGPT's shakespeare_char config)")


def keep_resumed_preset(args, run):
    """--resume: the preset recorded in the run (None for runs recorded before --model gpt2
    existed: no preset); a --model that differs is refused, as any flag that contradicts it."""
    kept = run.get("preset")
    if args.model is not None and args.model != kept:
        trained = f"with --model {kept}" if kept else "without --model (no preset)"
        raise UsageError(f"--model {args.model} differs from the run being resumed ({args.resume} was "
                         f"trained {trained}); leave --model out to continue that run, or start a "
                         f"new run without --resume")
    args.model = kept


def preset_defaults(args, world=1):
    """The flag values args.model's preset gives a run on `world` ranks ({} without one)."""
    if args.model is None:
        return {}
    values = {**GPT2, "batch_size": GPT2_MICRO_BATCH * world}
    if args.grad_accum is None:
        if GPT2_GRAD_ACCUM % world:
            raise UsageError(f"--model gpt2 on {world} ranks: nanoGPT's {GPT2_GRAD_ACCUM} micro-batches "
                             f"a step (5 x 8 GPUs) don't divide over {world} ranks; pass --grad-accum "
                             f"(the micro-batches each rank runs a step)")
        values["grad_accum"] = GPT2_GRAD_ACCUM // world
    return values


def model_vocab_size(preset, tokenizer_vocab_size):
    """The GPT's vocabulary for a tokenizer of `tokenizer_vocab_size` ids: the same, or with the
    gpt2 preset at least nanoGPT's padded 50304."""
    return max(tokenizer_vocab_size, GPT2_VOCAB_SIZE) if preset == "gpt2" else tokenizer_vocab_size
