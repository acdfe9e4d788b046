"""bench/gpt_kernels.py: the kernel table of the three frameworks on a tiny GPT (gpu), and a clear
refusal where there is no GPU."""
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpt_kernels.py"
TINY = ["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "16", "--batch-size", "2",
        "--steps", "2", "--top", "5"]


def _run(env=None):
    return subprocess.run([sys.executable, str(SCRIPT), *TINY], capture_output=True, text=True, timeout=600,
                          cwd=SCRIPT.parent, env=env)


@pytest.mark.gpu
def test_kernel_table_of_each_framework():
    proc = _run()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("paragrad", "torch eager", "torch.compile"):
        line = next(l for l in proc.stdout.splitlines() if l.startswith(f"== {name}: kernel time"))
        assert float(line.split("kernel time ")[1].split(" ms")[0]) > 0, line


def test_without_a_gpu_it_says_so():
    import os
    proc = _run(env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode != 0
    assert "needs a CUDA GPU" in proc.stderr, proc.stderr
