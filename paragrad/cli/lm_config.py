"""What a language-model run is (`paragrad train shakespeare|tinystories|random-tokens`):
nanoGPT's defaults, the flags a resumed run keeps, and the GPT config its checkpoints record.

The defaults are nanoGPT's configs: shakespeare_char on CUDA, its CPU variant on the CPU, or with
--model gpt2 its config/train_gpt2.py (lm_preset.py). As for the image runs, flags left out take
the resumed run's values and a flag that contradicts the checkpoint is refused.
"""
from __future__ import annotations

import re

from ..backends import device
from ..io import checkpoint
from ..io.safetensors import SafetensorsError, read_header
from .arguments import UsageError
from .lm_preset import GPT2_VOCAB_SIZE, check_model_flag, keep_resumed_preset, model_vocab_size, preset_defaults
from .run_config import contradiction, flag, read_train_state, recorded_run

RANDOM_TOKENS = "random-tokens"
# dataset -> tokenizer kind (random tokens: none, their ids stand for no text)
LM_DATASETS = {"shakespeare": "char", "tinystories": "bpe", RANDOM_TOKENS: None}
# --vocab-size left out: tinystories' BPE as before; random ids as GPT-2's padded vocabulary
# (random-tokens stands in for a GPT-2-tokenized corpus, nanoGPT's openwebtext)
DEFAULT_VOCAB_SIZE = {"tinystories": 4096, RANDOM_TOKENS: GPT2_VOCAB_SIZE}
# flags only image runs take, and flags only language-model runs take (each refused by the
# other); --model is both's, with other values (lm_preset.check_model_flag, run_config.resolve)
IMAGE_ONLY = ("hidden", "epochs", "optimizer", "schedule", "limit", "test_limit")
LM_ONLY = ("n_layer", "n_head", "n_embd", "block_size", "dropout", "bias", "min_lr", "warmup_iters",
           "lr_decay_iters", "max_iters", "beta1", "beta2", "grad_accum", "grad_clip", "eval_interval",
           "eval_iters", "vocab_size")
MODEL_FLAGS = ("n_layer", "n_head", "n_embd", "block_size", "dropout", "bias")
# what makes the run what it is: kept on --resume (max_iters and the eval cadence may change)
LM_RUN_FLAGS = (*MODEL_FLAGS, "vocab_size", "batch_size", "lr", "min_lr", "warmup_iters", "lr_decay_iters",
                "weight_decay", "beta1", "beta2", "grad_accum", "grad_clip", "seed", "precision")

_COMMON = {"lr": 1e-3, "min_lr": 1e-4, "warmup_iters": 100, "weight_decay": 0.1, "beta1": 0.9,
           "beta2": 0.99, "grad_accum": 1, "grad_clip": 1.0, "eval_interval": 250, "seed": 0, "bias": False}
_CUDA = {"n_layer": 6, "n_head": 6, "n_embd": 384, "block_size": 256, "batch_size": 64,
         "dropout": 0.2, "max_iters": 5000, "eval_iters": 200, "precision": "bf16"}
_CPU = {"n_layer": 4, "n_head": 4, "n_embd": 128, "block_size": 64, "batch_size": 12,
        "dropout": 0.0, "max_iters": 2000, "eval_iters": 20, "precision": "fp32"}


def defaults(dev):
    return {**_COMMON, **(_CUDA if device(dev).type == "cuda" else _CPU)}


def refuse_foreign_flags(args, language_model):
    """An image flag on a text run, or the reverse, would be silently ignored: refuse it."""
    foreign = IMAGE_ONLY if language_model else LM_ONLY
    for name in foreign:
        if getattr(args, name, None) is not None:
            kind = "image datasets (mnist, cifar10)" if language_model else "language models " \
                   "(shakespeare, tinystories, random-tokens)"
            raise UsageError(f"{flag(name)} is for {kind}, not {args.dataset}")
    if args.dataset == "shakespeare" and args.vocab_size is not None:
        raise UsageError("--vocab-size is for tinystories (BPE) and random-tokens; shakespeare's "
                         "vocabulary is its characters")
    if args.dataset == RANDOM_TOKENS and args.data_dir is not None:
        raise UsageError(f"--data-dir is for the corpora; {RANDOM_TOKENS} reads no data (its ids are "
                         f"drawn from --seed)")


def resolve_lm(args, world=1):
    """Fill the flags left out from the resumed run, else the --model preset's (for a run on
    `world` ranks), else the defaults; refuse contradictions and configs GPT can't build.
    Returns the checkpoint's training state, or None."""
    refuse_foreign_flags(args, True)
    check_model_flag(args)
    state = None
    if args.resume:
        state = read_train_state(args.resume, "--resume")
        # the flags as given (its config's vocab_size is the tokenizer's, not --vocab-size's)
        run, dataset = state["extra"].get("run", {}), recorded_run(state).get("dataset", "mnist")
        if dataset != args.dataset:
            raise UsageError(f"--resume {args.resume}: a {dataset} checkpoint, not {args.dataset}")
        check_config(args.resume, state, "--resume")
        keep_resumed_preset(args, run)
        for name in (*LM_RUN_FLAGS, "max_iters", "eval_interval", "eval_iters"):
            given, kept = getattr(args, name), run.get(name)
            if name == "grad_accum" and kept is None:
                kept = 1        # (a run recorded before the flag existed)
            if name == "lr_decay_iters" and kept in (None, run.get("max_iters")):
                kept = None     # the cosine followed --max-iters: a new total stretches it (as image runs do)
            elif name in LM_RUN_FLAGS and given is not None and given != kept:
                raise contradiction(name, given, kept, args.resume)
            if given is None:
                setattr(args, name, kept)
    for name, value in {**defaults(args.device), **preset_defaults(args, world)}.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.vocab_size is None:
        args.vocab_size = DEFAULT_VOCAB_SIZE.get(args.dataset)
    if args.lr_decay_iters is None:
        args.lr_decay_iters = args.max_iters
    if args.n_embd % args.n_head:
        raise UsageError(f"--n-embd {args.n_embd} must be a multiple of --n-head {args.n_head}")
    if args.min_lr > args.lr:
        raise UsageError(f"--min-lr {args.min_lr} is above --lr {args.lr}")
    if state is not None and args.max_iters < state["step"]:
        raise UsageError(f"--max-iters {args.max_iters} is fewer than the {state['step']} iterations "
                         f"{args.resume} has trained (--max-iters counts the run's total)")
    return state


def check_config(path, state, source):
    """Refuse a GPT config (of checkpoint `path`'s training state) that doesn't describe the
    weights saved with it, before anything is built: a damaged or edited state must not make the
    model whatever it says (n_layer 10**9 would allocate until killed). Reads only the header."""
    config = state["extra"]["config"]
    for name in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size"):
        if type(config.get(name)) is not int or config[name] <= 0:
            raise UsageError(f"{source} {path}: its config's {name} is {str(config.get(name))[:40]}, "
                             f"not a positive integer")
    if not (isinstance(config.get("dropout"), (int, float)) and 0 <= config["dropout"] < 1) \
            or type(config.get("bias")) is not bool:
        raise UsageError(f"{source} {path}: its config's dropout {str(config.get('dropout'))[:40]} or "
                         f"bias {str(config.get('bias'))[:40]} is not one a GPT takes")
    try:
        weights = checkpoint.weights_path(path, state.get("id"))
        shapes = {name: shape for name, (_, shape) in read_header(weights)[0].items()}
        wte, wpe = shapes["transformer.wte.weight"], shapes["transformer.wpe.weight"]
    except (SafetensorsError, KeyError) as e:
        raise UsageError(f"{source} {path}: its weights are not a GPT's ({type(e).__name__}: {e})") from None
    layers = {m.group(1) for m in map(re.compile(r"transformer\.h\.(\d+)\.").match, shapes) if m}
    found = {"vocab_size": wte[0], "n_embd": wte[1], "block_size": wpe[0], "n_layer": len(layers),
             "bias": any(name.endswith(".bias") for name in shapes)}
    for name, value in found.items():
        if config[name] != value:
            raise UsageError(f"{source} {path}: its config says {name} {config[name]}, its weights "
                             f"({weights}) {value}")
    if config["n_embd"] % config["n_head"]:
        raise UsageError(f"{source} {path}: its config's n_embd {config['n_embd']} is not a multiple "
                         f"of its n_head {config['n_head']}")


def gpt_config(args, vocab_size):
    """What build_gpt needs, saved in every checkpoint. vocab_size: the tokenizer's (for BPE and
    random tokens --vocab-size, for characters the corpus's count); the model's is that, or with
    --model gpt2 at least 50304 (lm_preset.model_vocab_size)."""
    return {"model": "gpt", "dataset": args.dataset, "vocab_size": model_vocab_size(args.model, vocab_size),
            **{name: getattr(args, name) for name in MODEL_FLAGS}}


def lm_run_record(args, data_dir):
    # ("preset", not "model": recorded_run lays the config, whose model is "gpt", over the run)
    return {**{name: getattr(args, name) for name in LM_RUN_FLAGS}, "preset": args.model,
            "max_iters": args.max_iters, "eval_interval": args.eval_interval,
            "eval_iters": args.eval_iters, "data_dir": str(data_dir)}


def build_gpt(config):
    from ..models.gpt import GPT, GPTConfig
    return GPT(GPTConfig(block_size=config["block_size"], vocab_size=config["vocab_size"],
                         n_layer=config["n_layer"], n_head=config["n_head"], n_embd=config["n_embd"],
                         dropout=config["dropout"], bias=config["bias"]))
