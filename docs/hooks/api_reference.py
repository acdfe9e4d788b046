"""MkDocs hook: a reference page's `<!-- api: paragrad.nn -->` marker becomes one mkdocstrings
entry (`::: paragrad.nn.Linear`) for every public function and class of that module, grouped
by the file that defines it, so a new public name can't be missing from the reference.
tests/test_api_docs.py uses `public_names` to require a docstring of each name's own."""
from __future__ import annotations

import importlib
import inspect
import re
import types

MODULES = ("paragrad", "paragrad.nn", "paragrad.nn.functional", "paragrad.optim", "paragrad.optim.lr_scheduler",
           "paragrad.amp", "paragrad.data", "paragrad.distributed", "paragrad.models", "paragrad.text",
           "paragrad.io.serialization", "paragrad.io.checkpoint", "paragrad.io.safetensors")
MARKER = re.compile(r"<!-- api: ([\w.]+) -->")
# the heading of a group: the defining module's package under paragrad (ops.elementwise -> Elementwise)
_GROUPS = {"ops.creation": "Creating tensors", "ops.elementwise": "Elementwise math",
           "ops.reduce": "Reductions and sorting", "ops.movement": "Shapes, views and copies",
           "ops.indexing": "Indexing", "ops.linalg": "Linear algebra", "ops.neural": "Neural-network ops",
           "ops.windows": "Window functions", "ops.properties": "Properties", "ops.inplace": "In-place ops",
           "random": "Random numbers", "autograd": "Autograd", "dtypes": "Dtypes", "nn.modules": "Modules",
           "nn.functional": "Functions", "amp": "Mixed precision"}


def public_names(module_name):
    """(name, object) for the public functions and classes of a module: its __all__, else every
    name without a leading underscore that paragrad defines (not what it imported from the
    standard library); submodules and plain values (dtypes, constants) left out."""
    module = importlib.import_module(module_name)
    listed = getattr(module, "__all__", None)
    out = []
    for name in listed or [n for n in dir(module) if not n.startswith("_")]:
        obj = getattr(module, name, None)
        if not callable(obj) or isinstance(obj, types.ModuleType):
            continue
        if listed or (getattr(obj, "__module__", None) or "").startswith("paragrad"):
            out.append((name, obj))
    return out


def own_docstring(obj):
    """A class's docstring written in its own body (not inherited), a function's docstring."""
    return obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)


def entries(module_name):
    """The page text a marker becomes: headed groups of `::: module.name` entries."""
    groups = {}
    for name, obj in public_names(module_name):
        groups.setdefault(_group(obj), []).append(name)
    parts = []
    for heading in sorted(groups, key=lambda h: (h == "Other", h)):
        if len(groups) > 1:
            parts.append(f"## {heading}")
        for name in sorted(groups[heading], key=str.lower):
            parts.append(f"::: {module_name}.{name}\n    options:\n      members: false\n      heading_level: 3")
    return "\n\n".join(parts)


def _group(obj):
    where = (getattr(obj, "__module__", None) or "").removeprefix("paragrad.")
    for prefix, heading in _GROUPS.items():
        if where == prefix or where.startswith(prefix + "."):
            return heading
    return "Other"


def on_page_markdown(markdown, page, config, files):
    return MARKER.sub(lambda m: entries(m.group(1)), markdown)
