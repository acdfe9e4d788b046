"""Containers (PyTorch's torch/nn/modules/container.py): Sequential, ModuleList, ModuleDict,
ParameterList and ParameterDict."""
from __future__ import annotations

from collections import OrderedDict

from ...tensor import Tensor
from ..module import Module
from ..parameter import Parameter
from .sequential_fusion import fused_forward


class _ModuleSequence(Module):
    """What Sequential and ModuleList share: modules named "0", "1", ... in order."""

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def _renumber(self, mods):
        """Rename the modules 0..n-1 in this order, as PyTorch does after a deletion or an
        insertion (so that a later append can't clash with an existing name)."""
        self._modules.clear()
        self._modules.update((str(i), m) for i, m in enumerate(mods))


class Sequential(_ModuleSequence):
    """Modules applied in order; `Sequential(a, b)` or `Sequential(OrderedDict(name=module))`.
    Runs of Linear [ReLU | GELU('tanh')] modules are run as fused ops unless
    fuse_linear_chains is False (sequential_fusion.py says which runs, and when)."""

    fuse_linear_chains = True

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, x):
        mods = list(self._modules.values())
        if self.fuse_linear_chains:
            return fused_forward(mods, x)
        for m in mods:
            x = m(x)
        return x

    def __getitem__(self, idx):
        mods = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(mods[idx]))
        return mods[_index(idx, len(mods), "Sequential")][1]

    def __setitem__(self, idx, module):
        name = list(self._modules)[_index(idx, len(self._modules), "Sequential")]
        self.add_module(name, module)

    def __delitem__(self, idx):
        names = list(self._modules)
        for name in (names[idx] if isinstance(idx, slice) else [names[_index(idx, len(names), "Sequential")]]):
            del self._modules[name]
        self._renumber(list(self._modules.values()))

    def insert(self, index, module):
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Sequential.insert: index {index} is out of range (length {n})")
        mods = list(self._modules.values())
        mods.insert(index if index >= 0 else index + n, module)
        self._renumber(mods)
        return self

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return self.extend(list(other))


def _index(idx, n, cls):
    if not -n <= idx < n:
        raise IndexError(f"{cls}: index {idx} is out of range (length {n})")
    return idx % n


class ModuleList(_ModuleSequence):
    """Submodules held in a list, registered as "0", "1", ... (indexing, slicing, append, extend,
    insert, pop, +); as torch.nn.ModuleList. It has no forward."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __repr__(self):
        """As torch's: runs of consecutive children with the same repr print once, as
        `(0-5): 6 x Layer(...)`."""
        if not self._modules:
            return type(self).__name__ + "()"
        runs = []                                   # [first index, last index, repr]
        for i, m in enumerate(self._modules.values()):
            r = repr(m)
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = [(f"({a}): " if a == b else f"({a}-{b}): {b - a + 1} x ") + r.replace("\n", "\n  ")
                 for a, b, r in runs]
        return type(self).__name__ + "(\n  " + "\n  ".join(lines) + "\n)"

    def __getitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(mods[idx])
        return mods[_index(idx, len(mods), "ModuleList")]

    def __setitem__(self, idx, module):
        self.add_module(str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx):
        mods = list(self._modules.values())
        del mods[idx]
        self._renumber(mods)

    __iadd__ = _ModuleSequence.extend

    def __add__(self, other):
        return ModuleList(list(self) + list(other))

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._renumber(mods)


class _Registry(Module):
    """The dict interface ModuleDict and ParameterDict share, over one of Module's registries
    (_modules or _parameters: the attribute named by `_registry`)."""
    _registry = None

    def _items(self):
        return self.__dict__[self._registry]

    def __getitem__(self, key):
        return self._items()[key]

    def __delitem__(self, key):
        del self._items()[key]

    def __len__(self):
        return len(self._items())

    def __iter__(self):
        return iter(self._items())

    def __contains__(self, key):
        return key in self._items()

    def keys(self):
        return self._items().keys()

    def values(self):
        return self._items().values()

    def items(self):
        return self._items().items()

    def pop(self, key):
        return self._items().pop(key)

    def get(self, key, default=None):
        return self._items().get(key, default)

    def clear(self):
        self._items().clear()


class ModuleDict(_Registry):
    """Submodules held by name, with a dict's interface (keys, values, items, update, pop, ...);
    as torch.nn.ModuleDict. It has no forward."""
    _registry = "_modules"

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self.add_module(k, m)


class ParameterList(Module):
    """Parameters held in a list, registered as "0", "1", ... (tensors are wrapped as Parameters)."""

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def _as_param(self, value):
        return value if isinstance(value, Parameter) or not isinstance(value, Tensor) else Parameter(value)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __getitem__(self, idx):
        values = list(self._parameters.values())
        if isinstance(idx, slice):
            return ParameterList(values[idx])
        return values[_index(idx, len(values), "ParameterList")]

    def __setitem__(self, idx, value):
        self.register_parameter(str(_index(idx, len(self), "ParameterList")), self._as_param(value))

    def append(self, value):
        self.register_parameter(str(len(self)), self._as_param(value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def __iadd__(self, values):
        return self.extend(values)

    def extra_repr(self):
        return "\n".join(f"  ({i}): {_describe_parameter(p)}" for i, p in enumerate(self))


class ParameterDict(_Registry):
    """Parameters held by name (tensors are wrapped as Parameters)."""
    _registry = "_parameters"

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __setitem__(self, key, value):
        self.register_parameter(key, ParameterList._as_param(self, value))

    def update(self, parameters):
        """Add or replace; a plain dict's keys go in sorted order, an OrderedDict's, a
        ParameterDict's or a list of pairs' in theirs (as PyTorch)."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            items = parameters.items()
        elif isinstance(parameters, dict):
            items = sorted(parameters.items())
        else:
            items = parameters
        for k, v in items:
            self[k] = v

    def extra_repr(self):
        return "\n".join(f"  ({k}): {_describe_parameter(p)}" for k, p in self.items())


def _describe_parameter(p):
    """PyTorch's one-line description of a parameter in a ParameterList/Dict repr."""
    return f"Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}]"
