"""Work: the handle an async_op=True collective returns (torch.distributed.Work), and the
deadline-bounded wait that every MPI collective, blocking or not, goes through.

Blocking collectives are non-blocking MPI calls (MPI_Iallreduce, ...) followed by wait(): the
request is tested in a loop that also drains arrival messages and gives the core away between
tests, until it completes or the group's timeout passes. So no collective waits forever.
Then every other rank's header of the collective must have come in and agree (process_group's
confirm): a rank whose peers called something else raises DistMismatchError instead of going on
with what the transport left in its tensors.
"""
from __future__ import annotations

import os
import time

# while spinning, offer the core to another runnable process: on a machine with more runnable
# processes than cores, the rank this one waits for may be the one that needs it (a pure spin
# held two ranks on two busy cores at a third of their speed); free when nothing else runs
_yield = getattr(os, "sched_yield", lambda: None)

_SPIN_SECONDS = 2e-3    # test without pause this long: most collectives of a step finish by then
_MAX_SLEEP = 2e-4       # then sleep between tests, at most this long: MPI's non-blocking
                        # collectives advance only inside MPI calls, so a long sleep would
                        # stall each round of a multi-round algorithm
_DRAIN_EVERY = 0.05     # seconds between drains of the arrival messages while waiting


class Work:
    """A collective in flight. wait() blocks until it completed (raising DistTimeoutError
    after the process group's timeout, counted from the call that started it) and then the
    output tensors hold the result; is_completed() asks without blocking."""

    def __init__(self, group, collective, seq, request, finish=None):
        self._group, self._collective, self._seq = group, collective, seq
        self._request, self._finish = request, finish
        self._deadline = time.monotonic() + group.timeout.total_seconds()
        self._done = False

    def is_completed(self):
        if not self._done and self._group.test(self._request, self._collective, self._seq) \
                and self._group.confirmed_now(self._collective, self._seq):
            self._complete()
        return self._done

    def is_success(self):
        return self.is_completed()

    def wait(self, timeout=None):
        """Block until the collective completed; True, as torch's. `timeout` (a timedelta)
        shortens the wait, counted from now (the group's timeout from the start still holds;
        None or timedelta(0), torch's default, add no limit of their own)."""
        if self._done:
            return True
        deadline = self._deadline
        if timeout is not None and timeout.total_seconds() > 0:
            deadline = min(deadline, time.monotonic() + timeout.total_seconds())
        self._group.wait_until(self._request, self._collective, self._seq, deadline)
        self._group.confirm(self._collective, self._seq, deadline)
        self._complete()
        return True

    def _complete(self):
        self._done = True
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()

    def __repr__(self):
        return f"Work({self._collective} #{self._seq}, completed={self._done})"


def poll(test, on_timeout, deadline, drain):
    """Call test() until it returns True; on_timeout() (which raises) once the deadline passed;
    drain() now and then. Spins briefly, then sleeps a growing interval so that a rank waiting
    for a slow peer leaves the core to others (several ranks often share a core in tests)."""
    start = time.monotonic()
    sleep, next_drain = 1e-5, start + _DRAIN_EVERY
    while not test():
        now = time.monotonic()
        if now >= deadline:
            on_timeout()
        if now >= next_drain:
            drain()
            next_drain = now + _DRAIN_EVERY
        if now - start > _SPIN_SECONDS:
            time.sleep(sleep)
            sleep = min(sleep * 2, _MAX_SLEEP)
        else:
            _yield()
