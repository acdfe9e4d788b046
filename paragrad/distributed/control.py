"""The control plane beside the collectives: tiny MPI messages on communicators of their own,
used to say *who* is missing when a collective does not complete, and (debug mode) to check
that every rank calls the same collective with the same arguments.

Arrivals: entering collective number k, a rank posts a non-blocking 8-byte message "arrived at
k" to every other rank. Ranks call collectives in the same order, so "rank r arrived at k" also
means it passed every collective before. While a rank waits for a collective it drains these
messages; on a timeout, the ranks whose arrival at k it never saw are the ones it waited for
(dead, hung, or calling something else). Costs world_size - 1 eager sends per collective.
"""
from __future__ import annotations

import threading

import numpy as np

ARRIVAL_TAG = 1
SIGNATURE_BYTES = 480   # a collective's description in debug mode, utf-8, zero-padded


class ControlChannel:
    def __init__(self, world):
        from mpi4py import MPI
        self._MPI = MPI
        # communicators of our own: nothing a user sends on COMM_WORLD can match these messages
        self.arrivals_comm, self.debug_comm = world.Dup(), world.Dup()
        self.rank, self.size = world.Get_rank(), world.Get_size()
        self.seen = [0] * self.size         # the highest collective number each rank announced
        self._sends = []                    # (request, buffer): buffers stay alive until sent
        self._inbox = np.zeros(1, np.int64)
        self._status = MPI.Status()
        self._lock = threading.Lock()     # the nccl watchdog thread moves messages too

    def announce(self, seq):
        """Tell every other rank this one entered collective `seq` (and read what they said
        so far: unread messages would pile up in MPI for the whole run)."""
        self.progress()
        self.seen[self.rank] = seq
        buf = np.array([seq], np.int64)
        with self._lock:
            for peer in range(self.size):
                if peer != self.rank:
                    self._sends.append((self.arrivals_comm.Isend(buf, dest=peer, tag=ARRIVAL_TAG), buf))

    def progress(self):
        """Move this rank's arrival messages along and read the ones delivered. MPI moves a
        message only inside MPI calls, on both ranks: an nccl rank's main thread blocks in CUDA
        right after announcing, so its watchdog calls this while collectives are pending (at 4
        ranks on H200s, sends left untested were never delivered and a timeout named ranks that
        had arrived)."""
        with self._lock:
            self._sends = [(req, buf) for req, buf in self._sends if not req.Test()]
        self.drain()

    def drain(self):
        """Read every arrival message already delivered."""
        comm, status = self.arrivals_comm, self._status
        with self._lock:
            while comm.Iprobe(self._MPI.ANY_SOURCE, ARRIVAL_TAG, status):
                source = status.Get_source()
                comm.Recv(self._inbox, source=source, tag=ARRIVAL_TAG)
                self.seen[source] = max(self.seen[source], int(self._inbox[0]))

    def progress_if_possible(self):
        """progress(), unless a dead peer broke MPI: then what arrived so far stands. -> whether
        it ran."""
        try:
            self.progress()
        except self._MPI.Exception:
            return False
        return True

    def missing(self, seq):
        """The ranks not known to have entered collective `seq`."""
        self.progress_if_possible()
        return [r for r in range(self.size) if self.seen[r] < seq]

    def start_signature_gather(self, signature):
        """Post the all-gather of every rank's description of the collective it is entering;
        returns (request, finish) where finish() gives the list of descriptions by rank."""
        data = signature.encode()[:SIGNATURE_BYTES]
        mine = np.zeros(SIGNATURE_BYTES, np.uint8)
        mine[:len(data)] = np.frombuffer(data, np.uint8)
        everyone = np.zeros((self.size, SIGNATURE_BYTES), np.uint8)
        request = self.debug_comm.Iallgather(mine, everyone)
        return request, lambda: [bytes(row).rstrip(b"\0").decode(errors="replace") for row in everyone]

    def free(self):
        for comm in (self.arrivals_comm, self.debug_comm):
            comm.Free()
