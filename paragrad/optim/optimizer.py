"""Optimizer base: param groups, per-parameter state, zero_grad, state_dict/load_state_dict.

Updates run on the backend buffers directly (in place, no graph), through `_ops`: each line of
an update rule is one backend call writing into existing memory, so an update makes no Tensor
objects and as few temporaries as the rule needs.
"""
from __future__ import annotations

import copy

from .. import capture
from .. import dtypes as dt
from ..autograd import no_grad
from ..memory_format import laid_out, memory_order
from ..tensor import Tensor, _wrap, zero_grads


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class of the optimizers: param groups (add_param_group), per-parameter state,
    zero_grad, step, state_dict and load_state_dict; as torch.optim.Optimizer.
    load_state_dict checks the state's shapes when it loads (see there); torch's hook
    registration methods (register_step_pre_hook, ...) are not offered."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = {}
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors "
                            f"or dicts, but got {type(params).__name__}")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group):
        group = dict(group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for k, v in self.defaults.items():
            if v is required and k not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization "
                                 f"parameter {k}")
            group.setdefault(k, v)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def _scratch(self, p):
        """A reusable temporary buffer shaped like p (not part of the saved state)."""
        cache = self.__dict__.setdefault("_scratch_bufs", {})
        buf = cache.get(p)
        if buf is None or buf.shape != p._data.shape or buf.dtype != p._data.dtype:
            buf = cache[p] = p._backend.empty(tuple(p.shape), p.dtype, p.device.index)
        return buf

    def _lr_buffer(self, group, p):
        """The group's learning rate as a float64 0-d buffer on p's device, what fused updates
        read: a step captured by pg.jit follows later LR changes without re-capture (pg.jit
        calls sync_device_state() before each replay)."""
        bufs = self.__dict__.setdefault("_lr_bufs", {})
        entry = bufs.get(id(group))
        if entry is None or entry[1] != group["lr"]:
            if capture.active():
                raise RuntimeError(
                    f"{type(self).__name__}: the learning rate changed inside a function that "
                    f"pg.jit is capturing ({capture.active()}); host code there runs only once. Step "
                    f"LR schedulers outside the jitted function: the learning rate lives on the "
                    f"device, so changing it needs no re-capture.")
            capture.track(self)
            b, idx = p._backend, p.device.index
            new = b.full((), float(group["lr"]), dt.float64, idx)
            buf = new if entry is None else b.copy_(entry[0], new)     # in place: graphs read it
            entry = bufs[id(group)] = (buf, group["lr"], group)
        return entry[0]

    def sync_device_state(self):
        """Write learning rates changed on the host since the last step into their device buffers."""
        for buf, lr, group in list(self.__dict__.get("_lr_bufs", {}).values()):
            if group["lr"] != lr:
                self._lr_buffer(group, group["params"][0])

    def _new_state(self, p, what):
        """Optimizer state is created by an eager step: a capture would record its
        initialization and repeat it on every replay."""
        if capture.active():
            raise RuntimeError(
                f"{type(self).__name__}: {what} for a parameter of shape {tuple(p.shape)} would be "
                f"created inside a function that pg.jit is capturing ({capture.active()}); its first "
                f"(eager) call must already have given that parameter a gradient")

    def _check_implementation(self, foreach, fused, differentiable):
        name = type(self).__name__
        if foreach and fused:
            raise RuntimeError(f"{name}: `fused` and `foreach` cannot be `True` together.")
        if differentiable:
            raise RuntimeError(f"{name}: differentiable=True (autograd through the optimizer step) "
                               f"is not supported by paragrad")

    @staticmethod
    def _use_multi_tensor(group):
        """foreach=False asks for PyTorch's per-parameter loop; otherwise (None, foreach=True,
        fused=True) a group runs as one multi-tensor kernel where the backend has one — its
        results agree with the loop's bit for bit (tests/backends/cuda/test_backend.py) — and as the loop where
        not (the CPU backend has none)."""
        return group.get("foreach") is not False or bool(group.get("fused"))

    # GradScaler.step hands its found-inf flag (a float32 0-d tensor) to an optimizer that can
    # skip a step on the device, as the attribute `found_inf` for the duration of step() (torch's
    # fused path): the fused kernels then decide without a host read, so a scaled step can be
    # captured by pg.jit. Other optimizers get the step only when the scaler found no inf.
    _step_supports_amp_scaling = False

    def _found_inf_buffer(self):
        """The scaler's flag as a backend buffer for the fused kernels, or None."""
        flag = getattr(self, "found_inf", None)
        return None if flag is None else flag._data

    def _skipped_by_scaler(self):
        """Whether the scaler's flag says skip: the composed update's host read of it."""
        flag = getattr(self, "found_inf", None)
        if flag is None:
            return False
        if flag.device.type != "cpu":
            capture.forbid_sync(f"{type(self).__name__}'s unfused step under GradScaler (it reads "
                                f"the found-inf flag on the host)")
        return bool(flag._backend.to_numpy(flag._data))

    def zero_grad(self, set_to_none=True):
        zero_grads((p for g in self.param_groups for p in g["params"]), set_to_none)

    def step(self, closure=None):
        raise NotImplementedError(f"{type(self).__name__} must implement step()")

    def _groups_with_grads(self):
        """(group, parameters of it that have a gradient) for each group with any."""
        for g in self.param_groups:
            params = [p for p in g["params"] if p.grad is not None]
            if params:
                yield g, params

    def _closure(self, closure):
        if closure is None:
            return None
        from ..autograd import enable_grad
        with enable_grad():
            return closure()

    # ---- state ---------------------------------------------------------------------------------
    def state_dict(self):
        """{'state': {index: {name: value}}, 'param_groups': [{..., 'params': [index, ...]}]}, with
        parameters numbered in group order as PyTorch does; tensors are detached copies."""
        index = {}
        groups = []
        for g in self.param_groups:
            entry = {k: v for k, v in g.items() if k != "params"}
            entry["params"] = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                entry["params"].append(index[id(p)])
            groups.append(entry)
        state = {}
        for g in self.param_groups:
            for p in g["params"]:
                if p in self.state:
                    state[index[id(p)]] = {k: _copied(v) for k, v in self.state[p].items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load what state_dict() gave (parameters matched by their order in the groups).

        Differs from PyTorch: state tensors are checked here, so a bad file fails at load and
        not at a later step(): each (but the 0-d step counts) must have its parameter's shape,
        and state must belong to a parameter of the groups; else a ValueError names the
        parameter's index, its group and the shapes. Nothing changes when it raises."""
        name = type(self).__name__
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError(f"loaded state dict has a different number of parameter groups "
                             f"({len(groups)}; {name} has {len(self.param_groups)})")
        for gi, (mine, theirs) in enumerate(zip(self.param_groups, groups)):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError(f"loaded state dict contains a parameter group that doesn't match the "
                                 f"size of optimizer's group (group {gi}: {len(theirs['params'])} "
                                 f"parameters; {name} has {len(mine['params'])})")
        by_index = {}       # saved index -> (parameter, its group's number)
        for gi, (mine, theirs) in enumerate(zip(self.param_groups, groups)):
            for p, i in zip(mine["params"], theirs["params"]):
                by_index[i] = (p, gi)
        state = {}          # built whole before anything is replaced
        for i, st in state_dict["state"].items():
            if int(i) not in by_index:
                raise ValueError(f"{name}.load_state_dict: the state dict has state for parameter {i}, "
                                 f"which none of its parameter groups lists")
            p, gi = by_index[int(i)]
            for k, v in st.items():
                if isinstance(v, Tensor) and self._shaped_like_param(k) and v.shape != p.shape:
                    raise ValueError(f"{name}.load_state_dict: state '{k}' of parameter {i} (group {gi}) "
                                     f"has shape {tuple(v.shape)}, but the parameter has shape "
                                     f"{tuple(p.shape)}")
            state[p] = {k: _copied(v, self._state_device(k, p)) for k, v in st.items()}
        self.state = state
        for mine, theirs in zip(self.param_groups, groups):
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = v

    # per-parameter state that is a count, not shaped like the parameter
    _scalar_state = ("step", "mu_product")

    def _shaped_like_param(self, key):
        """Whether state `key` has its parameter's shape (what load_state_dict checks)."""
        return key not in self._scalar_state

    def _state_device(self, key, p):
        """Where a loaded state tensor lives: with its parameter (step counts too: SGD's and
        Adam's updates read them on the device)."""
        return p.device

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        return "\n".join(lines) + "\n)"


def _copied(value, device=None):
    """A state value copied for state_dict / load_state_dict: tensors cloned (moved to `device`
    if given), also inside lists and tuples (LBFGS keeps its history as lists of tensors, which
    later steps change in place); anything else copied shallowly."""
    if isinstance(value, Tensor):
        return (value if device is None else value.to(device=device)).clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(v, device) for v in value)
    return copy.copy(value)


def zeros_like_buf(p):
    """A zero-filled tensor shaped and laid out like parameter p (optimizer state; a
    channels-last weight's moments are channels-last, so a fused update walks all of them in
    one memory order)."""
    b = p._backend
    make = lambda shape: b.full(shape, 0, p.dtype, p.device.index)  # noqa: E731
    return _wrap(laid_out(make, p.shape, memory_order(p.shape, p.stride())), p.dtype, p.device)


class SingleTensorOptimizer(Optimizer):
    """Base of the optimizers written as PyTorch's single-tensor reference update, with Tensor
    ops on one parameter at a time (RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam); a
    subclass gives `_init_state(p, group)` and `_update(p, grad, state, group, step)`. Step
    counts are float32 tensors on the CPU (PyTorch's layout without capturable=True), so the
    bias corrections read them for free; the learning rate is a host number. Neither can
    change inside a CUDA graph, so these steps refuse capture by pg.jit (SGD, Adam and AdamW
    don't: their step counts and learning rate live on the device)."""

    @no_grad()
    def step(self, closure=None):
        if capture.active():
            raise RuntimeError(f"{type(self).__name__}.step can't be captured by pg.jit ({capture.active()}): "
                               f"it reads the learning rate and step counts on the host. Call it outside "
                               f"the jitted function, or use SGD, Adam or AdamW, whose steps can be captured")
        loss = self._closure(closure)
        for g, params in self._groups_with_grads():
            for p in params:
                st = self.state.get(p)
                if st is None:
                    st = self.state[p] = self._init_state(p, g)
                if not isinstance(st["step"], Tensor):          # a step count saved as a number
                    st["step"] = _cpu_step(st["step"])
                st["step"].add_(1)
                grad = -p.grad if g.get("maximize") else p.grad
                self._update(p, grad, st, g, st["step"].item())
        return loss

    @staticmethod
    def _weight_decay(p, grad, group):
        """L2 weight decay added to the gradient, or with decoupled_weight_decay, AdamW's
        shrink of the weights; -> the gradient to use."""
        wd = group["weight_decay"]
        if not wd:
            return grad
        if group.get("decoupled_weight_decay"):
            p.mul_(1 - group["lr"] * wd)
            return grad
        return grad.add(p, alpha=wd)

    def _state_device(self, key, p):
        return "cpu" if key in self._scalar_state else p.device      # (host-read scalars)

    def _init_state(self, p, group):
        raise NotImplementedError

    def _update(self, p, grad, state, group, step):
        raise NotImplementedError


def _cpu_step(n=0.0):
    """A step count as PyTorch keeps it: a float32 scalar tensor on the CPU."""
    from ..ops import tensor
    return tensor(float(n), dtype=dt.float32, device="cpu")


def check_hyper(name, *, nan_ok=False, **values):
    """torch's checks of an optimizer's hyper-parameters, in the order given: each value >= 0,
    betas each in [0, 1), rho in [0, 1]. Written as torch's `not 0.0 <= v`, so nan is refused
    and inf accepted; nan_ok=True is SGD's `v < 0.0`, which lets nan through (as torch's SGD)."""
    for key, v in values.items():
        if key == "betas":
            for i, b in enumerate(v):
                if not 0.0 <= b < 1.0:
                    raise ValueError(f"{name}: Invalid beta parameter at index {i}: {b}")
            continue
        bad = not 0.0 <= v <= 1.0 if key == "rho" else v < 0.0 if nan_ok else not 0.0 <= v
        if bad:
            label = {"lr": "learning rate", "eps": "epsilon value"}.get(key, f"{key} value")
            raise ValueError(f"{name}: Invalid {label}: {v}")
