"""Module: the base class of layers and models, with PyTorch's registration rules.

Assigning a Parameter to an attribute registers it, assigning a Module registers a child, and
`register_buffer` adds non-learnable state (saved in state_dict unless persistent=False).
"""
from __future__ import annotations

from collections import OrderedDict, namedtuple

from ..autograd import is_grad_enabled, no_grad
from .hooks import wrap_inputs, wrap_outputs
from ..tensor import Tensor, zero_grads
from .parameter import Parameter
from ..memory_format import preserve_format

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class _Handle:
    def __init__(self, store, key):
        self._store, self._key = store, key

    def remove(self):
        self._store.pop(self._key, None)


_EXTRA = "_extra_state"     # the state_dict key of a module's get_extra_state()


class Module:
    """The base class of every layer, as torch.nn.Module: assigning a Parameter, a buffer
    (register_buffer) or a Module as an attribute registers it, so parameters(), named_modules(),
    state_dict() / load_state_dict(), to(device or dtype), train() / eval(), zero_grad() and
    apply() walk the tree; calling the module runs forward() between its forward pre-hooks and
    hooks (register_forward_hook, register_full_backward_hook, ...)."""
    training: bool

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_backward_hooks", OrderedDict())
        object.__setattr__(self, "_backward_pre_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required "
                                  f"\"forward\" function")

    def __call__(self, *args, **kwargs):
        d = self.__dict__       # (the hook-free path is every layer's, so it is spelled out)
        if not (d["_forward_pre_hooks"] or d["_forward_hooks"] or d.get("_backward_hooks")
                or d.get("_backward_pre_hooks")):
            return self.forward(*args, **kwargs)
        for hook in list(self._forward_pre_hooks.values()):
            r = hook(self, args)
            if r is not None:
                args = r if isinstance(r, tuple) else (r,)
        call = None
        if self._has_backward_hooks() and is_grad_enabled():
            call, args = wrap_inputs(self, args)
        out = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            r = hook(self, args, out)
            if r is not None:
                out = r
        return out if call is None else wrap_outputs(call, out)

    def _has_backward_hooks(self):
        d = self.__dict__       # (modules unpickled from before backward hooks have neither dict)
        return bool(d.get("_backward_hooks") or d.get("_backward_pre_hooks"))

    def _has_hooks(self):
        return bool(self._forward_pre_hooks or self._forward_hooks) or self._has_backward_hooks()

    def register_forward_hook(self, hook):
        return self._add_hook("_forward_hooks", hook)

    def register_forward_pre_hook(self, hook):
        return self._add_hook("_forward_pre_hooks", hook)

    def register_full_backward_hook(self, hook):
        """hook(module, grad_input, grad_output) -> None or a new grad_input, once the gradients
        w.r.t. this call's inputs are computed (see hooks.py)."""
        return self._add_hook("_backward_hooks", hook)

    def register_full_backward_pre_hook(self, hook):
        """hook(module, grad_output) -> None or a new grad_output, before the gradients w.r.t.
        the inputs are computed."""
        return self._add_hook("_backward_pre_hooks", hook)

    def _add_hook(self, store, hook):
        hooks = self.__dict__.setdefault(store, OrderedDict())
        key = object()
        hooks[key] = hook
        return _Handle(hooks, key)

    # ---- attribute registration ------------------------------------------------------------
    def __setattr__(self, name, value):
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError(f"cannot assign '{name}' before Module.__init__() call")
        params, modules, buffers = d["_parameters"], d["_modules"], d["_buffers"]
        if isinstance(value, Parameter):
            self._drop(name, keep=params)
            params[name] = value
        elif isinstance(value, Module):
            self._drop(name, keep=modules)
            modules[name] = value
        elif name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                f"(paragrad.nn.Parameter or None expected)")
            params[name] = None
        elif name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                f"(paragrad.nn.Module or None expected)")
            modules[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(paragrad.Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _drop(self, name, keep=None):
        """Forget `name` everywhere except in `keep`, the store about to be written (so that a
        reassigned parameter, buffer or child keeps its place in the order, as in PyTorch)."""
        for store in (self.__dict__, self._parameters, self._modules, self._buffers):
            if store is not keep:
                store.pop(name, None)
        self._non_persistent.discard(name)

    def _check_new_name(self, name, store, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name or not name:
            raise KeyError(f"{kind} name can't contain \".\" or be empty, got {name!r}")
        if name not in store and (name in self.__dict__ or hasattr(type(self), name)
                                  or any(name in s for s in (self._parameters, self._buffers,
                                                              self._modules))):
            raise KeyError(f"attribute '{name}' already exists")

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        if name in self._parameters or name in self._buffers or name in self._modules:
            self._drop(name)
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def register_parameter(self, name, param):
        self._check_new_name(name, self._parameters, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            f"(paragrad.nn.Parameter or None required)")
        self._drop(name, keep=self._parameters)
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        self._check_new_name(name, self._buffers, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            f"(paragrad.Tensor or None required)")
        self._drop(name, keep=self._buffers)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_new_name(name, self._modules, "module")
        self._drop(name, keep=self._modules)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        mod = self
        for part in target.split(".") if target else []:
            if part not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{part}`")
            mod = mod._modules[part]
        return mod

    def get_parameter(self, target):
        return self._get_member(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target):
        return self._get_member(target, "_buffers", "a buffer")

    def _get_member(self, target, store, what):
        mod_path, _, name = target.rpartition(".")
        members = getattr(self.get_submodule(mod_path), store)
        if name not in members:
            raise AttributeError(f"`{name}` is not {what}")
        return members[name]

    def set_submodule(self, target, module, strict=False):
        """Put `module` at the dotted path `target` (its parent must exist; with strict, so
        must a submodule of that name)."""
        if not target:
            raise ValueError("Cannot set the submodule without a target name!")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and name not in parent._modules:
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        setattr(parent, name, module)

    def get_extra_state(self):
        """State beyond parameters and buffers for state_dict: override it together with
        set_extra_state, and state_dict gains a '_extra_state' entry for this module."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    def _has_extra_state(self):
        return type(self).get_extra_state is not Module.get_extra_state

    # ---- traversal -------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        memo = set() if memo is None else memo
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and m not in seen:
                seen.add(m)
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, store, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for mprefix, m in mods:
            for name, v in getattr(m, store).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield mprefix + ("." if mprefix else "") + name, v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- modes and conversions -------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        zero_grads(self.parameters(), set_to_none)

    def _apply(self, fn):
        """Convert every parameter and buffer with fn(tensor) -> tensor, keeping the Parameter
        objects (so optimizers that hold them stay valid)."""
        for m in self.modules():
            for name, p in m._parameters.items():
                if p is None:
                    continue
                with no_grad():
                    new = fn(p)
                if new is not p:
                    p.data = new
                if p.grad is not None:
                    with no_grad():
                        g = fn(p.grad)
                    p.grad = g
            for name, b in m._buffers.items():
                if b is not None:
                    m._buffers[name] = fn(b)
        return self

    def to(self, *args, **kwargs):
        """module.to(device), .to(dtype), .to(device, dtype), .to(memory_format=...); only
        floating-point parameters and buffers change dtype, and only 4-D and 5-D ones change
        memory format, as in PyTorch."""
        from ..backends import device as Device
        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        fmt = kwargs.get("memory_format", preserve_format)
        for a in args:
            if isinstance(a, (str, Device)):
                device = a
            elif isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            else:
                dtype = a

        def convert(t):
            d = dtype if (dtype is not None and t.dtype.is_floating_point) else None
            return t.to(device=device, dtype=d,
                        memory_format=fmt if t.ndim in (4, 5) else preserve_format)
        return self._apply(convert)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)

    def float(self):
        return self._apply(lambda t: t.float() if t.dtype.is_floating_point else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.dtype.is_floating_point else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.dtype.is_floating_point else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.dtype.is_floating_point else t)

    # ---- state -------------------------------------------------------------------------------
    def _state_entries(self, prefix=""):
        """(key, owning module, attribute name, tensor) for every state_dict entry, in order."""
        for name, p in self._parameters.items():
            if p is not None:
                yield prefix + name, self, name, p
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                yield prefix + name, self, name, b
        if self._has_extra_state():
            yield prefix + _EXTRA, self, _EXTRA, None
        for name, m in self._modules.items():
            if m is not None:
                yield from m._state_entries(prefix + name + ".")

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        out = OrderedDict() if destination is None else destination
        for key, mod, name, t in self._state_entries(prefix):
            out[key] = mod.get_extra_state() if name == _EXTRA else t if keep_vars else t.detach()
        return out

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy tensors into parameters and buffers by name (with assign, make the given tensors
        the parameters and buffers instead, as PyTorch). With strict, missing or unexpected keys
        raise; shape mismatches always raise. Unlike PyTorch, a load that raises has changed
        nothing (PyTorch copies the good entries before raising)."""
        entries = {key: (mod, name, t) for key, mod, name, t in self._state_entries()}
        for k, v in state_dict.items():     # a lazy module's parameters take the loaded shapes
            own = entries.get(k, (None, None, None))[2]
            if callable(getattr(own, "materialize", None)) and isinstance(v, Tensor):
                own.materialize(tuple(v.shape))
        missing = [k for k in entries if k not in state_dict]
        unexpected = [k for k in state_dict if k not in entries]
        errors = []
        if strict and (missing or unexpected):
            if missing:
                errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
        for k, v in state_dict.items():
            if k in entries and entries[k][1] != _EXTRA:
                own = entries[k][2]
                if not isinstance(v, Tensor):
                    errors.append(f'While copying the parameter named "{k}", expected a Tensor, '
                                  f'got {type(v).__name__}.')
                elif tuple(v.shape) != tuple(own.shape):
                    errors.append(f"size mismatch for {k}: copying a param with shape {tuple(v.shape)} "
                                  f"from checkpoint, the shape in current model is {tuple(own.shape)}.")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        with no_grad():
            for k, v in state_dict.items():
                if k not in entries:
                    continue
                mod, name, own = entries[k]
                if name == _EXTRA:
                    mod.set_extra_state(v)
                elif not assign:
                    own.copy_(v)
                elif isinstance(own, Parameter):
                    if not isinstance(v, Parameter):
                        v = Parameter(v, requires_grad=own.requires_grad)
                    else:
                        v.requires_grad_(own.requires_grad)
                    mod._parameters[name] = v
                else:
                    mod._buffers[name] = v
        return _IncompatibleKeys(missing, unexpected)

    # ---- printing ------------------------------------------------------------------------------
    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {sub}")
        head = type(self).__name__ + "("
        if not lines:
            return head + ")"
        if len(lines) == 1 and not self._modules:
            return head + lines[0] + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"


def untouched(*modules_and_classes):
    """Whether each (module, cls) pair's module is a cls itself (not replaced, not a subclass)
    with no hook. A model that runs such modules' work as one fused op, without calling them,
    does so only then; else it calls them one by one, so replacements and hooks take effect."""
    return all(type(m) is cls and not m._has_hooks() for m, cls in modules_and_classes)
