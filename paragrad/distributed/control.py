"""The control plane beside the collectives: tiny MPI messages on communicators of their own,
used to say *who* is missing when a collective does not complete, to find ranks that call
different collectives, and (debug mode) to check that every rank calls the same collective
with the same arguments.

Arrivals: entering collective number k, a rank posts a non-blocking 48-byte message "arrived at
k, calling <header>" (call_header.py: collective, root, op, dtype, element count) to every other
rank. Ranks call collectives in the same order, so "rank r arrived at k" also means it passed
every collective before. While a rank waits for a collective it drains these messages; on a
timeout, the ranks whose arrival at k it never saw are the ones it waited for (dead, hung, or
calling something else). Costs world_size - 1 eager sends per collective.

Headers: each one received is compared with this rank's own header of the same collective
(once this rank has entered it); the first difference is kept in `mismatch` for the process
group to raise. A collective counts as matched once every other rank's header of it came in
and agreed (matched()); the process group waits for that after the transport completed.
In debug mode (compare=False) the full signature check runs instead, before anything is
sent, and a collective it refused is never started, so headers are not compared there.
"""
from __future__ import annotations

import collections
import struct
import threading

import numpy as np

from .call_header import FIELDS

ARRIVAL_TAG = 1
_MESSAGE = struct.Struct(f"={1 + FIELDS}q")     # seq, then the header: int64s, this machine's order
SIGNATURE_BYTES = 480   # a collective's description in debug mode, utf-8, zero-padded


class ControlChannel:
    def __init__(self, world):
        from mpi4py import MPI
        self._MPI = MPI
        # communicators of our own: nothing a user sends on COMM_WORLD can match these messages
        self.arrivals_comm, self.debug_comm = world.Dup(), world.Dup()
        self.rank, self.size = world.Get_rank(), world.Get_size()
        self.seen = [0] * self.size         # the highest collective number each rank announced
        self.compare = True                 # compare headers (off in debug mode: module docstring)
        self.mine = {}                      # seq -> this rank's header, until every peer matched it
        self.theirs = [collections.deque() for _ in range(self.size)]  # (seq, header) not compared yet
        self.matched_upto = [0] * self.size     # per peer: the last collective whose header agreed
        self.matched_upto[self.rank] = float("inf")
        self.mismatch = None                # (seq, {rank: header known}) of the first disagreement
        self._sends = []                    # (request, buffer): buffers stay alive until sent
        self._inbox = bytearray(_MESSAGE.size)
        self._status = MPI.Status()
        self._lock = threading.Lock()     # the nccl watchdog thread moves messages too

    def announce(self, seq, header):
        """Tell every other rank this one entered collective `seq`, calling `header` (and read
        what they said so far: unread messages would pile up in MPI for the whole run)."""
        self.progress()
        self.seen[self.rank] = seq
        buf = [_MESSAGE.pack(seq, *header), self._MPI.BYTE]    # (struct: a fraction of np.array's cost)
        with self._lock:
            if self.compare:
                self.mine[seq] = header
                if any(self.theirs):    # headers of seq that came in before this rank entered it
                    self._compare(range(self.size))
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
        while self._receive_one():
            pass

    def _receive_one(self):
        """Read one delivered arrival message, if there is one (and compare its header);
        -> whether there was."""
        comm, status, inbox = self.arrivals_comm, self._status, self._inbox
        with self._lock:
            if not comm.Iprobe(self._MPI.ANY_SOURCE, ARRIVAL_TAG, status):
                return False
            source = status.Get_source()
            comm.Recv([inbox, self._MPI.BYTE], source=source, tag=ARRIVAL_TAG)
            seq, *header = _MESSAGE.unpack(inbox)
            self.seen[source] = max(self.seen[source], seq)
            if self.compare:
                self.theirs[source].append((seq, tuple(header)))
                self._compare((source,))
            return True

    def _compare(self, peers):
        """Compare the received headers of `peers` of collectives this rank has entered with its
        own (a peer's headers come in its order: MPI doesn't reorder messages of one sender)."""
        mine, mismatch = self.mine, self.mismatch
        for peer in peers:
            queue = self.theirs[peer]
            while queue and queue[0][0] in mine:
                seq, header = queue.popleft()
                if header != mine[seq] and mismatch is None:
                    mismatch = self.mismatch = (seq, {self.rank: mine[seq], peer: header})
                    for other, upto in enumerate(self.matched_upto):     # those that agreed
                        if other != self.rank and upto >= seq:
                            mismatch[1][other] = mine[seq]
                elif mismatch is not None and seq == mismatch[0]:
                    mismatch[1][peer] = header      # tell the error what this one called too
                if mismatch is None:
                    self.matched_upto[peer] = seq
        if mismatch is None:    # forget what every peer matched
            everyone = min(self.matched_upto)
            while mine and next(iter(mine)) <= everyone:
                del mine[next(iter(mine))]

    def matched(self, seq):
        """Whether every other rank's header of collective `seq` came in and agreed (after a
        drain; a disagreement shows in `mismatch`)."""
        if not self.compare:
            return True
        while self.mismatch is None and min(self.matched_upto) < seq:
            if not self._receive_one():     # (no probe past the last message needed)
                return False
        return self.mismatch is None

    def unmatched(self):
        """Whether some collective this rank entered still waits for a peer's header."""
        return bool(self.mine)

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
