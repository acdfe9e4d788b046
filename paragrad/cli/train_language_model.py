"""`paragrad train shakespeare|tinystories|random-tokens`: train a GPT as nanoGPT's train.py does.

Each iteration draws random windows on the device, runs forward and loss under the run's
precision, clips the gradient norm and takes an AdamW step, as one CUDA graph (pg.jit) on CUDA.
Every --eval-interval iterations and at the end: train and val loss, metrics.jsonl, curves.png
and ckpt.safetensors (the latest state, for --resume; tokenizer.json beside it, except for
random tokens, which have none), and, when the val loss is the lowest so far, best.safetensors
(as nanoGPT keeps its best: these models overfit late).
A loss that becomes NaN or inf stops the run (exit 1) naming the iteration, checked on the device
and read where the loop reads anyway (progress redraws, evaluations): see divergence.py.
"""
from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path

from ..data.random_tokens import random_token_data, said_plainly
from ..data.text_corpora import language_model_data
from ..data.token_dataset import random_windows
from ..io import checkpoint
from ..io.safetensors import SafetensorsError
from ..jit import jit
from ..nn.utils.clip_grad import clip_grad_norm_
from ..random import Generator, manual_seed
from ..text import fingerprint
from . import out_folder
from .arguments import UsageError
from .data_parallel import Ranks
from .divergence import Diverged, LossWatch, kept, weights_finite
from .lm_config import LM_DATASETS, RANDOM_TOKENS, build_gpt, gpt_config, lm_run_record, resolve_lm
from .lm_checkpoint import run_tokenizer
from .lm_evaluate import LossEstimator
from .plot import plot_lm_curves
from .precision import describe_precision, forward_autocast, grad_scaler
from .progress import Progress
from .run_config import data_folder, recorded_run

CHECKPOINT, BEST = "ckpt.safetensors", "best.safetensors"
PLOT_EVERY_S = 10.0     # curves.png costs about 0.3 s: drawn at most this often, and at the end
_CHECKPOINT_FILES = {name: (name, checkpoint.train_state_path(name), checkpoint.pending_path(name))
                     for name in (CHECKPOINT, BEST)}
_RUN_FILES = (*_CHECKPOINT_FILES[CHECKPOINT], *_CHECKPOINT_FILES[BEST], "metrics.jsonl", "curves.png",
              "tokenizer.json")


def lr_at(it, args):
    """nanoGPT's schedule: linear warm-up, cosine decay to --min-lr at --lr-decay-iters, then flat."""
    if it < args.warmup_iters:
        return args.lr * (it + 1) / (args.warmup_iters + 1)
    if it > args.lr_decay_iters:
        return args.min_lr
    ratio = (it - args.warmup_iters) / max(args.lr_decay_iters - args.warmup_iters, 1)
    return args.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (args.lr - args.min_lr)


def make_step(model, opt, args, generator, scaler, watch):
    """One iteration on windows of `tokens` (its argument, so that pg.jit captures on its device):
    --grad-accum micro-batches, each's loss divided by their count so that the gradients add up
    to the mean's, averaged across ranks on the last one only (DistributedDataParallel.no_sync
    on the others); the micro-batches' mean loss is recorded in `watch` (a LossWatch) and
    returned. No host reads: the whole step can be one CUDA graph."""
    micro = args.grad_accum

    def train_step(tokens):
        opt.zero_grad()
        for i in range(micro):
            x, y = random_windows(tokens, args.batch_size, args.block_size, generator)
            last = i == micro - 1
            with contextlib.nullcontext() if last or not hasattr(model, "no_sync") else model.no_sync():
                with forward_autocast(args.precision, tokens.device):
                    _, loss = model(x, y)
                scaler.scale(loss / micro if micro > 1 else loss).backward()
            total = loss.detach() if i == 0 else total + loss.detach()
        loss = total / micro if micro > 1 else total
        if args.grad_clip > 0:
            scaler.unscale_(opt)
            clip_grad_norm_(model.parameters(), args.grad_clip)
        scaler.step(opt)
        scaler.update()
        watch.record(loss, 1)
        return loss
    return train_step


def _check_out(args, start):
    """Refuse an --out that is a file, holds another run, or holds checkpoints of this run later
    than the one resumed (unless --overwrite); returns (out, the files --overwrite removes)."""
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {args.out}: it is a file, not a folder")
    held = [out / name for name in _RUN_FILES if (out / name).exists()]
    continuing = args.resume is not None and Path(args.resume).resolve().parent == out.resolve()
    if not continuing:
        if held and not args.overwrite:
            raise UsageError(f"--out {args.out} already holds another run ({', '.join(p.name for p in held)}); "
                             f"continue it with --resume {out / CHECKPOINT}, replace it with --overwrite, "
                             f"or choose another --out")
        return out, held
    later = {name: step for name in (CHECKPOINT, BEST) if (step := _saved_at(out / name)) > start}
    if later and not args.overwrite:
        raise out_folder.later_checkpoints(args, [f"{name} at iteration {step}" for name, step in later.items()],
                                           f"iteration {start}", out / CHECKPOINT)
    return out, [out / f for name in later for f in _CHECKPOINT_FILES[name]]


def _saved_at(path):
    """The iteration checkpoint `path` was saved at (-1 if there is none; a damaged one counts
    as the latest, so that only --overwrite replaces it)."""
    if not Path(checkpoint.train_state_path(path)).exists():
        return -1
    try:
        step = checkpoint.saved_state(path)["step"]
    except (SafetensorsError, KeyError):
        return math.inf
    return step if type(step) is int else math.inf


def _tokenizer(args, state):
    """The resumed run's tokenizer (its ids are what the weights know), else the dataset's kind
    (None: random tokens have none)."""
    if state is None or LM_DATASETS[args.dataset] is None:
        return LM_DATASETS[args.dataset]
    return run_tokenizer(args.resume, state, "--resume")


def _save(out, it, model, opt, scaler, generator, config, run, records, tokenizer_sha256, scheme_state=None):
    extra = {"config": config, "run": run, "records": records, "grad_scaler": scaler.state_dict(),
             "tokenizer_sha256": tokenizer_sha256, **(scheme_state or {})}
    checkpoint.save(out / CHECKPOINT, model, opt, step=it, extra=extra, generators=[generator])
    if records[-1]["val_loss"] <= _best_kept(out)["val_loss"]:
        checkpoint.save(out / BEST, model, opt, step=it, extra=extra, generators=[generator])
    out_folder.write_records(records, out / "metrics.jsonl")


def _best_kept(out):
    """The evaluation record of best.safetensors (val loss inf when there is none: a resume with
    --overwrite may have removed a later one, and the next evaluation then becomes the best)."""
    try:
        return checkpoint.saved_state(out / BEST)["extra"]["records"][-1]
    except (SafetensorsError, KeyError, IndexError, TypeError):
        return {"iter": None, "val_loss": math.inf}


def _load_data(args, data_dir, tokenizer, ranks):
    """The corpus tokenized (rank 0 first: the others then read the token files it cached), or
    the random ids (drawn from the run's seed: the same on every rank)."""
    if args.dataset == RANDOM_TOKENS:
        return random_token_data(args.vocab_size, args.seed)

    def load():
        return language_model_data(args.dataset, data_dir, tokenizer, args.vocab_size)
    data = load() if ranks.main else None
    ranks.barrier()
    return data if ranks.main else load()


def train_language_model(args, ranks=None):
    # every check that can refuse the command comes before anything is written
    ranks = ranks or Ranks()    # data parallel: see data_parallel.py
    state = resolve_lm(args, ranks.world)
    ranks.resolve(args, state)
    data_dir = data_folder(args.data_dir, state and recorded_run(state).get("data_dir"))
    start = state["step"] if state else 0
    if start >= args.max_iters:
        print(f"nothing left to train: {args.resume} has trained all {args.max_iters} iterations "
              f"of its run (pass a larger --max-iters to train further)")
        return 0
    args.out = args.out or (str(Path(args.resume).parent) if args.resume else f"runs/{args.dataset}")
    _check_out(args, start)
    tokenizer = _tokenizer(args, state)
    data = _load_data(args, data_dir, tokenizer, ranks)
    shortest = min(len(data.train), len(data.val))
    if shortest <= args.block_size:     # known only once tokenized (into the cache, not --out)
        raise UsageError(f"--block-size {args.block_size}: the {args.dataset} splits have "
                         f"{len(data.train):,} and {len(data.val):,} tokens; a window needs "
                         f"block_size + 1 of them, so --block-size must be below {shortest}")
    if data.tokenizer is None:      # random tokens: said before anything else is done
        print(said_plainly(data))
    manual_seed(args.seed)
    tokenizer_vocab = args.vocab_size if data.tokenizer is None else data.tokenizer.vocab_size
    config = gpt_config(args, tokenizer_vocab)
    model = build_gpt(config).to(args.device)
    if not ranks.main:      # the same initial weights on every rank, its own dropout
        manual_seed(ranks.seed(args.seed))
    dev_type = model.lm_head.weight.device.type
    opt = ranks.optimizer(model.configure_optimizers(args.weight_decay, args.lr, (args.beta1, args.beta2), dev_type),
                          args)
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
    ranks.barrier()     # every rank checked everything before rank 0 writes into --out
    if ranks.main:
        out_folder.lock(Path(args.out))
        out, stale = _check_out(args, start)     # again, under the lock: another run may have written
        out_folder.remove(stale)
        if data.tokenizer is not None:
            data.tokenizer.save(out / "tokenizer.json")
    out = Path(args.out)
    run = ranks.record(lm_run_record(args, data_dir), args)
    # recorded at each save, checked at each load
    tokenizer_sha256 = None if data.tokenizer is None else fingerprint(data.tokenizer)
    tokens = {"train": data.train.tokens_on_device(args.device), "val": data.val.tokens_on_device(args.device)}
    jitted = args.jit and dev_type != "cpu"
    padded = f", the tokenizer's {tokenizer_vocab} padded" if config["vocab_size"] > tokenizer_vocab else ""
    print(f"training GPT ({'--model gpt2, ' if args.model else ''}{model.get_num_params():,} parameters, "
          f"vocabulary {config['vocab_size']}{padded}) on {len(data.train):,} "
          f"{'random' if data.tokenizer is None else args.dataset} tokens, device {args.device}, "
          f"{describe_precision(args.precision)}{', one CUDA graph per step (pg.jit)' if jitted else ''}"
          f"{f', {args.grad_accum} micro-batches a step' if args.grad_accum > 1 else ''}"
          f"{ranks.describe(args)}")
    watch = LossWatch(args.device)
    step = make_step(train_model, opt, ranks.per_rank(args), generator, scaler, watch)
    step = jit(step) if jitted else step
    estimator = LossEstimator(model, tokens, args.batch_size, args.block_size, args.eval_iters, args.precision,
                              args.seed, jitted)
    t0, before = time.perf_counter(), records[-1]["seconds"] if records else 0.0

    saved = args.resume     # the last good checkpoint, for a divergence's message
    counted_from = start    # the iteration after which the watch's count starts
    plotted_at = t0

    def check_finite(it):
        """Diverged if a loss since the last check (iterations after `it`), or the weights, are
        not finite: host reads, made only where the loop reads anyway."""
        total, k = watch.bad_step()
        if k is not None:
            raise Diverged(f"the loss became {total} at iteration {it + k}; training stopped, "
                           f"{kept(saved)} (a lower --lr may help)")

    def evaluate(it):
        nonlocal saved, counted_from, plotted_at
        ranks.synchronize()
        ranks.sum_(watch.loss_sum)      # every rank stops together
        check_finite(counted_from)
        watch.new_epoch()
        counted_from = it
        if not weights_finite(model):
            raise Diverged(f"the weights became non-finite by iteration {it}; training stopped without "
                           f"saving them, {kept(saved)} (a lower --lr may help)")
        ranks.before_checkpoint(opt)
        if not ranks.main:      # rank 0 evaluates, on the batches a single process would
            return True
        losses = estimator.estimate()
        if not all(map(math.isfinite, losses.values())):
            raise Diverged(f"the {'val' if math.isfinite(losses['train']) else 'train'} loss became "
                           f"non-finite at iteration {it}; training stopped, {kept(saved)}")
        records.append({"iter": it, "train_loss": losses["train"], "val_loss": losses["val"],
                        "lr": lr_at(it, args), "seconds": round(before + time.perf_counter() - t0, 3)})
        print(f"iter {it}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        _save(out, it, model, ranks.checkpointed(opt), scaler, generator, config, run, records,
              tokenizer_sha256, ranks.scheme_state())
        saved = out / CHECKPOINT
        if it == args.max_iters or time.perf_counter() - plotted_at >= PLOT_EVERY_S:
            plotted_at = time.perf_counter()
            return plot_lm_curves(records, out / "curves.png")
        return True

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
            if bar.due(done):       # the loop's only host reads, a few per second at most
                check_finite(counted_from)
                bar.update(done, done * args.batch_size * args.grad_accum, loss=float(loss))    # (rank 0's loss)
            if (it + 1) % args.eval_interval == 0 or it + 1 == args.max_iters:
                bar.close()
                plotted = evaluate(it + 1)
    finally:
        bar.close()
    if not ranks.main:
        return 0
    if not plotted:
        print('note: curves.png not written (install matplotlib: pip install "paragrad[plot]")')
    best = _best_kept(out)
    print(f"done: {args.max_iters} iterations, val loss {records[-1]['val_loss']:.4f}, checkpoint "
          f"{out / CHECKPOINT}; best val loss {best['val_loss']:.4f} at iteration {best['iter']}, "
          f"{out / BEST}; metrics {out / 'metrics.jsonl'}")
    return 0
