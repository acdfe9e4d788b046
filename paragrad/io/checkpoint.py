"""Checkpoints: model weights as safetensors, training state beside them, written atomically.

`save(path, model, optimizer, scheduler, step=, epoch=)` writes two files:
  path                        the model's state_dict as safetensors (loadable by the
                              `safetensors` package, and by name into the same PyTorch model)
  path + ".train.safetensors" optimizer tensors, with the optimizer's other state, the
                              scheduler, step, epoch and every RNG state as JSON metadata
Both carry one random checkpoint id. Two files can't be renamed into place in one step, so a
save is ordered to leave a consistent pair at every moment a kill can strike:
  1. the new weights, complete, as path + ".pending" (written to a temp file and renamed);
  2. the new training state over the old one (the same way): the commit point;
  3. the pending weights renamed over path.
Before step 2 the previous pair is untouched; after it the training state names the new id,
whose weights are the pending file until step 3 moves them into place. `load` reads the weights
whose id the training state names, from path or else from the pending file, so a reader always
finds the previous checkpoint or the new one, never neither. Restoring everything makes a
resumed run repeat the uninterrupted one exactly.
"""
from __future__ import annotations

import json
import os
import uuid

from ..random import _defaults, default_generator
from ..tensor import Tensor
from .atomic_write import rename_into_place
from .safetensors import SafetensorsError, load_file, read_header, save_file

__all__ = ["save", "load", "load_weights", "saved_state", "train_state_path", "pending_path", "weights_path",
           "CheckpointError"]

CheckpointError = SafetensorsError      # (what a damaged or mismatched checkpoint raises)


def train_state_path(path):
    """The training-state file saved beside the weights at `path` (module doc)."""
    return os.fspath(path) + ".train.safetensors"


def pending_path(path):
    """Where a save puts the new weights until its training state is in place (module doc)."""
    return os.fspath(path) + ".pending"


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
    # the order is what makes a kill at any moment leave a consistent pair (module doc)
    save_file(_arrays(model.state_dict()), pending_path(path),
              {"format": "pt", "paragrad_checkpoint_id": ckpt_id, "step": step, "epoch": epoch})
    save_file(_arrays(tensors), train_state_path(path),
              {"paragrad_train_state": json.dumps(state)})
    rename_into_place(pending_path(path), path)


def weights_path(path, ckpt_id):
    """The file holding the weights of checkpoint `ckpt_id`: path, or its pending file when a
    save was stopped between its last two steps (module doc)."""
    for candidate in (os.fspath(path), pending_path(path)):
        if os.path.isfile(candidate) and _id(candidate) == ckpt_id:
            return candidate
    raise CheckpointError(f"checkpoint {path} and {train_state_path(path)} come from different saves "
                          f"(the weights of save {ckpt_id} are in neither {path} nor "
                          f"{pending_path(path)})")


def _id(path):
    try:
        return read_header(path)[1].get("paragrad_checkpoint_id")
    except SafetensorsError:        # a damaged file holds no checkpoint's weights
        return None


def load_weights(path):
    """The model tensors of a checkpoint (or of any safetensors file) as {name: Tensor}."""
    from ..ops.creation import from_numpy
    arrays, meta = load_file(path)
    return {k: from_numpy(a) for k, (a, _) in arrays.items()}, meta


def load(path, model, optimizer=None, scheduler=None, generators=(), strict=True):
    """Restore what `save` wrote into the given objects; returns {'step', 'epoch', 'extra'}."""
    tpath = train_state_path(path)
    if not os.path.exists(tpath):
        if optimizer is not None or scheduler is not None:
            raise CheckpointError(f"checkpoint {path}: its training state {tpath} is missing")
        weights, meta = load_weights(path)
        _load_model(model, weights, strict)
        return {"step": int(meta.get("step", 0)), "epoch": int(meta.get("epoch", 0)), "extra": {}}
    state = saved_state(path)      # (the header first: a corrupt state fails before the arrays load)
    arrays, _ = load_file(tpath)
    weights, _ = load_weights(weights_path(path, state.get("id")))
    _load_model(model, weights, strict)
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


def saved_state(path):
    """The JSON state of checkpoint `path` (step, epoch, extra, ...), from its training state
    file's header alone: the optimizer's tensors are not read."""
    tpath = train_state_path(path)
    _, meta = read_header(tpath)
    try:
        state = json.loads(meta["paragrad_train_state"])
    except (KeyError, json.JSONDecodeError) as e:
        raise CheckpointError(f"checkpoint {tpath}: corrupt training state ({e})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint {tpath}: corrupt training state (not a JSON object)")
    return state


def _load_model(model, weights, strict):
    device = next(iter(model.state_dict().values()), None)
    model.load_state_dict({k: v.to(device.device) if device is not None else v for k, v in weights.items()},
                          strict=strict)
