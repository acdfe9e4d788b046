"""`paragrad train shakespeare|tinystories`: train a GPT as nanoGPT's train.py does.

Each iteration draws random windows on the device, runs forward and loss under the run's
precision, clips the gradient norm and takes an AdamW step, as one CUDA graph (pg.jit) on CUDA.
Every --eval-interval iterations and at the end: train and val loss, metrics.jsonl, curves.png
and ckpt.safetensors (the latest state, for --resume; tokenizer.json beside it), and, when the val
loss is the lowest so far, best.safetensors (as nanoGPT keeps its best: these models overfit late).
"""
from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path

from ..data.text_corpora import language_model_data
from ..data.token_dataset import random_windows
from ..io import checkpoint
from ..io.safetensors import SafetensorsError
from ..jit import jit
from ..nn.utils.clip_grad import clip_grad_norm_
from ..random import Generator, manual_seed
from ..text import load_tokenizer
from .arguments import UsageError
from .data_parallel import Ranks
from .lm_config import LM_DATASETS, build_gpt, gpt_config, lm_run_record, resolve_lm
from .lm_evaluate import LossEstimator
from .plot import plot_lm_curves
from .precision import describe_precision, forward_autocast, grad_scaler
from .progress import Progress
from .run_config import data_folder, recorded_run

CHECKPOINT, BEST = "ckpt.safetensors", "best.safetensors"
_RUN_FILES = (CHECKPOINT, checkpoint.train_state_path(CHECKPOINT), BEST, checkpoint.train_state_path(BEST),
              "metrics.jsonl", "curves.png", "tokenizer.json")


def lr_at(it, args):
    """nanoGPT's schedule: linear warm-up, cosine decay to --min-lr at --lr-decay-iters, then flat."""
    if it < args.warmup_iters:
        return args.lr * (it + 1) / (args.warmup_iters + 1)
    if it > args.lr_decay_iters:
        return args.min_lr
    ratio = (it - args.warmup_iters) / max(args.lr_decay_iters - args.warmup_iters, 1)
    return args.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (args.lr - args.min_lr)


def make_step(model, opt, args, generator, scaler):
    """One iteration on windows of `tokens` (its argument, so that pg.jit captures on its device);
    returns the loss tensor. No host reads: the whole step can be one CUDA graph."""
    def train_step(tokens):
        x, y = random_windows(tokens, args.batch_size, args.block_size, generator)
        with forward_autocast(args.precision, tokens.device):
            _, loss = model(x, y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        if args.grad_clip > 0:
            scaler.unscale_(opt)
            clip_grad_norm_(model.parameters(), args.grad_clip)
        scaler.step(opt)
        scaler.update()
        return loss
    return train_step


def _check_out(args):
    """Refuse an --out holding another run (unless --overwrite); returns (out, files to remove)."""
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {args.out}: it is a file, not a folder")
    held = [out / name for name in _RUN_FILES if (out / name).exists()]
    continuing = args.resume is not None and Path(args.resume).resolve().parent == out.resolve()
    if held and not continuing and not args.overwrite:
        raise UsageError(f"--out {args.out} already holds another run ({', '.join(p.name for p in held)}); "
                         f"continue it with --resume {out / CHECKPOINT}, replace it with --overwrite, "
                         f"or choose another --out")
    return out, [] if continuing else held


def _tokenizer(args):
    """The resumed run's tokenizer (its ids are what the weights know), else the dataset's kind."""
    if not args.resume:
        return LM_DATASETS[args.dataset]
    path = Path(args.resume).parent / "tokenizer.json"
    if not path.is_file():
        raise UsageError(f"--resume {args.resume}: its tokenizer {path} is missing")
    return load_tokenizer(path)


def _save(out, it, model, opt, scaler, generator, config, run, records, scheme_state=None):
    extra = {"config": config, "run": run, "records": records, "grad_scaler": scaler.state_dict(),
             **(scheme_state or {})}
    checkpoint.save(out / CHECKPOINT, model, opt, step=it, extra=extra, generators=[generator])
    if records[-1]["val_loss"] <= min(r["val_loss"] for r in records):
        checkpoint.save(out / BEST, model, opt, step=it, extra=extra, generators=[generator])
    with open(out / "metrics.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    return plot_lm_curves(records, out / "curves.png")


def train_language_model(args, ranks=None):
    # every check that can refuse the command comes before anything is written
    ranks = ranks or Ranks()    # data parallel: see data_parallel.py
    state = resolve_lm(args)
    ranks.resolve(args, state)
    data_dir = data_folder(args.data_dir, state and recorded_run(state).get("data_dir"))
    start = state["step"] if state else 0
    if start >= args.max_iters:
        print(f"nothing left to train: {args.resume} has trained all {args.max_iters} iterations "
              f"of its run (pass a larger --max-iters to train further)")
        return 0
    args.out = args.out or (str(Path(args.resume).parent) if args.resume else f"runs/{args.dataset}")
    out, stale = _check_out(args)
    tokenizer = _tokenizer(args)
    ranks.barrier()     # every rank checked --out before rank 0 writes into it
    created = None
    if ranks.main:
        for p in stale:
            p.unlink()
        # the outermost folder this run creates (removed again if the data then refuses the run)
        created = next((p for p in reversed([out, *out.parents]) if not p.exists()), None)
        out.mkdir(parents=True, exist_ok=True)
        data = language_model_data(args.dataset, data_dir, tokenizer, args.vocab_size or 4096,
                                   cache_dir=out / "tokens")
    ranks.barrier()     # the other ranks read the tokens rank 0 cached
    if not ranks.main:
        data = language_model_data(args.dataset, data_dir, tokenizer, args.vocab_size or 4096,
                                   cache_dir=out / "tokens")
    shortest = min(len(data.train), len(data.val))
    if shortest <= args.block_size:     # known only once tokenized: undo what that wrote
        if created is not None:
            shutil.rmtree(created)
        raise UsageError(f"--block-size {args.block_size}: the {args.dataset} splits have "
                         f"{len(data.train):,} and {len(data.val):,} tokens; a window needs "
                         f"block_size + 1 of them, so --block-size must be below {shortest}")
    if ranks.main:
        data.tokenizer.save(out / "tokenizer.json")
    manual_seed(args.seed)
    config = gpt_config(args, data.tokenizer.vocab_size)
    model = build_gpt(config).to(args.device)
    if not ranks.main:      # the same initial weights on every rank, its own dropout
        manual_seed(ranks.seed(args.seed))
    dev_type = model.lm_head.weight.device.type
    opt = model.configure_optimizers(args.weight_decay, args.lr, (args.beta1, args.beta2), dev_type)
    scaler = grad_scaler(args.precision, args.device)
    generator = Generator(args.device).manual_seed(ranks.seed(args.seed))    # this rank's windows
    train_model = ranks.wrap(model, opt, args)
    records = []
    if state is not None:
        try:
            restored = checkpoint.load(args.resume, model, ranks.checkpointed(opt), generators=[generator])
            scaler.load_state_dict(restored["extra"].get("grad_scaler", {}))
            ranks.restore(restored["extra"], [generator], start)
        except (SafetensorsError, KeyError, TypeError, ValueError, RuntimeError) as e:
            raise UsageError(f"--resume {args.resume}: can't restore it ({type(e).__name__}: {e})") from None
        records = [r for r in state["extra"].get("records", []) if r["iter"] <= start]
        print(f"resumed from {args.resume} at iteration {start}")
    run = ranks.record(lm_run_record(args, data_dir), args)
    tokens = {"train": data.train.tokens_on_device(args.device), "val": data.val.tokens_on_device(args.device)}
    jitted = args.jit and dev_type != "cpu"
    print(f"training GPT ({model.get_num_params():,} parameters, vocabulary {data.tokenizer.vocab_size}) "
          f"on {len(data.train):,} {args.dataset} tokens, device {args.device}, "
          f"{describe_precision(args.precision)}{', one CUDA graph per step (pg.jit)' if jitted else ''}"
          f"{ranks.describe(args)}")
    step = make_step(train_model, opt, ranks.per_rank(args), generator, scaler)
    step = jit(step) if jitted else step
    estimator = LossEstimator(model, tokens, args.batch_size, args.block_size, args.eval_iters, args.precision,
                              args.seed, jitted)
    t0, before = time.perf_counter(), records[-1]["seconds"] if records else 0.0

    def evaluate(it):
        ranks.synchronize()
        if not ranks.main:      # rank 0 evaluates, on the batches a single process would
            return True
        losses = estimator.estimate()
        records.append({"iter": it, "train_loss": losses["train"], "val_loss": losses["val"],
                        "lr": lr_at(it, args), "seconds": round(before + time.perf_counter() - t0, 3)})
        print(f"iter {it}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        return _save(out, it, model, ranks.checkpointed(opt), scaler, generator, config, run, records,
                     ranks.scheme_state())

    plotted = evaluate(0) if start == 0 else True
    bar = Progress(args.max_iters - start, desc="iters", stream=ranks.progress_stream())
    model.train()
    try:
        for it in range(start, args.max_iters):
            lr = lr_at(it, args)
            for group in opt.param_groups:
                group["lr"] = lr
            loss = step(tokens["train"])
            ranks.after_step()
            done = it + 1 - start
            if bar.due(done):       # the loop's only host read, a few per second at most
                bar.update(done, done * args.batch_size, loss=float(loss))    # (rank 0's loss)
            if (it + 1) % args.eval_interval == 0 or it + 1 == args.max_iters:
                bar.close()
                plotted = evaluate(it + 1)
    finally:
        bar.close()
    if not ranks.main:
        return 0
    if not plotted:
        print('note: curves.png not written (install matplotlib: pip install "paragrad[plot]")')
    best = min(records, key=lambda r: r["val_loss"])
    print(f"done: {args.max_iters} iterations, val loss {records[-1]['val_loss']:.4f}, checkpoint "
          f"{out / CHECKPOINT}; best val loss {best['val_loss']:.4f} at iteration {best['iter']}, "
          f"{out / BEST}; metrics {out / 'metrics.jsonl'}")
    return 0
