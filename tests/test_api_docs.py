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


# ---- the site's API reference (docs/hooks/api_reference.py) -------------------------------
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

_DOCS = Path(__file__).resolve().parent.parent / "docs"
sys.path.insert(0, str(_DOCS / "hooks"))
import api_reference  # noqa: E402


def test_every_public_name_has_a_docstring_of_its_own():
    missing = [f"{module}.{name}" for module in api_reference.MODULES
               for name, obj in api_reference.public_names(module) if not (api_reference.own_docstring(obj) or "").strip()]
    assert not missing, f"{len(missing)} public names without a docstring of their own: {missing}"


def test_every_public_name_appears_in_the_reference():
    """Each module has a reference page with its marker, and the marker's entries name every
    public function and class of that module (what the strict build then renders)."""
    pages = {p: p.read_text() for p in (_DOCS / "reference").glob("*.md")}
    for module in api_reference.MODULES:
        page = next((p for p, text in pages.items() if f"<!-- api: {module} -->" in text), None)
        assert page is not None, f"no reference page holds <!-- api: {module} -->"
        text = api_reference.entries(module)
        absent = [name for name, _ in api_reference.public_names(module) if f"::: {module}.{name}\n" not in text]
        assert not absent, f"{module}: {absent}"


def test_public_names_leave_out_private_names_imports_and_values():
    names = dict(api_reference.public_names("paragrad.io.checkpoint"))
    assert "save" in names and "Tensor" not in names          # (__all__: not what it imported)
    names = dict(api_reference.public_names("paragrad.optim.lr_scheduler"))
    assert "StepLR" in names and "Counter" not in names       # (no __all__: paragrad's own only)
    names = dict(api_reference.public_names("paragrad"))
    assert "float32" not in names and "nn" not in names and "cat" in names
