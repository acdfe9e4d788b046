"""`paragrad generate CHECKPOINT`: sample text from a language model, streamed to stdout.

The prompt is written first, then each token as it is sampled (flushed, so a terminal or a pipe
sees the text grow). Sampling draws from a generator seeded with --seed: the same checkpoint,
flags and seed give the same text. A vocabulary padded past the tokenizer's (--model gpt2's
50304 rows) is sampled over the tokenizer's ids only (load_language_model cuts the rest).
"""
from __future__ import annotations

import os
import sys

from ..ops.creation import tensor
from ..random import Generator
from ..text import StreamDecoder
from .arguments import UsageError
from .lm_checkpoint import load_language_model


def _prompt_ids(tokenizer, prompt):
    if prompt is None:     # nanoGPT's sample.py starts from a newline; BPE from end-of-text
        return [tokenizer.eot_id] if tokenizer.eot_id is not None else tokenizer.encode("\n")
    if prompt == "":
        raise UsageError("--prompt is empty: the model needs at least one token to continue")
    try:
        return tokenizer.encode(prompt)
    except ValueError as e:
        raise UsageError(f"--prompt: {e}") from None


def generate(args):
    model, tokenizer, _ = load_language_model(args.checkpoint, args.device)
    ids = _prompt_ids(tokenizer, args.prompt)
    if not ids:
        raise UsageError("--prompt encodes to no tokens")
    gen = Generator(args.device).manual_seed(args.seed)
    idx = tensor([ids], device=args.device)                                   # (1, T)
    try:
        _stream(model, tokenizer, idx, args, gen, sys.stdout)
    except BrokenPipeError:
        # the reader left (`paragrad generate ... | head`): done, without a traceback or an
        # error when Python flushes stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _stream(model, tokenizer, idx, args, gen, out):
    """The prompt as given (none by default), then the sampled text as it comes, then a newline."""
    if args.prompt is not None:
        out.write(args.prompt)
    # a token at a time: decoding the whole continuation again per token made n tokens cost n^2
    text = StreamDecoder(tokenizer)
    for token in model.generate_tokens(idx, args.max_new_tokens, args.temperature, args.top_k,
                                       args.top_p, gen):
        piece = text.push(int(token[0, 0]))
        if piece:       # ('' while a BPE token has ended in the middle of a UTF-8 character)
            out.write(piece)
            out.flush()
    out.write(text.flush() + "\n")
    out.flush()
