"""bench/ddp_gpu.py's CPU smoke test end to end (paragrad on 1 and 2 mpi ranks beside PyTorch
DDP on gloo, the GPT model only, to stay short), so that the multi-GPU bench reaches a GPU
machine working: rank launch, the same initial weights in both frameworks, the tables, the
targets' lines and the JSON."""
import json
import subprocess
import sys

import pytest

from tests.bench_modules import load_bench
from tests.distributed.launch_ranks import REPO


def test_ddp_gpu_bench_cpu_smoke(tmp_path):
    out = tmp_path / "ddp_gpu.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "ddp_gpu.py"), "--device", "cpu", "--models", "gpt",
                           "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "failed" not in proc.stdout and "WARNING" not in proc.stdout, proc.stdout
    assert "target gpt: paragrad scaling efficiency at 2 GPUs >= 90%" in proc.stdout, proc.stdout
    rows = json.loads(out.read_text())["rows"]
    assert {(r["framework"], r["gpus"]) for r in rows} == {(f, n) for f in ("paragrad", "torch") for n in (1, 2)}
    assert all(r["rate"] > 0 for r in rows), rows
    assert len({round(r["first_loss"], 5) for r in rows}) == 1, rows    # the same start everywhere
    two = next(r for r in rows if r["framework"] == "paragrad" and r["gpus"] == 2)["bytes_per_step"]
    # LocalSGD N=10 and DiLoCo H=50 send about DDP's bytes once per 10 and 50 steps
    assert 8 < two["DDP"] / two["LocalSGD N=10"] < 12 and 40 < two["DDP"] / two["DiLoCo H=50"] < 60, two


def test_gpt2_bench_cpu_smoke(tmp_path):
    """bench/gpt2.py: GPT-2's shape of model (vocabulary 50304, no biases) through ddp_gpu.py's
    machinery, its MFU line (no peak known for a CPU)."""
    out = tmp_path / "gpt2.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "gpt2.py"), "--device", "cpu", "--frameworks", "torch",
                           "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "failed" not in proc.stdout and "WARNING" not in proc.stdout, proc.stdout
    assert "MFU (1,622,112 parameters without the position embedding; no known peak for cpu" in proc.stdout, \
        proc.stdout
    rows = json.loads(out.read_text())["rows"]
    assert {(r["model"], r["framework"], r["gpus"]) for r in rows} == {("gpt2", f, n) for f in ("paragrad", "torch")
                                                                       for n in (1, 2)}
    losses = {round(r["first_loss"], 5) for r in rows}
    assert len(losses) == 1 and abs(losses.pop() - 10.826) < 0.1, rows     # ln 50304 from random weights


def test_mfu_counts_flops_as_nanogpt():
    ddp_gpu = load_bench("ddp_gpu")
    # nanoGPT's estimate_mfu for GPT-2 124M (85.0M + 38.6M embedding = 123.6M parameters
    # without wpe): 6 N + 12 L C T FLOPs a token
    params = 123_587_328
    per_token = 6 * params + 12 * 12 * 768 * 1024
    rate = 400_000
    assert ddp_gpu.mfu("gpt2", "cuda", params, rate, 1, "NVIDIA H100 80GB HBM3") == pytest.approx(
        per_token * rate / 989.4e12)
    assert ddp_gpu.mfu("gpt2", "cuda", params, 2 * rate, 2, "NVIDIA H200") == pytest.approx(per_token * rate / 989.4e12)
    assert ddp_gpu.mfu("gpt2", "cuda", params, rate, 1, "NVIDIA H100 PCIe") is None
    assert ddp_gpu.mfu("gpt2", "cuda", params, None, 1, "NVIDIA H100 80GB HBM3") is None
