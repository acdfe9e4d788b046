"""A one-line progress bar with loss and throughput (stderr; sparse when not a terminal)."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total, desc="", stream=None, width=24):
        self.total, self.desc, self.width = total, desc, width
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.start = self.last = time.perf_counter()
        self.every = 0.1 if self.tty else 10.0      # seconds between redraws
        self.n = 0
        self.last_samples = 0

    def due(self, n_steps):
        """Whether update(n_steps, ...) would redraw: ask first, so that the fields (a loss read
        from the device, a host synchronization) are computed only for the redraws."""
        return n_steps >= self.total or time.perf_counter() - self.last >= self.every

    def update(self, n_steps, samples, **fields):
        self.n = n_steps
        if not self.due(n_steps):
            return
        # the rate since the previous redraw: each redraw reads the loss, so the device has
        # caught up with the host there and the interval times real work (the first interval
        # holds the warm-up: compiles, plans, a graph capture)
        now = time.perf_counter()
        rate = (samples - self.last_samples) / max(now - self.last, 1e-9)
        self.last, self.last_samples = now, samples
        self._draw(rate, fields)

    def _draw(self, rate, fields):
        done = int(self.width * self.n / max(self.total, 1))
        bar = "=" * done + (">" if done < self.width else "") + " " * max(self.width - done - 1, 0)
        extra = " ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in fields.items())
        line = f"{self.desc} [{bar}] {self.n}/{self.total} {extra} {rate:,.0f} samples/s"
        self.stream.write(("\r" + line) if self.tty else line + "\n")
        self.stream.flush()

    def close(self):
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
