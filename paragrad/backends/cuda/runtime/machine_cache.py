"""What one process learns about this machine's GPU and the next one reuses, under
$PARAGRAD_CACHE (default ~/.cache/paragrad):

- `kernels/`: the NVRTC kernels, compiled once per machine. CuPy keeps compiled modules on
  disk keyed by source, options, architecture and compiler version; `import paragrad` points
  it here unless the user set CUPY_CACHE_DIR (or imported CuPy first: then CuPy's own folder).
- `choices/<gpu>-<versions>.json`: timed choices (which cuBLASLt algorithm of a GEMM plan,
  small_gemm or cuBLASLt for an MLP chain), keyed by everything the choice depends on. A
  choice is timed once, read by later processes, and written back when the process exits
  (merged with what other processes wrote meanwhile).

Without the cache (a read-only home, a corrupt file) everything still works: choices are
then timed again in each process.
"""
from __future__ import annotations

import atexit
import json
import re
from pathlib import Path

import cupy

from ....io.atomic_write import atomic_write
from .. import cache_root


class Choices:
    """A persistent dict of timed choices for the current GPU and library versions."""

    def __init__(self):
        self._known, self._new, self._path = None, {}, None

    def _file(self):
        if self._path is None:
            props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
            name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
            import nvmath
            tag = (f"{name}-sm{props['major']}{props['minor']}-cuda{cupy.cuda.runtime.runtimeGetVersion()}"
                   f"-cupy{cupy.__version__}-nvmath{getattr(nvmath, '__version__', '')}")
            self._path = cache_root() / "choices" / (re.sub(r"[^A-Za-z0-9._-]+", "_", tag) + ".json")
        return self._path

    def _load(self):
        try:
            data = json.loads(self._file().read_text())
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def get(self, key: str):
        if self._known is None:
            self._known = self._load()
            atexit.register(self.save)
        return self._known.get(key)

    def put(self, key: str, value):
        self._known[key] = self._new[key] = value

    def save(self):
        """Write the choices made by this process, on top of the file's current content."""
        if not self._new:
            return
        try:
            merged = {**self._load(), **self._new}
            self._file().parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self._file(), [json.dumps(merged, indent=0, sort_keys=True).encode()])
            self._new = {}
        except OSError:
            pass        # a read-only cache: the next process times its choices again


choices = Choices()
