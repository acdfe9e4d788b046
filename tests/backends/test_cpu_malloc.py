"""The CPU backend tunes glibc's malloc once (backends/cpu_malloc.py), unless told not to."""
import platform
import subprocess
import sys

import paragrad  # noqa: F401  (the CPU backend is made on import)
from paragrad.backends import cpu_malloc

_PROBE = ("import paragrad, paragrad.backends.cpu_malloc as m; paragrad.zeros(1); "
          "print(m._state['tuned'])")


def test_tuned_where_the_c_library_is_glibc():
    assert cpu_malloc.tune() is (platform.libc_ver()[0] == "glibc")


def test_system_leaves_glibc_alone():
    env = {"PARAGRAD_CPU_MALLOC": "system", "PATH": ""}
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
