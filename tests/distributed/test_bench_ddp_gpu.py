"""bench/ddp_gpu.py's CPU smoke test end to end (paragrad on 1 and 2 mpi ranks beside PyTorch
DDP on gloo, the GPT model only, to stay short), so that the multi-GPU bench reaches a GPU
machine working: rank launch, the same initial weights in both frameworks, the tables, the
targets' lines and the JSON."""
import json
import subprocess
import sys

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
