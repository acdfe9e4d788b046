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
TUTORIALS = [p for p in PAGES if "tutorials" in p.parts]
# a fenced block: its language, its title (```python title="fit.py"), its code
BLOCK = re.compile(r'^```(\w+)(?:[ \t]+title="([^"]+)")?[ \t]*\n(.*?)^```', re.S | re.M)


def test_the_site_builds_strictly(tmp_path):
    # (not -q: a quiet build doesn't count the warnings of mkdocstrings' cross-references)
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "site" / "tutorials" / "training-loop" / "index.html").exists()
    cli = (tmp_path / "site" / "cli" / "index.html").read_text()
    for text in ("paragrad train", "--data-dir", "paragrad launch", "paragrad run"):   # (made from the parsers)
        assert text in cli, text
    compatibility = (tmp_path / "site" / "compatibility" / "index.html").read_text()
    assert "Answered by <code>paragrad.nn.functional</code>" in compatibility    # (torch is in the dev extra)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT / "docs")) for p in PAGES])
def test_a_pages_code_runs_as_written(page, tmp_path):
    """A page's blocks as a reader would use them, in order: a block titled with a file name is
    that file (written to a fresh folder); the untitled Python blocks run together in one fresh
    interpreter from the repository root (a later block uses what an earlier one defined); a
    tutorial's bash blocks run in the folder of its files (a page's install commands, outside
    the tutorials, are not run)."""
    blocks = BLOCK.findall(page.read_text())
    for _, title, code in blocks:
        if title:
            (tmp_path / title).write_text(code)
    python = "\n".join(code for lang, title, code in blocks if lang == "python" and not title)
    if python:
        _check(subprocess.run([sys.executable, "-c", python], cwd=ROOT, capture_output=True, text=True,
                              timeout=600), page)
    if page in TUTORIALS:
        for lang, title, code in blocks:
            if lang == "bash" and not title:
                _check(subprocess.run(["bash", "-e", "-c", _with_python(code)], cwd=tmp_path, capture_output=True,
                                      text=True, timeout=600, env=_reader_env()), page)


def _reader_env():
    """A reader's environment: PARAGRAD_DATA names the data folder (a page's scripts run in a
    folder of their own, where the checkout's ../shared/data isn't)."""
    from tests.data_paths import mnist_root
    return dict(os.environ, PARAGRAD_DATA=os.environ.get("PARAGRAD_DATA") or str(mnist_root()))


def _with_python(script):
    """A bash block run by this interpreter's environment (its `paragrad` and `python`)."""
    bin_dir = os.path.dirname(sys.executable)
    return f'export PATH="{bin_dir}:$PATH"\n{script}'


def _check(out, page):
    assert out.returncode == 0, f"{page.name}:\n{out.stdout}\n{out.stderr}"
