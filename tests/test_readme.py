"""README.md stays true: its Python blocks run as written, and every command of its bash blocks
runs from the repository root, with what the comment just above a block asks for the test
(`<!-- test: with --epochs 1 --limit 2000; not run: pip, pytest -->`: the flags appended to each
`paragrad train` command, with a fresh --out so the test writes nothing into the checkout; the
commands, by first word, that can't run inside the suite: the install itself, the suite)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.data_paths import mnist_root

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
# a fenced block, with the `<!-- test: ... -->` comment that may stand just above it
BLOCK = re.compile(r'(?:<!-- test: ([^>]*?) -->\n)?^```(\w+)[ \t]*\n(.*?)^```', re.S | re.M)


def _blocks(lang):
    """(flags, commands not run, code) of each block in `lang`."""
    out = []
    for note, language, code in BLOCK.findall(README):
        if language != lang:
            continue
        parts = dict(p.strip().split(" ", 1) if " " in p.strip() else (p.strip(), "") for p in note.split(";") if p.strip())
        skipped = {w.strip() for w in parts.get("not", "").removeprefix("run:").split(",") if w.strip()}
        out.append((parts.get("with", ""), skipped, code))
    return out


def test_the_readme_has_its_three_commands():
    commands = [line.split(" #")[0].strip() for _, _, code in _blocks("bash") for line in code.splitlines()]
    for command in ('pip install -e ".[dev,mpi]"', "paragrad train mnist --data-dir ../shared/data", "pytest"):
        assert command in commands, command
    assert len(README.splitlines()) <= 150, "README.md is over 150 lines"


def test_the_readmes_python_runs():
    blocks = _blocks("python")
    assert blocks
    for _, _, code in blocks:
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, f"{code}\n{out.stdout}\n{out.stderr}"


def test_the_readmes_commands_run(tmp_path):
    bin_dir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               PARAGRAD_CACHE=str(tmp_path / "cache"))
    ran = []
    for flags, skipped, code in _blocks("bash"):
        for line in code.splitlines():
            command = line.split(" #")[0].strip()
            if not command or command.split()[0] in skipped:
                continue
            if command.startswith("paragrad train"):
                command += f" {flags} --out {tmp_path / f'run{len(ran)}'}"
            command = command.replace("../shared/data", str(mnist_root()))   # (where the data is here)
            out = subprocess.run(["bash", "-e", "-c", command], cwd=ROOT, capture_output=True, text=True,
                                 timeout=600, env=env)
            assert out.returncode == 0, f"{command}\n{out.stdout}\n{out.stderr}"
            ran.append(command)
    assert any(c.startswith("paragrad train mnist") for c in ran), ran
