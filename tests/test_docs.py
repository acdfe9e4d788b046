"""The documentation site: it builds with `mkdocs build --strict` (broken links, missing pages
and unresolved API references fail), and every Python block of its pages runs as written."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if "reference" not in p.parts)
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def test_the_site_builds_strictly(tmp_path):
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "site" / "tutorials" / "training-loop" / "index.html").exists()


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT / "docs")) for p in PAGES])
def test_a_pages_python_blocks_run_as_written(page):
    """The page's blocks in order, in one fresh interpreter (a later block uses what an earlier
    one defined), from the repository root, as a reader would paste them."""
    code = "\n".join(BLOCK.findall(page.read_text()))
    if not code:
        return                  # (a page without Python: nothing to run)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{page.name}:\n{out.stdout}\n{out.stderr}"
