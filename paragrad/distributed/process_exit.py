"""Making sure a rank whose process group broke actually ends.

Two ways a rank learns that the job is lost:
  - its own collective fails or times out (DistTimeoutError, DistBackendError): the error
    propagates; if nothing catches it the process ends with status 1;
  - the launcher sends SIGTERM because another rank ended first (Open MPI's mpirun does this
    as soon as one rank dies or exits non-zero, then SIGKILLs within about half a second): if
    this rank is waiting in a collective, the handler raises DistBackendError naming the
    collective and the ranks it waited for, so the log says what this rank was doing before
    the launcher's own notice; otherwise SIGTERM keeps its default effect.
Once a group broke, MPI_Finalize (which mpi4py calls at exit) may wait for peers that are dead
or hung, so at Python's exit such a process leaves with os._exit(1) after flushing its output,
skipping MPI_Finalize. The same holds for a rank ending on an uncaught exception of its own:
Open MPI's MPI_Finalize waits for every rank, so the others would sit in their next collective
until the timeout; skipping it lets the launcher see the failure at once and end the job. (A
`raise SystemExit(1)` bypasses this hook: that rank waits in MPI_Finalize and the others time
out naming it.)
A group still open when Python ends (no destroy_process_group) first has its collectives'
headers checked, as destroy_process_group does: a collective whose handle nobody waited for, or
an nccl one (the host never waits for those), may have met a different call on another rank;
then the DistMismatchError is printed and the process exits 1 rather than 0.
"""
from __future__ import annotations

import atexit
import os
import signal
import sys
import threading

_state = {"broken": False, "installed": False, "on_term": None, "on_exit": None}


def mark_broken():
    _state["broken"] = True


def install(on_sigterm_in_collective, check_at_exit):
    """Register the exit guard, and the SIGTERM handler if SIGTERM has its default action and
    this is the main thread (Python runs signal handlers there only). on_sigterm_in_collective()
    returns the error to raise, or None when no collective is waiting; check_at_exit() raises
    if the open group's collectives turn out mismatched."""
    _state["on_term"], _state["on_exit"] = on_sigterm_in_collective, check_at_exit
    if _state["installed"]:
        return
    _state["installed"] = True
    atexit.register(_exit_if_broken)
    atexit.register(_check_at_exit)     # runs before _exit_if_broken (atexit runs last-in first)
    previous_hook = sys.excepthook

    def excepthook(kind, value, traceback):
        previous_hook(kind, value, traceback)
        mark_broken()
    sys.excepthook = excepthook
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum, frame):
    error = _state["on_term"]() if _state["on_term"] is not None else None
    if error is not None:
        raise error
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _check_at_exit():
    if _state["broken"] or _state["on_exit"] is None:
        return
    try:
        _state["on_exit"]()
    except Exception as e:      # an exception here would be printed, yet the exit status stay 0
        print(f"paragrad.distributed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        mark_broken()


def _exit_if_broken():
    if _state["broken"]:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:   # a closed stream must not keep the process alive
                pass
        os._exit(1)
