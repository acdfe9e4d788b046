"""Timed choices (cuBLASLt algorithms, small_gemm or cuBLASLt per MLP chain) and compiled
kernels are kept per machine under $PARAGRAD_CACHE: a second process times nothing."""
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

STEP = """
import sys
import paragrad as pg
from paragrad.backends.cuda.runtime import timing
if sys.argv[1] == "cached":
    def refuse(*args, **kwargs):
        raise AssertionError("timed a choice the machine cache holds")
    timing.gpu_time = refuse
model = pg.nn.Sequential(pg.nn.Linear(64, 32), pg.nn.ReLU(), pg.nn.Linear(32, 10)).to("cuda")
model(pg.randn(16, 64, device="cuda")).sum().backward()
pg.cuda.synchronize()
"""


def test_a_second_process_reuses_the_timed_choices_and_kernels(tmp_path):
    env = {**os.environ, "PARAGRAD_CACHE": str(tmp_path)}
    env.pop("CUPY_CACHE_DIR", None)
    for run in ("fresh", "cached"):
        r = subprocess.run([sys.executable, "-c", STEP, run], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert list((tmp_path / "choices").glob("*.json")), "no choices were written"
        assert any((tmp_path / "kernels").iterdir()), "no kernels were cached"
