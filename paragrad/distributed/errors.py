"""The errors of paragrad.distributed (torch's DistError family, plus two of paragrad's own).

A collective that times out or finds the ranks disagreeing raises one of these. The process
group is then broken: every later collective raises at once, and the process exits with status 1
when Python ends instead of waiting in MPI_Finalize for ranks that will never come (a dead
rank's peers would hang there; see process_exit.py).
"""
from __future__ import annotations


class DistError(RuntimeError):
    """Base of the distributed errors (torch.distributed.DistError)."""


class DistBackendError(DistError):
    """The transport failed or was aborted (torch.distributed.DistBackendError)."""


class DistTimeoutError(DistBackendError):
    """A collective did not complete within the process group's timeout (paragrad's own name;
    torch raises DistBackendError or aborts the process). The message names the collective,
    its sequence number and the ranks this rank waited for."""


class DistMismatchError(DistError):
    """Ranks called different collectives, or one collective with a different src, op, dtype or
    element count (checked always, from each collective's header; the group is broken after
    it), or, with PARAGRAD_DISTRIBUTED_DEBUG=1, with different shapes or arguments (checked
    before anything is sent; the group stays usable). paragrad's own name."""
