"""TorchModule: what a script holds as `torch`, `torch.nn`, ...: a module object that reads and
writes through to the paragrad module it stands for.

A plain alias (sys.modules['torch'] = paragrad) would work for what paragrad has, but a missing
name would fail as "module 'paragrad' has no attribute 'foo'", which doesn't say which torch API
the script wanted. Writes go through too, so `torch.backends.cudnn.benchmark = True` sets
paragrad's switch instead of a copy that nothing reads.
"""
from __future__ import annotations

import importlib
import types

from .names import is_renamed, means_another_thing, missing, paragrad_module_exists


class TorchModule(types.ModuleType):
    """The torch module `name`, answered by the paragrad module `target`.

    Every one is a package (an empty __path__): then `from torch.nn.functional import foo` asks the
    finder for torch.nn.functional.foo when the attribute is missing, and the finder's error names
    the torch API; for a plain module Python would replace it with its generic "cannot import name".
    """

    def __init__(self, name, target):
        super().__init__(name, target.__doc__)
        self.__dict__["_target"] = target
        self.__dict__["__path__"] = []
        self.__dict__["_cached"] = set()        # names __getattr__ copied from the target

    def __getattr__(self, name):        # only for what the proxy itself doesn't hold
        target = self.__dict__["_target"]
        if name == "__all__":       # `from torch import *`: the target's public names, less
            # its modules and the names that mean another thing in torch (paragrad's jit)
            names = getattr(target, "__all__", None) or [n for n in vars(target) if not n.startswith("_")]
            return [n for n in names if not isinstance(getattr(target, n, None), types.ModuleType)
                    and not means_another_thing(f"{self.__name__}.{n}")]
        torch_name = f"{self.__name__}.{name}"
        if means_another_thing(torch_name):
            raise AttributeError(missing(torch_name), name=name, obj=self)
        value = getattr(target, name, _MISSING)
        # submodules come back as TorchModules too (torch.nn.functional, not paragrad.nn.functional),
        # and one paragrad keeps under another name (torch.utils.data.dataloader) is found by the finder
        if value is _MISSING or isinstance(value, types.ModuleType) or is_renamed(torch_name):
            if not name.startswith("__") and paragrad_module_exists(torch_name):
                return importlib.import_module(torch_name)
        if value is _MISSING:
            raise AttributeError(missing(torch_name), name=name, obj=self)
        if not isinstance(value, _SETTINGS):    # functions, classes, dtypes don't change:
            self.__dict__[name] = value         # later reads are dict hits (2.5 us a read here)
            self.__dict__["_cached"].add(name)
        return value

    def __setattr__(self, name, value):
        # the import system keeps its bookkeeping (__spec__, __loader__, ...) and the submodules
        # it binds here; a script's assignments are paragrad's
        if (name.startswith("__") and name.endswith("__")) or isinstance(value, TorchModule):
            self.__dict__[name] = value
        else:
            self._forget(name)                  # a read cached by __getattr__ would hide it
            setattr(self.__dict__["_target"], name, value)

    def __delattr__(self, name):
        if name in self.__dict__ and name not in self.__dict__["_cached"]:
            del self.__dict__[name]
        else:
            self._forget(name)
            delattr(self.__dict__["_target"], name)

    def _forget(self, name):
        if name in self.__dict__["_cached"]:
            self.__dict__["_cached"].discard(name)
            del self.__dict__[name]

    def __dir__(self):
        return sorted(set(dir(self.__dict__["_target"])) | set(self.__dict__) - {"_target", "_cached"})

    def __repr__(self):
        return f"<module {self.__name__!r} (paragrad run: {self.__dict__['_target'].__name__})>"


_MISSING = object()
# plain values a script may set on a module (torch.backends.cudnn.benchmark = True): read through
_SETTINGS = (bool, int, float, str, bytes, list, dict, set, tuple, type(None))
