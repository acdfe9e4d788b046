"""The nccl backend's timeout: a daemon thread follows the event recorded after each eager
NCCL collective. If one is not done when the group's timeout has passed since it was enqueued,
the rank waited for a peer that never joined (dead, hung, or calling something else): the
thread prints the DistTimeoutError naming the collective and the missing ranks (from the
arrival messages), aborts the NCCL communicator (so the stuck kernels end and nothing else
waits on them) and ends the process with status 1 — the main thread may be blocked in a CUDA
synchronization and could not raise. This is torch's NCCL watchdog behaviour (it tears the
process down too). Collectives replayed from a captured CUDA graph are not followed.
"""
from __future__ import annotations

import collections
import os
import sys
import threading
import time

from .errors import DistTimeoutError

_POLL_SECONDS = 0.1


class Watchdog:
    def __init__(self, pg, comm, device_index):
        self._pg, self._comm, self._device_index = pg, comm, device_index
        self._pending = collections.deque()     # (collective, seq, event, deadline), in order
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="paragrad-nccl-watchdog", daemon=True)
        self._thread.start()

    def watch(self, collective, seq, event):
        deadline = time.monotonic() + self._pg.timeout.total_seconds()
        with self._lock:
            self._pending.append((collective, seq, event, deadline))

    def stop(self):
        self._stopped.set()
        self._thread.join()

    def _run(self):
        import cupy
        cupy.cuda.Device(self._device_index).use()     # the events' device, in this thread too
        while not self._stopped.wait(_POLL_SECONDS):
            with self._lock:
                while self._pending and self._pending[0][2].done:
                    self._pending.popleft()
                late = self._pending[0] if self._pending and time.monotonic() > self._pending[0][3] else None
            if late is not None:
                self._give_up(*late[:2])

    def _give_up(self, collective, seq):
        pg = self._pg
        missing = pg._others_missing(seq)
        who = (f"waiting for {'rank ' if len(missing) == 1 else 'ranks '}{', '.join(map(str, missing))}"
               if missing else "(every rank arrived at it; a rank may have died inside it)")
        error = pg.fail(DistTimeoutError(
            f"{collective} timed out after {pg.timeout.total_seconds():.1f} s {who} (nccl, "
            f"collective #{seq} on rank {pg.rank}); aborting the NCCL communicator and exiting"))
        print(f"paragrad.distributed: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        try:
            self._comm.abort()
        finally:
            sys.stdout.flush()
            os._exit(1)
