"""Checkpoints: model weights as safetensors, training state beside them, written atomically.

`save(path, model, optimizer, scheduler, step=, epoch=)` writes two files:
  path                        the model's state_dict as safetensors (loadable by the
                              `safetensors` package, and by name into the same PyTorch model)
  path + ".train.safetensors" optimizer tensors, with the optimizer's other state, the
                              scheduler, step, epoch and every RNG state as JSON metadata
Both carry one random checkpoint id; each is written to a temp file and renamed into place, so
a write killed midway leaves the previous checkpoint intact, and `load` refuses a mismatched
pair. Restoring everything makes a resumed run repeat the uninterrupted one exactly.
"""
from __future__ import annotations

import json
import os
import uuid

from ..random import _defaults, default_generator
from ..tensor import Tensor
from .safetensors import SafetensorsError, load_file, save_file

CheckpointError = SafetensorsError


def train_state_path(path):
    return os.fspath(path) + ".train.safetensors"


def _arrays(named):
    return {k: (t.detach().cpu().numpy(), t.dtype) for k, t in named.items()}


def save(path, model, optimizer=None, scheduler=None, step=0, epoch=0, extra=None, generators=()):
    """Write a checkpoint (see module doc). `generators` are extra Generators to restore (e.g.
    a DataLoader's), in order."""
    ckpt_id = uuid.uuid4().hex
    tensors, state = {}, {"step": step, "epoch": epoch, "extra": extra or {}, "id": ckpt_id}
    if optimizer is not None:
        sd = optimizer.state_dict()
        state["optimizer"] = {"param_groups": sd["param_groups"], "state": {}}
        for idx, entry in sd["state"].items():
            plain = {}
            for k, v in entry.items():
                if isinstance(v, Tensor):
                    tensors[f"optimizer.{idx}.{k}"] = v
                else:
                    plain[k] = v
            state["optimizer"]["state"][str(idx)] = plain
    if scheduler is not None:
        state["scheduler"] = {k: v for k, v in scheduler.state_dict().items() if not callable(v)}
    state["rng"] = {name: g.get_state() for name, g in _defaults.items()}
    state["generators"] = [g.get_state() for g in generators]
    save_file(_arrays(tensors), train_state_path(path), {"paragrad_train_state": json.dumps(state)})
    save_file(_arrays(model.state_dict()), path, {"format": "pt", "paragrad_checkpoint_id": ckpt_id,
                                                  "step": step, "epoch": epoch})


def load_weights(path):
    """The model tensors of a checkpoint (or of any safetensors file) as {name: Tensor}."""
    from ..ops.creation import from_numpy
    arrays, meta = load_file(path)
    return {k: from_numpy(a) for k, (a, _) in arrays.items()}, meta


def load(path, model, optimizer=None, scheduler=None, generators=(), strict=True):
    """Restore what `save` wrote into the given objects; returns {'step', 'epoch', 'extra'}."""
    weights, meta = load_weights(path)
    model.load_state_dict({k: v.to(next(iter(model.state_dict().values()), v).device)
                           for k, v in weights.items()}, strict=strict)
    tpath = train_state_path(path)
    if not os.path.exists(tpath):
        if optimizer is not None or scheduler is not None:
            raise CheckpointError(f"checkpoint {path}: its training state {tpath} is missing")
        return {"step": int(meta.get("step", 0)), "epoch": int(meta.get("epoch", 0)), "extra": {}}
    arrays, tmeta = load_file(tpath)
    try:
        state = json.loads(tmeta["paragrad_train_state"])
    except (KeyError, json.JSONDecodeError) as e:
        raise CheckpointError(f"checkpoint {tpath}: corrupt training state ({e})") from None
    if state.get("id") != meta.get("paragrad_checkpoint_id"):
        raise CheckpointError(f"checkpoint {path} and {tpath} come from different saves "
                              f"(a write was interrupted?)")
    if optimizer is not None:
        from ..ops.creation import from_numpy
        opt = state["optimizer"]
        sd_state = {}
        for idx, plain in opt["state"].items():
            entry = dict(plain)
            prefix = f"optimizer.{idx}."
            for name, (arr, _) in arrays.items():
                if name.startswith(prefix):
                    entry[name[len(prefix):]] = from_numpy(arr)
            sd_state[int(idx)] = entry
        groups = [{k: (tuple(v) if k == "betas" else v) for k, v in g.items()} for g in opt["param_groups"]]
        optimizer.load_state_dict({"state": sd_state, "param_groups": groups})
    if scheduler is not None and "scheduler" in state:
        scheduler.load_state_dict(state["scheduler"])
    for name, s in state.get("rng", {}).items():
        default_generator(name).set_state(s)
    for g, s in zip(generators, state.get("generators", [])):
        g.set_state(s)
    return {"step": state["step"], "epoch": state["epoch"], "extra": state["extra"]}
