"""init_process_group's timeout over MPI's own start-up.

Importing mpi4py.MPI runs MPI_Init, which under a launcher waits until every rank has called
it (Open MPI's start-up exchange), without a deadline and holding Python's GIL all along: no
Python thread of this process runs until it returns (checked with Open MPI 5.0 and mpi4py 4.1,
also for MPI.Init_thread called from a thread of its own). So the watchdog is a small child
process: it waits on a pipe until the deadline; this process closes the pipe once MPI is up,
and the child exits quietly. Past the deadline the child prints one line naming the timeout
and kills this process (SIGKILL: a Python SIGTERM handler would wait for MPI_Init to return),
and the launcher ends the job. A parent that dies closes the pipe too, so the child never
outlives it. Costs one short-lived interpreter start, only on the call that starts MPI.
"""
from __future__ import annotations

import os
import subprocess
import sys

# the child: only the standard library, started with -I -S (no site, no user paths) to start fast
_CHILD = """
import os, select, signal, sys
parent, seconds, message = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
ready, _, _ = select.select([sys.stdin], [], [], seconds)
if not ready and os.getppid() == parent:
    sys.stderr.write(message + "\\n")
    sys.stderr.flush()
    os.kill(parent, signal.SIGKILL)
"""

# where launchers put a rank's number before MPI runs: Open MPI, PMI (MPICH, Intel MPI), PMIx, Slurm
_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")


class StartupWatchdog:
    """with StartupWatchdog(seconds): ... ends this process if the block takes longer."""

    def __init__(self, seconds):
        self.seconds = seconds
        self._child = None

    def __enter__(self):
        rank = next((os.environ[v] for v in _RANK_VARS if os.environ.get(v, "").isdigit()), None)
        where = f"rank {rank}" if rank is not None else f"process {os.getpid()}"
        message = (f"paragrad.distributed: DistTimeoutError: init_process_group timed out after "
                   f"{self.seconds:.1f} s on {where}: MPI's start-up (MPI_Init) is still waiting "
                   f"for ranks that have not called init_process_group; ending this process")
        for stream in (sys.stdout, sys.stderr):     # SIGKILL would drop what is still buffered
            stream.flush()
        try:
            self._child = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _CHILD, str(os.getpid()), repr(self.seconds), message],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        except OSError:     # no interpreter to start (an embedded Python): MPI_Init goes unwatched
            self._child = None
        return self

    def __exit__(self, *exc):
        if self._child is not None:
            self._child.stdin.close()       # EOF: the child returns from select and exits
            self._child.wait()
        return False
