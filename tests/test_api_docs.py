"""help() as an API reference: help(paragrad) lists the public functions and classes, and the
entry points a new user reaches first have docstrings of their own."""
from __future__ import annotations

import inspect
import pydoc

import paragrad as pg
import paragrad.data as data
import paragrad.optim.lr_scheduler as lr_scheduler


def test_help_lists_the_public_functions_and_classes():
    text = pydoc.render_doc(pg, renderer=pydoc.plaintext)
    functions = text[text.index("\nFUNCTIONS\n"):text.index("\nDATA\n")]
    classes = text[text.index("\nCLASSES\n"):text.index("\nFUNCTIONS\n")]
    for name in ("cat", "zeros", "tensor", "randn", "matmul", "save", "load", "manual_seed", "no_grad"):
        assert f"\n    {name}(" in functions or f"\n    {name} = " in functions or f"class {name}" in classes, name
    for name in ("Tensor", "Generator", "jit"):
        assert f"class {name}" in classes, name
    assert "models" not in pg.__all__           # (imported on first use, not by `import *`)


def _own_doc(obj):
    return obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__


def test_the_first_entry_points_have_docstrings():
    named = [pg.jit, pg.nn.Module, pg.optim.SGD, pg.optim.Adam, pg.amp.GradScaler, pg.cuda.is_available,
             pg.Tensor, pg.data.DataLoader]
    named += [c for _, c in inspect.getmembers(lr_scheduler, inspect.isclass)
              if c.__module__.startswith("paragrad.") and not c.__name__.startswith("_")]
    named += [c for _, c in inspect.getmembers(data, inspect.isclass) if c.__module__.startswith("paragrad.")]
    missing = [getattr(o, "__qualname__", repr(o)) for o in named if not _own_doc(o)]
    assert not missing, f"no docstring of their own: {missing}"
