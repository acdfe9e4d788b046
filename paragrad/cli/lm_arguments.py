"""The command-line flags of language models: `train shakespeare|tinystories|random-tokens`'s model
and schedule flags, and `paragrad generate`. Defaults of None are filled in by lm_config.resolve_lm
(from the device's nanoGPT config, the --model gpt2 preset, or the run being resumed), so a flag
given can be told from a default."""
from __future__ import annotations

import argparse

from .arguments import (below_one, nonnegative_float, nonnegative_int, positive_int, probability,
                        usable_device)


def add_train_flags(t):
    g = t.add_argument_group(
        "language models (shakespeare, tinystories, random-tokens)",
        "defaults: nanoGPT's shakespeare_char config on cuda (6 layers, 6 heads, 384 wide, block 256, "
        "batch 64, dropout 0.2, 5000 iterations, bf16), its CPU config on the cpu (4 layers, 4 heads, "
        "128 wide, block 64, batch 12, dropout 0, 2000 iterations, fp32); with --model gpt2 nanoGPT's "
        "config/train_gpt2.py (12 layers, 12 heads, 768 wide, block 1024, vocabulary padded to 50304, "
        "batch 12 a rank, 40 micro-batches a step over all ranks, lr 6e-4 to 6e-5, 2000 warm-up and "
        "600000 iterations, betas 0.9/0.95, evaluation every 1000 over 200 batches); --batch-size, "
        "--lr, --weight-decay, --precision, --seed, --device, --out, --data-dir, --resume apply too")
    g.add_argument("--n-layer", type=positive_int, default=None, help="transformer blocks")
    g.add_argument("--n-head", type=positive_int, default=None, help="attention heads")
    g.add_argument("--n-embd", type=positive_int, default=None,
                   help="embedding width, a multiple of --n-head")
    g.add_argument("--block-size", type=positive_int, default=None, help="context length in tokens")
    g.add_argument("--dropout", type=below_one, default=None)
    g.add_argument("--bias", action=argparse.BooleanOptionalAction, default=None,
                   help="biases in the Linear and LayerNorm layers (default: none)")
    g.add_argument("--min-lr", type=nonnegative_float, default=None,
                   help="the learning rate the cosine decays to (default 1e-4; --lr defaults to 1e-3)")
    g.add_argument("--warmup-iters", type=nonnegative_int, default=None, help="default 100")
    g.add_argument("--lr-decay-iters", type=positive_int, default=None,
                   help="iterations of the cosine decay (default --max-iters)")
    g.add_argument("--max-iters", type=positive_int, default=None,
                   help="total iterations of the run, counting those a --resume checkpoint has done")
    g.add_argument("--beta1", type=below_one, default=None, help="AdamW beta1 (default 0.9)")
    g.add_argument("--beta2", type=below_one, default=None, help="AdamW beta2 (default 0.99)")
    g.add_argument("--grad-accum", type=positive_int, default=None,
                   help="micro-batches of --batch-size whose gradients make one step (nanoGPT's "
                        "gradient_accumulation_steps; default 1, --model gpt2: 40 / the ranks); each "
                        "rank runs N micro-batches of its share of --batch-size, and the gradients are "
                        "averaged across the ranks once a step, on the last micro-batch")
    g.add_argument("--grad-clip", type=nonnegative_float, default=None,
                   help="clip the gradient norm to this (default 1.0; 0: no clipping)")
    g.add_argument("--eval-interval", type=positive_int, default=None,
                   help="evaluate, log and checkpoint every N iterations (default 250)")
    g.add_argument("--eval-iters", type=positive_int, default=None,
                   help="batches averaged for each train and val loss (default 200 on cuda, 20 on cpu)")
    g.add_argument("--vocab-size", type=positive_int, default=None,
                   help="tinystories: tokens of the BPE vocabulary trained on it (default 4096); "
                        "random-tokens: ids are drawn from [0, N) (default 50304)")


def add_generate_command(sub):
    g = sub.add_parser("generate", help="sample text from a language-model checkpoint",
                       description="Sample text from a checkpoint of `paragrad train shakespeare|"
                                   "tinystories` (random-tokens runs have no text), with the "
                                   "tokenizer.json of its folder; the prompt, "
                                   "then each sampled token, is written to stdout as it comes.")
    g.add_argument("checkpoint")
    g.add_argument("--prompt", default=None,
                   help="text to continue (default: a newline for characters, <|endoftext|> for BPE)")
    g.add_argument("--max-new-tokens", type=positive_int, default=500, help="default 500")
    g.add_argument("--temperature", type=nonnegative_float, default=0.8,
                   help="default 0.8; 0 picks the most likely token")
    g.add_argument("--top-k", type=positive_int, default=200, help="default 200")
    g.add_argument("--top-p", type=probability, default=None,
                   help="keep the smallest set of tokens whose probability reaches P (default: off)")
    g.add_argument("--seed", type=int, default=1337, help="default 1337: the same seed, the same text")
    g.add_argument("--device", type=usable_device, default="cpu", help="cpu (default), cuda or cuda:N")
    return g
