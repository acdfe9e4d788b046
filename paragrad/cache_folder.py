"""Where paragrad keeps what a process learns for the next one: $PARAGRAD_CACHE, else
~/.cache/paragrad. The CUDA backend keeps its compiled kernels and timed choices there, the
language-model data its token files (each in a subfolder of its own)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    env = os.environ.get("PARAGRAD_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "paragrad"
