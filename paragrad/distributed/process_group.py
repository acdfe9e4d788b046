"""The process group: who this rank is, its transport, its timeout, and the bookkeeping every
collective shares (sequence numbers, arrivals, debug checks, traffic, failure).

One default group per process, made by init_process_group (torch's model; paragrad has no
sub-groups: a collective's `group` argument may be None or the default group only).
"""
from __future__ import annotations

import os
import time

from .call_header import describe
from .errors import DistBackendError, DistMismatchError, DistTimeoutError
from .process_exit import mark_broken
from .traffic import Traffic
from .work import poll

NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                   "init_process_group.")      # torch's words, and torch's ValueError

_default = {"group": None}


class ProcessGroup:
    """The process group made by init_process_group: rank, world size, backend, timeout and the
    bookkeeping collectives share; as torch.distributed.ProcessGroup.
    There is one per process (no sub-groups); rank and world_size are attributes, not torch's
    rank() and size() methods."""

    def __init__(self, backend, rank, world_size, timeout, transport, control, local_rank):
        self.backend_name, self.rank, self.world_size = backend, rank, world_size
        self.timeout, self.transport, self.control = timeout, transport, control
        self.local_rank = local_rank
        self.device_index = getattr(transport, "device_index", None)     # nccl: this rank's GPU
        self.seq = 0                        # collectives started, this one included
        self.traffic = Traffic()
        self.debug = os.environ.get("PARAGRAD_DISTRIBUTED_DEBUG", "0") not in ("", "0")
        # headers are compared unless the debug check supersedes them (control.py) or this rank is
        # alone (nobody to disagree with, and its own headers would pile up unmatched)
        control.compare = not self.debug and world_size > 1
        self.broken = None                  # the error that broke the group
        self.waiting = None                 # (collective, seq) while this rank waits for one

    # ---- starting a collective ------------------------------------------------------------
    def begin(self, collective, signature, header):
        """Number the collective, announce this rank's arrival with the call's header (raising
        DistMismatchError if a peer's header already disagrees) and (debug mode) check that
        every rank calls the same thing; returns the sequence number."""
        if self.broken is not None:
            raise DistBackendError(f"{collective}: the process group is unusable after an earlier "
                                   f"error on rank {self.rank} ({self.broken}); "
                                   f"call destroy_process_group() and end the process")
        self.seq += 1
        self.control.announce(self.seq, header)
        if self.control.mismatch is not None:
            raise self.fail(self.mismatch_error(collective))
        if self.debug:
            self._check_same_call(collective, signature)
        return self.seq

    def _check_same_call(self, collective, signature):
        import time
        request, descriptions = self.control.start_signature_gather(signature)
        self.wait_until(request, collective, self.seq, time.monotonic() + self.timeout.total_seconds())
        calls = descriptions()
        if len(set(calls)) > 1:
            by_call = {}
            for r, call in enumerate(calls):
                by_call.setdefault(call, []).append(r)
            detail = "; ".join(f"{_ranks(rs)} called {call}" for call, rs in by_call.items())
            raise DistMismatchError(
                f"{collective}: collective #{self.seq} differs across ranks "
                f"(PARAGRAD_DISTRIBUTED_DEBUG): {detail}. Every rank must call the same collectives "
                f"in the same order with tensors of the same shape and dtype")

    # ---- waiting --------------------------------------------------------------------------
    def test(self, request, collective, seq):
        try:
            return self.transport.test(request)
        except Exception as e:     # the transport's own error (e.g. MPI after a peer died)
            if self.control.progress_if_possible() and self.control.mismatch is not None:
                raise self.fail(self.mismatch_error(collective)) from e   # the likelier cause
            raise self.fail(DistBackendError(
                f"{collective} failed on rank {self.rank} (collective #{seq}): {e}; "
                f"{self._who_is_missing(seq)}")) from e

    def confirm(self, collective, seq, deadline):
        """After the transport completed collective `seq` on this rank: wait until every other
        rank's header of it came in (usually there already: they sent it before they started),
        raising DistMismatchError if one differs. So a rank never goes on with what mismatched
        calls left in its tensors, and a broadcast returns only once every rank has entered it."""
        if not self.control.matched(seq):     # (usually every header is in at the first look)
            self._poll(lambda: self.confirmed_now(collective, seq), collective, seq, deadline)

    def confirmed_now(self, collective, seq):
        """confirm() without waiting: whether every header of collective `seq` came in."""
        matched = self.control.matched(seq)
        self._raise_if_mismatched(collective)
        return matched

    def _raise_if_mismatched(self, collective):
        if self.control.mismatch is not None:
            raise self.fail(self.mismatch_error(collective))

    def mismatch_error(self, collective):
        """The DistMismatchError for the disagreement the headers showed (control.mismatch)."""
        seq, calls = self.control.mismatch
        by_call = {}
        for r in sorted(calls):
            by_call.setdefault(calls[r], []).append(r)
        detail = "; ".join(f"{_ranks(rs)} called {describe(h)}" for h, rs in by_call.items())
        unknown = [r for r in range(self.world_size) if r not in calls]
        if unknown:
            detail += f"; {_ranks(unknown)} not heard from yet"
        where = f"collective #{seq}" if seq == self.seq else f"the earlier collective #{seq}"
        return DistMismatchError(
            f"{collective}: {where} differs across ranks, as seen on rank {self.rank}: {detail}. Every "
            f"rank must call the same collectives in the same order, with the same src, op, dtype "
            f"and number of elements; the process group is unusable now (the transport may have "
            f"paired the different calls up). PARAGRAD_DISTRIBUTED_DEBUG=1 checks shapes too, "
            f"before anything is sent")

    def wait_until(self, request, collective, seq, deadline):
        self._poll(lambda: self.test(request, collective, seq), collective, seq, deadline)

    def _poll(self, done, collective, seq, deadline):
        """poll(done) until the deadline, then DistTimeoutError naming the ranks that never
        arrived; now and then moves the control messages, raising on a header mismatch."""
        def timed_out():
            missing = self._others_missing(seq)
            if missing:
                raise self.fail(DistTimeoutError(
                    f"{collective} timed out after {self.timeout.total_seconds():.1f} s waiting for "
                    f"{_ranks(missing)} (collective #{seq} on rank {self.rank}; "
                    f"{'it' if len(missing) == 1 else 'they'} never arrived at it: dead, hung, or "
                    f"calling collectives in another order; PARAGRAD_DISTRIBUTED_DEBUG=1 checks the order)"))
            raise self.fail(DistTimeoutError(
                f"{collective} timed out after {self.timeout.total_seconds():.1f} s on rank "
                f"{self.rank}: every rank arrived at collective #{seq} but the transport did not "
                f"complete it (a rank may have died inside it)"))

        def progress():
            self.control.progress()
            self._raise_if_mismatched(collective)

        self.waiting = (collective, seq)
        try:
            poll(done, timed_out, deadline, progress)
        finally:
            self.waiting = None

    # ---- failure --------------------------------------------------------------------------
    def fail(self, error):
        """Mark the group broken by `error` (and the process to exit with status 1 at its end,
        skipping MPI_Finalize, which could wait for the missing ranks); returns the error."""
        if self.broken is None:
            self.broken = error
        mark_broken()
        return error

    def _others_missing(self, seq):
        return [r for r in self.control.missing(seq) if r != self.rank]

    def _who_is_missing(self, seq):
        missing = self._others_missing(seq)
        return f"waiting for {_ranks(missing)}" if missing else f"every rank arrived at collective #{seq}"

    def on_sigterm(self):
        """The error to raise when the launcher ends this rank while it waits in a collective."""
        if self.waiting is None:
            return None
        collective, seq = self.waiting
        return self.fail(DistBackendError(
            f"{collective} ended on rank {self.rank} by SIGTERM from the launcher (another rank "
            f"failed or exited) while {self._who_is_missing(seq)} (collective #{seq})"))

    def check_every_header(self, collective):
        """confirm() every collective so far (those whose handle nobody waited for, and nccl's,
        which the host never waits for), within the timeout; nothing once the group broke."""
        if self.broken is None:
            self.confirm(collective, self.seq, time.monotonic() + self.timeout.total_seconds())

    def close(self):
        self.check_every_header("destroy_process_group")
        if self.broken is None:         # a broken transport may not even free cleanly
            self.transport.free()
            self.control.free()


def _ranks(ranks):
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(map(str, ranks))


def default_group(group=None, collective=None):
    """The initialized default group (or ValueError, as torch); `group` must be None or it."""
    pg = _default["group"]
    if pg is None:
        raise ValueError(NOT_INITIALIZED)
    if group is not None and group is not pg:
        raise ValueError(f"{collective or 'paragrad.distributed'}: only the default process group is "
                         f"supported (group=None); paragrad has no sub-groups, got group={group!r}")
    return pg


class _World(type):
    @property
    def WORLD(cls):
        return _default["group"]


class group(metaclass=_World):
    """torch.distributed.group: group.WORLD is the default process group (None before
    init_process_group), accepted wherever a collective takes `group`."""


def set_default_group(pg):
    _default["group"] = pg


def current_group():
    return _default["group"]
