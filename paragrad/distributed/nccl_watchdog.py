"""The nccl backend's timeout: after each eager NCCL collective the backend records an event, and
the watchdog gives up when one is not done within the group's timeout of its enqueue. The rank
then waited for a peer that never joined (dead, hung, or calling something else): the watchdog
prints the DistTimeoutError naming the collective and the missing ranks (from the arrival
messages) and ends the process with status 1 at once — the main thread is blocked in a CUDA
synchronization and could not raise; the driver ends the stuck kernels with the process. Not
ncclCommAbort first: it ends the kernels while the process lives, and the main thread then went
on with a result that was never reduced (seen on 2 H200s). This is torch's NCCL watchdog
behaviour (it tears the process down too). Collectives replayed from a captured CUDA graph are
not followed.

Two threads, because a CUDA call can block here: while the main thread waits in a synchronous
device-to-host copy (`.cpu()`, `.item()`) behind a collective that never ends, the driver also
blocks other threads' event calls on a lock of its own (cuEventDestroy was seen waiting there on
H200, driver 580), and CuPy's Event.done holds the GIL through cudaEventQuery. So `follower`
asks the events through the driver's cuEventQuery called by ctypes, which lets the GIL go, and
may block there; `timer` reads the clock and what the follower saw (a collective is late when
its deadline passed and the follower has not seen it done), and moves the arrival messages along
with MPI's non-blocking Test and Iprobe. The one false alarm: a collective that did finish, when
the follower is blocked for a whole timeout behind a longer GPU job the main thread waits for
(torch's default timeout, which paragrad's nccl groups share, is 10 minutes).

Mismatched calls: the host never waits for an nccl collective, so the headers of the calls
(call_header.py) are compared as they come in: by `timer` every tick while some collective
still waits for a peer's header, and by the main thread at each collective's start. A
difference the timer finds ends the process the same way, with the DistMismatchError naming
each rank's call (NCCL would hang in mismatched kernels, or complete them with garbage), unless
the main thread raised it already.
"""
from __future__ import annotations

import collections
import ctypes
import os
import sys
import threading
import time

from .errors import DistTimeoutError

_POLL_SECONDS = 0.1
_CUDA_ERROR_NOT_READY = 600


def _event_query():
    """The driver's cuEventQuery (a runtime event is a driver event) as a ctypes function:
    ctypes releases the GIL around the call, CuPy's runtime.eventQuery does not."""
    query = ctypes.CDLL("libcuda.so.1").cuEventQuery
    query.argtypes, query.restype = [ctypes.c_void_p], ctypes.c_int
    return query


class Watchdog:
    def __init__(self, pg, device_index):
        self._pg, self._device_index = pg, device_index
        self._pending = collections.deque()     # (collective, seq, event, deadline), in order
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._threads = [threading.Thread(target=target, name=f"paragrad-nccl-{target.__name__[1:]}",
                                          daemon=True) for target in (self._follower, self._timer)]
        for thread in self._threads:
            thread.start()

    def watch(self, collective, seq, event):
        deadline = time.monotonic() + self._pg.timeout.total_seconds()
        with self._lock:
            self._pending.append((collective, seq, event, deadline))

    def stop(self):
        self._stopped.set()
        for thread in self._threads:
            thread.join(timeout=2 * _POLL_SECONDS + 1.0)  # a follower stuck in CUDA stays behind

    def _follower(self):
        """Drops the collectives whose events completed, oldest first (events complete in order
        on the one stream the collectives go to)."""
        import cupy
        cupy.cuda.Device(self._device_index).use()     # the events' device, in this thread too
        query = _event_query()
        while not self._stopped.wait(_POLL_SECONDS):
            while True:
                with self._lock:
                    oldest = self._pending[0] if self._pending else None
                # may block (module docstring); an error other than "not ready" counts as ended:
                # the main thread's next CUDA call reports it
                if oldest is None or query(oldest[2].ptr) == _CUDA_ERROR_NOT_READY:
                    break
                with self._lock:
                    self._pending.popleft()
                # the event's last reference dies here, outside the lock: cudaEventDestroy
                # blocks too (a follower that held the lock through it froze the timer)
                del oldest

    def _timer(self):
        pg = self._pg
        while not self._stopped.wait(_POLL_SECONDS):
            with self._lock:
                oldest = self._pending[0] if self._pending else None
            if oldest is not None and time.monotonic() > oldest[3]:
                self._give_up(*oldest[:2])
            if oldest is None and not pg.control.unmatched():
                continue
            # the arrival messages need MPI calls on this rank to reach the others (control.py);
            # Test and Iprobe don't block
            pg.control.progress_if_possible()
            if pg.control.mismatch is not None and pg.broken is None:
                self._end(pg.fail(pg.mismatch_error("nccl watchdog")))

    def _give_up(self, collective, seq):
        pg = self._pg
        missing = pg._others_missing(seq)
        who = (f"waiting for {'rank ' if len(missing) == 1 else 'ranks '}{', '.join(map(str, missing))}"
               if missing else "(every rank arrived at it; a rank may have died inside it)")
        self._end(pg.fail(DistTimeoutError(
            f"{collective} timed out after {pg.timeout.total_seconds():.1f} s {who} (nccl, "
            f"collective #{seq} on rank {pg.rank})")))

    def _end(self, error):
        print(f"paragrad.distributed: {type(error).__name__}: {error}; ending this process",
              file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(1)
