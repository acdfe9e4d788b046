"""init_process_group, destroy_process_group and the questions about the default group
(torch.distributed's names and semantics)."""
from __future__ import annotations

import datetime
import time

from . import process_exit
from .launcher_env import check_identity, local_rank, mpi_world
from .process_group import ProcessGroup, current_group, default_group, set_default_group

BACKENDS = ("mpi", "nccl")
# torch's documented defaults: 10 minutes for NCCL, 30 minutes for the other backends
DEFAULT_TIMEOUTS = {"mpi": datetime.timedelta(minutes=30), "nccl": datetime.timedelta(minutes=10)}


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the default process group. Ranks come from the MPI launcher that started the
    processes (`paragrad launch -n N -- ...`, mpirun, srun); rank, world_size, RANK and
    WORLD_SIZE are checked against it when given. backend "mpi" (the default) serves CPU
    tensors, "nccl" CUDA tensors (one process per GPU: device LOCAL_RANK, else the rank on its
    node, modulo the GPUs; device_id picks another). A collective that doesn't complete within
    `timeout` (default 30 minutes for mpi, 10 for nccl, as torch) raises DistTimeoutError
    naming the ranks it waited for. The timeout bounds init_process_group itself too: when a
    rank doesn't call it in time, the others raise DistTimeoutError, or, if they are still
    inside MPI's own start-up (MPI_Init, run by the call that starts MPI), print that error as
    one line and end their process (MPI_Init can't be interrupted; startup_watchdog.py).
    init_method may be None or "env://"; store and pg_options are not supported (the launcher
    is the rendezvous)."""
    op = "init_process_group"
    if current_group() is not None:
        raise ValueError("trying to initialize the default process group twice!")   # torch's words
    backend = "mpi" if backend is None else backend
    if not isinstance(backend, str) or backend.lower() not in BACKENDS:
        raise ValueError(f"{op}: backend must be 'mpi' (CPU tensors) or 'nccl' (CUDA tensors), got "
                         f"{backend!r}" + (" (paragrad's CPU backend is 'mpi', not gloo)"
                                           if backend == "gloo" else ""))
    backend = backend.lower()
    if init_method not in (None, "env://"):
        raise ValueError(f"{op}: init_method {init_method!r} is not supported: the MPI launcher "
                         f"that started the ranks is the rendezvous (init_method=None)")
    if store is not None or pg_options is not None:
        raise ValueError(f"{op}: store and pg_options are not supported: the MPI launcher that "
                         f"started the ranks is the rendezvous")
    if timeout is None:
        timeout = DEFAULT_TIMEOUTS[backend]
    if not isinstance(timeout, datetime.timedelta) or timeout.total_seconds() <= 0:
        raise TypeError(f"{op}: timeout must be a positive datetime.timedelta, got {timeout!r}")
    deadline = time.monotonic() + timeout.total_seconds()    # for MPI's start-up and the meeting
    world = mpi_world(op, timeout.total_seconds())
    rank, size = check_identity(op, world, rank, world_size)
    process_exit.install(lambda: current_group().on_sigterm() if current_group() else None,
                         lambda: current_group() and current_group().check_every_header("at exit"))
    _meet_every_rank(world, rank, size, timeout, deadline)
    from .control import ControlChannel
    control = ControlChannel(world)
    if backend == "mpi":
        from .mpi_backend import MPIBackend
        transport, local = MPIBackend(world), None
    else:
        from .nccl_backend import NCCLBackend
        local = local_rank(world)
        transport = NCCLBackend(world, rank, size, local, device_id)
    pg = ProcessGroup(backend, rank, size, timeout, transport, control, local)
    if backend == "nccl":
        transport.start_watchdog(pg)
    set_default_group(pg)


def _meet_every_rank(world, rank, size, timeout, deadline):
    """A barrier bounded by the deadline, before the collective set-up calls (communicator
    duplication, NCCL's rendezvous) that MPI would let wait forever for a rank that never
    comes."""
    from .errors import DistTimeoutError
    from .work import poll
    request = world.Ibarrier()

    def timed_out():
        process_exit.mark_broken()     # MPI_Finalize would wait for the missing rank too
        raise DistTimeoutError(f"init_process_group timed out after {timeout.total_seconds():.1f} s on "
                               f"rank {rank}: not every one of the {size} ranks called it")
    poll(request.Test, timed_out, deadline, lambda: None)


def destroy_process_group(group=None):
    """Leave the default group; init_process_group may be called again afterwards."""
    if current_group() is None:     # torch's AssertionError and words
        raise AssertionError("Process group cannot be None (destroy_process_group: no process "
                             "group is initialized)")
    pg = default_group(group, "destroy_process_group")
    set_default_group(None)
    pg.close()


def is_initialized():
    """Whether the default process group is initialized; as torch.distributed.is_initialized."""
    return current_group() is not None


def is_available():
    """Whether paragrad.distributed can run here: mpi4py imports."""
    return is_mpi_available()


def is_mpi_available():
    """Whether the "mpi" backend can run here (mpi4py imports); as
    torch.distributed.is_mpi_available."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_nccl_available():
    """Whether the "nccl" backend can run here (CuPy's NCCL binding imports); as
    torch.distributed.is_nccl_available."""
    try:
        from cupy.cuda import nccl  # noqa: F401
    except Exception:       # ImportError, or CuPy failing to find a CUDA driver
        return False
    return True


def get_rank(group=None):
    """This process's rank in the default group; as torch.distributed.get_rank.
    group may be None or the default group only (ValueError otherwise)."""
    return default_group(group, "get_rank").rank


def get_world_size(group=None):
    """The number of processes in the default group; as torch.distributed.get_world_size.
    group may be None or the default group only (ValueError otherwise)."""
    return default_group(group, "get_world_size").world_size


def get_backend(group=None):
    """The default group's backend name, "mpi" or "nccl"; as torch.distributed.get_backend.
    group may be None or the default group only (ValueError otherwise)."""
    return default_group(group, "get_backend").backend_name


def bytes_communicated(group=None):
    """Bytes this rank handed to collectives since init_process_group or the last
    reset_bytes_communicated() (the counting model: paragrad/distributed/traffic.py)."""
    return default_group(group, "bytes_communicated").traffic.total()


def traffic(group=None):
    """The per-collective counts behind bytes_communicated(): a Traffic with .calls and .bytes
    dicts keyed by collective name."""
    return default_group(group, "traffic").traffic


def reset_bytes_communicated(group=None):
    """Zeroes the counts behind bytes_communicated() and traffic(); paragrad's own, not in torch."""
    default_group(group, "reset_bytes_communicated").traffic.reset()
