"""Which paragrad module answers a torch module name.

Most torch paths are paragrad's with the first word changed (torch.nn.functional ->
paragrad.nn.functional). The tables hold the exceptions: where paragrad keeps a thing under
another name, the stubs `paragrad run` puts in place of logging modules and of torch.onnx
(importable, empty), and names whose paragrad
namesake means something else (paragrad.jit captures CUDA graphs; torch.jit is TorchScript), which
must fail as missing rather than answer with the wrong thing. torchvision is answered the same way,
by paragrad.vision (the part of it PyTorch's examples use).
"""
from __future__ import annotations

import importlib.util
import sys

_RENAMED = {
    "torch": "paragrad",
    "torch.utils.data": "paragrad.data",                    # paragrad.utils.data re-exports it
    "torch.utils.data.dataloader": "paragrad.data.loader",
    "torch.utils.data.dataset": "paragrad.data.dataset",
    "torch.utils.data.sampler": "paragrad.data.sampler",
    "torch.utils.data.distributed": "paragrad.data.sampler",  # DistributedSampler lives there
    "torch.utils.tensorboard": "paragrad.as_torch.tensorboard",
    "torch.utils.tensorboard.writer": "paragrad.as_torch.tensorboard",
    "torch.onnx": "paragrad.as_torch.onnx",
    "torch.serialization": "paragrad.io.serialization",       # torch.save / torch.load's module
    "torchvision": "paragrad.vision",
}
# torch.nn.modules.<file>.<Class> is torch.nn.<Class>. paragrad.nn.modules uses torch's file
# names, but a file may lack a class torch keeps there (or hold it elsewhere), so the package
# and each of its files are paragrad.nn, where every module class is
_FLATTENED = {"torch.nn.modules": "paragrad.nn"}
_NOT_THE_SAME = {"torch.jit"}

# the stubs, with the one line each prints on first import
STUBS = {
    "paragrad.as_torch.tensorboard":
        "paragrad run: torch.utils.tensorboard is not supported; SummaryWriter calls do nothing",
    "paragrad.as_torch.onnx": "paragrad run: torch.onnx is not supported; using any of it fails",
}


def is_torch_name(name: str) -> bool:
    """torch, torchvision and their submodules: the names paragrad run answers."""
    return name.partition(".")[0] in ("torch", "torchvision")


def paragrad_name(torch_name: str) -> str | None:
    """The paragrad module path for a torch one (None where the namesake differs); the longest
    entry of the table that is a prefix decides, so torch.utils.data.foo -> paragrad.data.foo."""
    if torch_name in _FLATTENED or torch_name.rpartition(".")[0] in _FLATTENED:
        return _FLATTENED.get(torch_name) or _FLATTENED[torch_name.rpartition(".")[0]]
    parts = torch_name.split(".")
    for cut in range(len(parts), 0, -1):
        head = ".".join(parts[:cut])
        if head in _NOT_THE_SAME:
            return None
        if head in _RENAMED:
            return ".".join([_RENAMED[head], *parts[cut:]])
    raise ValueError(f"{torch_name!r} is not a torch module name")


def paragrad_module_exists(torch_name: str) -> bool:
    """Whether paragrad has a module for this torch path (found without importing it)."""
    name = paragrad_name(torch_name)
    if name is None:
        return False
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):    # a parent that is a plain module, not a package
        return False


def is_renamed(torch_name: str) -> bool:
    """Whether the tables, not the attribute of the same name, say what this torch path is
    (torch.nn.modules.linear is paragrad.nn, whatever paragrad.nn.linear may be)."""
    return torch_name in _RENAMED or torch_name.rpartition(".")[0] in _FLATTENED


def means_another_thing(torch_name: str) -> bool:
    """torch.jit: paragrad has a jit, but not torch's (checked on every attribute a proxy is asked
    for, so a set lookup and no more; deeper names were checked when their parent was made)."""
    return torch_name in _NOT_THE_SAME


def missing(torch_name: str) -> str:
    return (f"paragrad has no {torch_name} (paragrad run maps torch to paragrad; docs/compatibility.md "
            f"lists what each namespace lacks)")
