"""The sys.meta_path finder that answers `import torch` and `import torch.X.Y` with paragrad.

It sits first on sys.meta_path, so no torch installed beside paragrad is ever found. A torch
module paragrad lacks fails at the import, naming it; nothing stands in for it.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

from .module import TorchModule
from .names import STUBS, is_torch_name, missing, paragrad_module_exists, paragrad_name


class TorchFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):

    def find_spec(self, fullname, path=None, target=None):
        if not is_torch_name(fullname):
            return None
        if not paragrad_module_exists(fullname):
            # not ModuleNotFoundError(name=fullname): `from torch import foo` would swallow that
            # one and say only "cannot import name 'foo' from 'torch'"
            raise ModuleNotFoundError(missing(fullname))
        return importlib.util.spec_from_loader(fullname, self, is_package=True)

    def create_module(self, spec):
        name = paragrad_name(spec.name)
        first = name not in sys.modules
        target = importlib.import_module(name)
        if first and name in STUBS:
            print(STUBS[name], file=sys.stderr)
        return TorchModule(spec.name, target)

    def exec_module(self, module):
        pass        # the paragrad module it stands for ran when it was imported


class RealTorchImported(RuntimeError):
    """torch itself is loaded already: its tensors and paragrad's can't be told apart by name."""


def install():
    """Answer `import torch` with paragrad from now on, in this process (idempotent)."""
    present = sys.modules.get("torch")
    if present is not None and not isinstance(present, TorchModule):
        where = getattr(present, "__file__", None) or "an unknown location"
        raise RealTorchImported(f"torch is already imported in this process (from {where}); "
                                f"paragrad run can map torch to paragrad only before that")
    if not any(isinstance(f, TorchFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, TorchFinder())
