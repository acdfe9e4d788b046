"""torch.cuda.Event: a marker in a device's stream of work, to wait for or to time between.
Timing code reads it as `start.record(); ...; end.record(); end.synchronize();
start.elapsed_time(end)` (milliseconds). A CuPy event underneath, made at the first record,
on the device current then (as torch's)."""
from __future__ import annotations


class Event:
    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotImplementedError("paragrad.cuda.Event: interprocess events are not supported")
        from ..backends import backend_for
        backend_for("cuda")     # (no CUDA: the backend's clear error, here rather than at record())
        self.enable_timing, self.blocking = enable_timing, blocking
        self._event = None

    def record(self, stream=None):
        """Mark the point the current stream (or `stream`, a CuPy stream) has reached: work queued before
        it, elementwise ops waiting to be fused included, comes before the mark."""
        import cupy
        from ..backends.cuda.fused_chains import flush
        flush()
        if self._event is None:
            self._event = cupy.cuda.Event(block=self.blocking, disable_timing=not self.enable_timing)
        self._event.record(stream)

    def wait(self, stream=None):
        """Make the current stream (or `stream`) wait for this event's mark."""
        import cupy
        if self._event is not None:
            (stream or cupy.cuda.get_current_stream()).wait_event(self._event)

    def query(self):
        """Whether the work before the mark has finished (True for an event never recorded)."""
        return self._event is None or self._event.done

    def synchronize(self):
        """Wait on the host until the work before the mark has finished."""
        if self._event is not None:
            self._event.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds from this event's mark to end_event's, both recorded and finished."""
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._event is None or end_event._event is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        import cupy
        return float(cupy.cuda.get_elapsed_time(self._event, end_event._event))

    def __repr__(self):
        return f"paragrad.cuda.Event({'recorded' if self._event is not None else 'unrecorded'})"

