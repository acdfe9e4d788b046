"""Where a script's training step goes, under `paragrad run`: every backend call of steps
[FROM, TO) counted (by primitive, elementwise calls by op), the elementwise calls one of whose
operands another elementwise call made (the launches a fused chain could save), and a cProfile
of the same steps, sorted by own time and by cumulative time.

    python bench/script_calls.py [--device cpu|cuda] [--from 20] [--to 40] [--out FILE]
                                 SCRIPT [script args...]

A step is one `Tensor.backward()` call, as in bench/script_steps.py. --device picks the backend
whose calls are counted; the script's own device flag is among its arguments. The counts are
per step; the profiled step time is slower than the real one (cProfile and the counting).

With --host-time there is no cProfile: each backend call's host time is taken (the outermost
call, with what it calls), so the report says how much of a step the backend's methods take,
method by method, and how much the layers above them (ops, autograd, the script) take.
"""
from __future__ import annotations

import argparse
import collections
import cProfile
import inspect
import io
import pstats
import time

from script_steps import step_window

ELEMENTWISE = {"binary", "unary", "where", "cast", "fast_relu_backward", "fast_sigmoid_backward",
               "fast_tanh_backward"}


class Counter:
    """Wraps every public method of a backend class: calls counted while `on`, and which
    elementwise calls read a buffer that an elementwise call returned."""

    def __init__(self, cls):
        self.on = False
        self.calls = collections.Counter()
        self.fed = collections.Counter()
        self.made = set()       # ids of buffers elementwise calls returned (re-registered by any call)
        self.seconds = collections.Counter()    # host time of the outermost backend calls, by key
        self.own = 0.0          # the counting's own time (taken out of the layers above)
        self.depth = 0
        for name in dir(cls):
            if not name.startswith("_") and inspect.isfunction(inspect.getattr_static(cls, name)):
                setattr(cls, name, self._wrap(name, getattr(cls, name)))

    def _wrap(self, name, method):
        counter = self

        def run(backend, *args, **kwargs):
            if not counter.on:
                return method(backend, *args, **kwargs)
            counter.depth += 1
            start = time.perf_counter()
            try:
                out = method(backend, *args, **kwargs)
            finally:
                counter.depth -= 1
            end = time.perf_counter()
            counter.count(name, args, out, None if counter.depth else end - start)
            if not counter.depth:       # (a nested call's counting is inside its caller's time)
                counter.own += time.perf_counter() - end
            return out
        return run

    def count(self, name, args, out, seconds):
        key = name + (f":{args[0]}" if name in ("binary", "unary", "reduce") and args and isinstance(args[0], str)
                      else "")
        self.calls[key] += 1
        if seconds is not None:
            self.seconds[key] += seconds
        if name in ELEMENTWISE and any(id(a) in self.made for a in args if hasattr(a, "shape")):
            self.fed[key] += 1
        self.made.discard(id(out))
        if name in ELEMENTWISE:
            self.made.add(id(out))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--from", dest="first", type=int, default=20, help="first profiled step (default 20)")
    p.add_argument("--to", type=int, default=40, help="the step the profile stops at (default 40)")
    p.add_argument("--out", default=None, help="write the report here (default: standard output)")
    p.add_argument("--host-time", action="store_true",
                   help="no cProfile: the backend's host time a step, method by method")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    if not 0 < a.first < a.to:
        p.error(f"--from and --to must satisfy 0 < from < to, got {a.first} and {a.to}")
    from paragrad.as_torch import install
    install()
    import torch
    if a.device == "cuda":
        from paragrad.backends.cuda.backend import CUDABackend as cls
    else:
        from paragrad.backends.cpu import CPUBackend as cls
    counter = Counter(cls)
    prof = cProfile.Profile()
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)

    def begin():
        counter.on = True
        if not a.host_time:
            prof.enable()

    def end():
        if not a.host_time:
            prof.disable()
        counter.on = False

    seconds = step_window(torch, a.script, a.args, a.first, a.to, begin, end, sync, "script_calls")
    report = render(a, counter, prof, seconds)
    if a.out:
        with open(a.out, "w") as f:
            f.write(report)
    else:
        print(report)


def render(a, counter, prof, seconds):
    steps = a.to - a.first
    lines = [f"script  : {a.script} {' '.join(a.args)}",
             f"steps   : {a.first}..{a.to - 1} on {a.device}, {seconds / steps * 1e3:.2f} ms a step (profiled)",
             f"backend calls a step: {sum(counter.calls.values()) / steps:.1f}; elementwise calls fed by an "
             f"elementwise result: {sum(counter.fed.values()) / steps:.1f}",
             f"{'a step':>8s}  {'fed':>6s}  call"]
    if a.host_time:
        backend = sum(counter.seconds.values())
        rest = seconds - backend - counter.own
        lines[3:] = [f"host time a step: backend {backend / steps * 1e3:.2f} ms, the layers above it "
                     f"{rest / steps * 1e3:.2f} ms ({rest / max(1, sum(counter.calls.values())) * 1e6:.1f} us a "
                     f"backend call), the counting {counter.own / steps * 1e3:.2f} ms",
                     f"{'a step':>8s}  {'fed':>6s}  {'us a call':>9s}  {'ms a step':>9s}  call"]
    for key, n in counter.calls.most_common():
        timed = (f"  {counter.seconds[key] / n * 1e6:9.2f}  {counter.seconds[key] / steps * 1e3:9.3f}"
                 if a.host_time else "")
        lines.append(f"{n / steps:8.1f}  {counter.fed[key] / steps:6.1f}{timed}  {key}")
    if a.host_time:
        return "\n".join(lines) + "\n"
    for order in ("tottime", "cumulative"):
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats(order).print_stats(40)
        lines.append(s.getvalue())
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
