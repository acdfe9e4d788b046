"""What a training run is (model, optimizer, schedule, data) and how it is recorded in its
checkpoints, so that `--resume` continues the same run and `evaluate` finds its data.

Flags left out take the resumed run's values, then the dataset's defaults; a flag given with a
value that contradicts the checkpoint is refused, since the checkpoint's state (its optimizer's
moments, its scheduler, its data order) would otherwise silently win over what was asked.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..io import checkpoint
from ..data.download import data_root
from ..io.safetensors import SafetensorsError
from .arguments import UsageError
from .precision import default_precision

# which models each dataset can train; the first is the default
MODELS = {"mnist": ("mlp", "cnn"), "cifar10": ("resnet18",)}
DATASET_NAMES = {"mnist": "MNIST", "cifar10": "CIFAR-10"}
KNOWN_DATASETS = (*MODELS, "shakespeare", "tinystories", "random-tokens")
# flags that make a run what it is; a resumed run keeps them (None for limits means "all")
RUN_FLAGS = ("model", "hidden", "optimizer", "lr", "weight_decay", "schedule", "batch_size", "seed",
             "limit", "test_limit", "precision")


def flag(name):
    return "--" + name.replace("_", "-")


def _show(value):
    if value is None:
        return "all"
    if isinstance(value, bool):         # a switch: --diloco on / off
        return "on" if value else "off"
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def contradiction(name, given, kept, resume):
    """The refusal of flag `name` given as `given` when the run being resumed has `kept`."""
    return UsageError(f"{flag(name)} {_show(given)} differs from the run being resumed ({resume} was "
                      f"trained with {flag(name)} {_show(kept)}); leave {flag(name)} out to continue "
                      f"that run, or start a new run without --resume")


def read_train_state(path, source):
    """The training state `paragrad train` saved beside checkpoint `path`, checked enough to
    rebuild the run. `source` says where the path came from ('--resume', 'checkpoint')."""
    tpath = checkpoint.train_state_path(path)
    if not os.path.isfile(path) and not os.path.isfile(tpath):
        raise UsageError(f"{source} {path}: no such checkpoint file")
    if not os.path.isfile(tpath):
        raise UsageError(f"{source} {path}: its training state {tpath} is missing (paragrad train "
                         f"writes it beside each checkpoint)")
    try:
        state = checkpoint.saved_state(path)
        config = state["extra"]["config"]
        if not isinstance(config, dict) or "model" not in config:
            raise KeyError("extra.config.model")
    except SafetensorsError as e:
        raise UsageError(f"{source} {path}: {e}") from None
    except (KeyError, TypeError) as e:
        raise UsageError(f"{source} {path}: {tpath} is not a paragrad training state "
                         f"({type(e).__name__}: {e})") from None
    for name in ("step", "epoch"):
        if type(state.get(name)) is not int or state[name] < 0:
            raise UsageError(f"{source} {path}: {tpath} records {name} {state.get(name)!r}, not a "
                             f"count (a damaged training state)")
    dataset = config.get("dataset", "mnist")
    if dataset not in KNOWN_DATASETS:
        raise UsageError(f"{source} {path}: its config names dataset {str(dataset)[:40]!r}, which "
                         f"paragrad doesn't train ({', '.join(KNOWN_DATASETS)})")
    return state


def recorded_run(state):
    """The run's settings as recorded: the flags, and the model config (what its weights are
    built from, so it wins; checkpoints written before the flags were recorded have only it).
    Runs recorded before --precision existed trained in float32."""
    return {"precision": "fp32", **state["extra"].get("run", {}), **state["extra"]["config"]}


def _model_defaults(dataset, model):
    cifar = dataset == "cifar10"
    return {"hidden": [256, 128] if model == "mlp" else None,
            "epochs": 5 if model == "cnn" else 3,      # the CNN needs 4-5 epochs to pass 99 %
            "optimizer": "sgd" if cifar else "adam", "batch_size": 64, "schedule": "cosine", "seed": 0,
            "weight_decay": 5e-4 if cifar else 0.0, "limit": None, "test_limit": None}


def resolve(args):
    """Fill the flags left out (None) from the resumed run, else the defaults; refuse flags that
    contradict the checkpoint. Returns the checkpoint's training state, or None."""
    state = run = None
    given = {name: getattr(args, name) for name in RUN_FLAGS}
    if args.resume:
        state = read_train_state(args.resume, "--resume")
        run = recorded_run(state)
        if run.get("dataset", "mnist") != args.dataset:
            raise UsageError(f"--resume {args.resume}: a {run.get('dataset', 'mnist')} checkpoint, "
                             f"not {args.dataset}")
        for name in RUN_FLAGS:
            if name not in run:
                continue
            if given[name] is not None and given[name] != run[name]:
                raise contradiction(name, given[name], run[name], args.resume)
            setattr(args, name, run[name])
    if args.model is None:
        args.model = MODELS[args.dataset][0]
    if args.model not in MODELS[args.dataset]:
        preset = " (gpt2 is the language models' preset: shakespeare, tinystories, random-tokens)" \
            if args.model == "gpt2" else ""
        raise UsageError(f"--model {args.model} does not train on {args.dataset}; {args.dataset} "
                         f"models: {', '.join(MODELS[args.dataset])}{preset}")
    if args.hidden is not None and args.model != "mlp":
        raise UsageError(f"--hidden sets the layers of --model mlp, not {args.model}")
    defaults = _model_defaults(args.dataset, args.model)
    for name, value in defaults.items():
        if getattr(args, name) is None and name != "epochs":
            setattr(args, name, value)
    if args.precision is None:
        args.precision = default_precision(args.device, args.model)
    if args.lr is None:
        args.lr = 0.1 if args.dataset == "cifar10" and args.optimizer == "sgd" else 1e-3
    if args.epochs is None:
        args.epochs = run.get("epochs", max(defaults["epochs"], state["epoch"])) if run else defaults["epochs"]
    if state is not None and args.epochs < state["epoch"]:
        raise UsageError(f"--epochs {args.epochs} is fewer than the {state['epoch']} epochs "
                         f"{args.resume} has trained (--epochs counts the run's total epochs)")
    return state


def model_config(args):
    """What build_model needs, saved in every checkpoint."""
    config = {"model": args.model, "dataset": args.dataset}
    if args.model == "mlp":
        config.update(hidden=list(args.hidden), activation="relu")
    elif args.model == "resnet18":
        config.update(num_classes=10, stem="cifar")
    return config


def run_record(args, data_folder):
    """The flags a resumed run keeps, its total epochs, and where its data came from."""
    return {**{name: getattr(args, name) for name in RUN_FLAGS if name != "model"},
            "epochs": args.epochs, "data_dir": str(data_folder)}


def data_folder(explicit, recorded=None):
    """Where the datasets are: --data-dir, else $PARAGRAD_DATA, else the folder the checkpoint
    recorded, else ~/.cache/paragrad. An explicit --data-dir must exist (a typo must not turn
    into a download into a new folder)."""
    if explicit is not None:
        folder = Path(explicit).expanduser()
        if not folder.is_dir():
            raise UsageError(f"--data-dir {explicit}: no such folder")
        return folder.resolve()
    if not os.environ.get("PARAGRAD_DATA") and recorded:
        return Path(recorded)
    return data_root(None).resolve()
