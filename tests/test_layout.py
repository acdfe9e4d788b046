"""scripts/check_layout.py on paragrad/: no file over 600 lines, no catch-all file names, no two
modules that import each other; and the checker itself on a small package made for the purpose."""
import importlib.util
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "check_layout.py"
_spec = importlib.util.spec_from_file_location("check_layout", _SCRIPT)
check_layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_layout)


def test_paragrad_layout():
    assert check_layout.check() == []


def test_checker_finds_each_kind(tmp_path):
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from . import a\n",
        "a.py": "def f():\n    from .sub import b\n",     # function-local, relative
        "sub/__init__.py": "from . import d\n",           # pairs with d
        "sub/b.py": "import pkg.a\n",                     # absolute: pairs with a
        "sub/c.py": "from . import d\n",                  # `from . import d`: the module d
        "sub/d.py": "from .. import sub\n",               # the package sub's __init__
        "sub/e.py": "from pkg.sub import c\n",            # c, no pair (c doesn't import e)
        "ops_extra.py": "",
        "misc.py": "",
        "long.py": "x = 1\n" * 601,
    }
    for name, text in files.items():
        (root / name).write_text(text)
    assert check_layout.check(root) == [
        "pkg/long.py: 601 lines (more than 600)",
        "pkg/misc.py: a catch-all name (_extra, _more, misc), not a concept",
        "pkg/ops_extra.py: a catch-all name (_extra, _more, misc), not a concept",
        "pkg.a and pkg.sub.b import each other",
        "pkg.sub and pkg.sub.d import each other",
    ]
    assert check_layout.strongly_connected(check_layout.import_graph(root)) == [
        ["pkg.a", "pkg.sub.b"], ["pkg.sub", "pkg.sub.d"]]
