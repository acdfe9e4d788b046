"""The progress bar's samples/s is the rate since its previous redraw: a slow first step
(compiles, plans, a graph capture) doesn't hide the training's real rate."""
import io

import paragrad.cli.progress as progress


def test_rate_is_measured_between_redraws(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock[0])
    out = io.StringIO()
    bar = progress.Progress(100, desc="epoch 1/1", stream=out)
    clock[0] = 10.0                    # a 10 s first step, then 99 steps of 64 samples in 1 s
    bar.update(1, 64)
    clock[0] = 11.0
    bar.update(100, 6400)
    first, last = out.getvalue().splitlines()
    assert first.endswith(" 6 samples/s") and last.endswith(" 6,336 samples/s"), out.getvalue()
