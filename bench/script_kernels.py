"""The GPU work of a script's training step, for either framework: every kernel, copy and
memset of steps [FROM, TO) recorded by the CUDA profiling interface (through PyTorch's
profiler, which records every kernel of the process, CuPy's too), counted per step by name, with
their device time. Says whether a step's gap between the frameworks is in how many launches it
makes or in the host time each launch costs.

    python bench/script_kernels.py torch|paragrad [--from 20] [--to 30] [--top 40]
                                   SCRIPT [script args...]

A step is one `Tensor.backward()` call, as in bench/script_steps.py; `paragrad` runs the script
as `paragrad run` does. Needs a CUDA machine with PyTorch installed (its profiler).
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import sys
import tempfile

from script_steps import step_window, stub_tensorboard

GPU_WORK = ("kernel", "gpu_memcpy", "gpu_memset")


class RealTorch:
    """PyTorch's profiler in a process whose `import torch` paragrad answers: the real modules
    are imported first and put back in sys.modules while the profiler starts and stops (it
    imports its own modules by name)."""

    def __init__(self):
        import torch
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]):      # its lazy imports, done now
            torch.zeros(1, device="cuda")
        self.profile, self.activity = profile, ProfilerActivity.CUDA
        self.modules = self._torch_modules()

    @staticmethod
    def _torch_modules():
        return {k: m for k, m in sys.modules.items() if k == "torch" or k.startswith("torch.")}

    def hide(self):
        for k in self.modules:
            del sys.modules[k]

    @contextlib.contextmanager
    def active(self):
        theirs = self._torch_modules()
        for k in theirs:
            del sys.modules[k]
        sys.modules.update(self.modules)
        try:
            yield
        finally:
            self.hide()
            sys.modules.update(theirs)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("framework", choices=("torch", "paragrad"))
    p.add_argument("--from", dest="first", type=int, default=20, help="first recorded step (default 20)")
    p.add_argument("--to", type=int, default=30, help="the step the recording stops at (default 30)")
    p.add_argument("--top", type=int, default=40, help="kernel names listed (default 40)")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    if not 0 < a.first < a.to:
        p.error(f"--from and --to must satisfy 0 < from < to, got {a.first} and {a.to}")
    real = RealTorch()
    if a.framework == "paragrad":
        real.hide()
        from paragrad.as_torch import install
        install()
    else:
        stub_tensorboard()
    import torch
    recording = []
    profiling = real.active if a.framework == "paragrad" else contextlib.nullcontext

    def begin():
        with profiling():
            recording.append(real.profile(activities=[real.activity]))
            recording[0].__enter__()

    def end():
        torch.cuda.synchronize()        # (every kernel of the window done before the recording stops)
        with profiling():
            recording[0].__exit__(None, None, None)

    seconds = step_window(torch, a.script, a.args, a.first, a.to, begin, end, torch.cuda.synchronize,
                          "script_kernels")
    print(render(a, recording[0], seconds))


def render(a, prof, seconds):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = [e for e in json.load(f)["traceEvents"] if e.get("cat") in GPU_WORK]
    steps = a.to - a.first
    count, busy = collections.Counter(), collections.Counter()
    for e in events:
        count[e["name"]] += 1
        busy[e["name"]] += e.get("dur", 0)
    lines = [f"{a.framework}: {a.script} {' '.join(a.args)}",
             f"steps {a.first}..{a.to - 1}: {seconds / steps * 1e3:.2f} ms a step (recorded), "
             f"{len(events) / steps:.1f} launches a step, device busy {sum(busy.values()) / steps / 1e3:.2f} ms a step",
             f"{'a step':>7s} {'us a step':>10s}  name"]
    for name, n in count.most_common(a.top):
        lines.append(f"{n / steps:7.1f} {busy[name] / steps:10.1f}  {name[:110]}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
