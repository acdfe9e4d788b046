"""Running a public PyTorch script in a process of its own, under real torch (`python SCRIPT`) or
under paragrad (`python -m paragrad run SCRIPT`), for the tests that compare the two runs."""
import os
import subprocess
import sys


def start(framework, args, cwd, env=None):
    """The script (args[0], then its arguments) started in cwd; env is added to the process's.
    One BLAS/OpenMP thread: on a small shared CPU both frameworks' thread pools only slow these
    small products down (torch's spin-waiting threads tenfold when the other core is busy)."""
    launcher = ["-m", "paragrad", "run"] if framework == "paragrad" else []
    return subprocess.Popen([sys.executable, *launcher, *map(str, args)], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})


def finish(framework, proc, timeout=300):
    """A started run's standard output, once it has exited successfully."""
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{framework}: {out[-2000:]}\n{err[-4000:]}"
    return out


def run(framework, args, cwd, env=None, timeout=300):
    """start, then finish."""
    return finish(framework, start(framework, args, cwd, env), timeout)
