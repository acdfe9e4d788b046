"""bench/scripts.py end to end on the CPU, on its shortest script: one column per
--paragrad-env setting beside torch's, each setting reaching paragrad's process (one that
stops Python from starting fails that column alone, naming it), and the JSON rows; and
bench/script_calls.py's count of a step's backend calls and their host time; bench/op_overhead.py's
--rounds; on the GPU, bench/script_kernels.py's count of a step's kernels."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench_modules import load_bench

REPO = Path(__file__).resolve().parents[2]


def _run(tmp_path, *settings):
    out = tmp_path / "scripts.json"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "scripts.py"), "--only", "regression",
                           "--steps", "5", "--repeats", "1", "--json", str(out), "--paragrad-env", *settings],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    return proc, (json.loads(out.read_text())["rows"] if out.exists() else None)


def test_one_column_per_setting(tmp_path):
    proc, rows = _run(tmp_path, "PARAGRAD_LAZY=0", "PARAGRAD_LAZY=1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "paragrad PARAGRAD_LAZY=0 / torch step time: median" in proc.stdout, proc.stdout
    assert "paragrad PARAGRAD_LAZY=1 / torch step time: median" in proc.stdout, proc.stdout
    (row,) = rows
    assert set(row["variants"]) == {"paragrad PARAGRAD_LAZY=0", "paragrad PARAGRAD_LAZY=1"}
    assert all(v["ms"] > 0 for v in row["variants"].values()) and row["torch_ms"] > 0
    assert row["paragrad_ms"] == row["variants"]["paragrad PARAGRAD_LAZY=0"]["ms"]


def test_a_setting_reaches_paragrads_process(tmp_path):
    proc, rows = _run(tmp_path, "PYTHONHASHSEED=bad")      # Python refuses to start with it
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "paragrad PYTHONHASHSEED=bad: paragrad failed" in proc.stdout, proc.stdout
    assert rows[0]["variants"]["paragrad PYTHONHASHSEED=bad"]["ms"] is None and rows[0]["torch_ms"] > 0


def test_a_setting_without_a_value_is_refused(tmp_path):
    proc, _ = _run(tmp_path, "PARAGRAD_LAZY")
    assert proc.returncode == 2 and "--paragrad-env takes KEY=VALUE settings" in proc.stderr


def test_script_calls_counts_a_steps_backend_calls(tmp_path):
    """bench/script_calls.py: the calls of the profiled steps only, per step, with the
    elementwise calls fed by elementwise results, and the profile."""
    out = tmp_path / "calls.txt"
    script = REPO / "bench" / "third_party" / "regression" / "main.py"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "script_calls.py"), "--from", "2", "--to", "4",
                           "--out", str(out), str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = out.read_text()
    assert "steps   : 2..3 on cpu" in text and "Ordered by: cumulative time" in text, text
    rows = {line.split()[-1]: float(line.split()[0]) for line in text.splitlines()
            if line[:8].strip().replace(".", "").isdigit()}
    assert rows.get("matmul", 0) >= 1 and rows.get("binary:sub", 0) >= 1, rows   # a Linear's product, the loss
    bad = subprocess.run([sys.executable, str(REPO / "bench" / "script_calls.py"), "--from", "3", "--to", "3",
                          str(script)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "0 < from < to" in bad.stderr


def test_op_overhead_rounds_keep_each_frameworks_fastest_alternating():
    bench = load_bench("op_overhead")
    calls = []
    a_times, b_times = iter([5.0, 3.0, 4.0]), iter([2.0, 9.0, 1.0])

    def a():
        calls.append("a")
        return next(a_times)

    def b():
        calls.append("b")
        return next(b_times)
    assert bench.best_of_rounds(3, a, b) == (3.0, 1.0)
    assert calls == ["a", "b", "b", "a", "a", "b"]
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "op_overhead.py"), "--rounds", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--rounds must be at least 1" in proc.stderr


def test_script_calls_host_time_splits_a_step_between_the_backend_and_the_layers_above(tmp_path):
    """--host-time: no profile, the backend's host time a step (in total and per method) and
    the rest of the step's time, per backend call."""
    script = REPO / "bench" / "third_party" / "regression" / "main.py"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "script_calls.py"), "--host-time", "--from", "2",
                           "--to", "6", str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    assert "Ordered by" not in text and "host time a step: backend" in text, text
    line = next(x for x in text.splitlines() if x.startswith("host time a step"))
    backend_ms, above_ms = [float(w) for w in line.replace(",", " ").split() if w.replace(".", "").isdigit()][:2]
    assert backend_ms > 0 and above_ms > 0, line
    matmul = next(x for x in text.splitlines() if x.endswith(" matmul")).split()
    assert float(matmul[0]) >= 1 and float(matmul[2]) > 0 and float(matmul[3]) > 0, matmul  # calls, us, ms


@pytest.mark.gpu
def test_script_kernels_counts_a_steps_gpu_launches_for_both_frameworks(tmp_path):
    """bench/script_kernels.py on the GPU: torch's and paragrad's kernels of makemore's bigram
    steps, counted per step by the CUDA profiling interface."""
    makemore = REPO / "bench" / "third_party" / "makemore"
    for framework in ("torch", "paragrad"):
        proc = subprocess.run([sys.executable, str(REPO / "bench" / "script_kernels.py"), framework, "--from", "3",
                               "--to", "6", str(makemore / "makemore.py"), "-i", str(makemore / "names.txt"),
                               "-o", str(tmp_path), "--type", "bigram", "--num-workers", "0", "--max-steps", "10",
                               "--device", "cuda"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        line = next(x for x in proc.stdout.splitlines() if x.startswith("steps 3..5"))
        assert float(line.split(", ")[1].split()[0]) > 3, line      # launches a step (a GEMM, a loss, its backward...)


def test_nanogpt_bench_trains_both_frameworks_and_samples(tmp_path):
    """bench/nanogpt.py on a tiny model: a row per framework with its best val loss and median
    iteration time (the same weights' loss at the start: both near ln 65), the ratio, and
    sample.py's text from paragrad's checkpoint."""
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "nanogpt.py"), "--device", "cpu", "--compile", "False",
                           "--max-iters", "12", "--", "--eval_interval=6", "--eval_iters=2", "--block_size=16",
                           "--batch_size=4", "--n_layer=1", "--n_head=2", "--n_embd=16", "--log_interval=1",
                           "--dropout=0.0", "--dtype=float32", "--warmup_iters=0"], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()
            if line.split()[:2] in (["torch", "False"], ["paragrad", "False"])}
    assert set(rows) == {"torch", "paragrad"}, proc.stdout
    for fields in rows.values():
        assert 3.0 < float(fields[2]) < 4.5 and float(fields[3]) > 0, proc.stdout     # ln 65 = 4.17
    assert float(rows["paragrad"][4]) > 0, proc.stdout
    assert "sample.py on paragrad's checkpoint (--compile=False):" in proc.stdout, proc.stdout
    assert "Loading meta from data/shakespeare_char/meta.pkl" in proc.stdout, proc.stdout


def test_nanogpt_bench_leaves_evaluation_iterations_out_of_the_time():
    nanogpt = load_bench("nanogpt")
    out = "\n".join(["step 0: train loss 4.2000, val loss 4.1900", "iter 0: loss 4.2, time 900.00ms, mfu -100.00%",
                     "iter 10: loss 3.1, time 8.00ms, mfu 1.00%", "iter 20: loss 2.9, time 300.00ms, mfu 1.00%",
                     "step 20: train loss 2.8000, val loss 2.8500", "iter 30: loss 2.7, time 9.00ms, mfu 1.00%",
                     "iter 40: loss 2.6, time 500.00ms, mfu 1.00%", "iter 50: loss 2.6, time 10.00ms, mfu 1.00%"])
    assert nanogpt.summary(out, 20) == (2.85, 9.0)
    assert nanogpt.eval_interval(["--eval_interval=7", "--x=1"]) == 7 and nanogpt.eval_interval([]) == 250
