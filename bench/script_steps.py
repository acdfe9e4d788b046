"""Run a PyTorch training script for a fixed number of training steps and time each step:
the helper process bench/scripts.py starts for every run.

    python bench/script_steps.py torch|paragrad STEPS RESULT.json SCRIPT [script args...]

`paragrad` runs the script as `paragrad run` does (torch names resolve to paragrad), `torch`
with real PyTorch. A training step is one `Tensor.backward()` call, the one thing every
training script does once a step: each call's start is time-stamped on the host, and the call
after the STEPS-th stops the script. On a GPU the window from the first to the last step is
also timed between two device synchronizations (host timestamps alone would time how fast
the host queues work); it opens after the first fifth of the steps. RESULT.json gets the step
intervals (seconds), that window, the steps run and the loss of the last step, read once at
the end.
"""
from __future__ import annotations

import importlib
import json
import os
import runpy
import sys
import time


class Enough(BaseException):
    """Raised inside the backward call that ends the run (a BaseException, so that the
    script's own `except Exception` doesn't swallow it)."""


def run_script(script, args):
    """Run script as `python script args...` would, until it ends or raises Enough."""
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except Enough:      # the planned end
        pass


def step_window(torch, script, args, first, to, begin, end, sync, tool):
    """Run script (under `torch`, real or paragrad's) until its to-th backward call: sync()
    then begin() at the first-th, end() then sync() at the to-th, where the script stops.
    -> the seconds between, or exit naming `tool` if the script ran fewer steps."""
    seen, window = [0], {}
    backward = torch.Tensor.backward

    def windowed_backward(self, *a, **kw):
        seen[0] += 1
        if seen[0] == first:
            sync()
            begin()
            window["start"] = time.perf_counter()
        if seen[0] == to:
            end()
            sync()
            window["seconds"] = time.perf_counter() - window["start"]
            raise Enough
        return backward(self, *a, **kw)

    torch.Tensor.backward = windowed_backward
    run_script(script, args)
    if "seconds" not in window:
        sys.exit(f"{tool}: the script ran {seen[0]} steps, fewer than --to {to}")
    return window["seconds"]


def stub_tensorboard():
    """Real torch gets the do-nothing SummaryWriter that `paragrad run` gives: logging costs
    neither framework anything (and the tensorboard package need not be installed)."""
    sys.modules["torch.utils.tensorboard"] = importlib.import_module("paragrad.as_torch.tensorboard")


def main():
    framework, steps, result_path, script, *script_args = sys.argv[1:]
    steps = int(steps)
    if framework == "paragrad":
        from paragrad.as_torch import install
        install()               # (its torch.utils.tensorboard does nothing)
    else:
        stub_tensorboard()
    import torch

    starts, losses = [], []
    window = {}

    def synchronize():
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    backward = torch.Tensor.backward

    warm = max(1, steps // 5)      # steps before the synchronized window opens

    def timed_backward(self, *args, **kwargs):
        if len(starts) == warm:
            synchronize()
            window["start"] = time.perf_counter()
        if len(starts) == steps:
            synchronize()
            window["seconds"] = time.perf_counter() - window["start"]
            raise Enough
        starts.append(time.perf_counter())
        losses[:] = [self.detach()]
        return backward(self, *args, **kwargs)

    torch.Tensor.backward = timed_backward
    run_script(script, script_args)     # (the STEPS+1-th step stops it)
    result = {"steps": len(starts), "intervals": [b - a for a, b in zip(starts, starts[1:])],
              "window_steps": steps - warm, "window_seconds": window.get("seconds"),
              "last_loss": float(losses[0]) if losses else None}
    with open(result_path, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
