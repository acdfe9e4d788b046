"""Who this process is: rank and world size from the MPI launcher (mpirun, mpiexec, srun with
PMI), checked against torchrun-style RANK / WORLD_SIZE variables and the arguments of
init_process_group where those are given. MPI is always the transport that starts the ranks
and carries the control messages; a variable that disagrees with it is an error, not a choice.
"""
from __future__ import annotations

import contextlib
import os
import sys

INSTALL_HINT = ('pip install "paragrad[mpi]" (mpi4py and Open MPI wheels), or build mpi4py '
                'against a system MPI: pip install mpi4py --no-binary mpi4py')
_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_NTASKS")
# where launchers say how many ranks they started: Open MPI, MPICH/Intel MPI (PMI), srun (a job
# step's count: SLURM_NTASKS alone is also set in the batch script that runs srun), torchrun
_WORLD_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", "WORLD_SIZE")


# Open MPI's non-blocking all-reduce (which every all_reduce uses, to stay interruptible) picks
# a recursive-doubling schedule that ran 33 MB at half the speed of the blocking MPI_Allreduce
# on 2 ranks (28 ms against 12.5 ms); the ring schedule matched it (12.5 ms). A user's own
# setting wins; the variable must be set before MPI starts, i.e. before mpi4py.MPI is imported.
OPEN_MPI_DEFAULTS = {"OMPI_MCA_coll_libnbc_iallreduce_algorithm": "ring"}


def mpi_world(op, timeout_seconds=None):
    """MPI's COMM_WORLD (MPI starts as a singleton of one rank when no launcher started us).
    Where this call starts MPI, a rank still missing after timeout_seconds (None: no limit)
    ends this process with a one-line DistTimeoutError (startup_watchdog.py)."""
    watch = contextlib.nullcontext()
    if "mpi4py.MPI" not in sys.modules:
        for name, value in OPEN_MPI_DEFAULTS.items():
            os.environ.setdefault(name, value)
        if timeout_seconds is not None:
            from .startup_watchdog import StartupWatchdog
            watch = StartupWatchdog(timeout_seconds)
    try:
        with watch:
            from mpi4py import MPI
    except ImportError as e:
        launched = [v for v in _LAUNCHER_VARS if v in os.environ]
        hint = f" (this process was started by an MPI launcher: {launched[0]} is set)" if launched else ""
        raise RuntimeError(f"{op}: paragrad.distributed runs over MPI and needs mpi4py, which is not "
                           f"installed{hint}: {INSTALL_HINT}") from e
    return MPI.COMM_WORLD


def check_identity(op, world, rank, world_size):
    """(rank, world_size) from MPI, after checking the arguments (torch's -1/None: not given)
    and RANK / WORLD_SIZE from the environment agree with it."""
    mpi_rank, mpi_size = world.Get_rank(), world.Get_size()
    claims = [("world_size argument", world_size, mpi_size), ("rank argument", rank, mpi_rank),
              ("WORLD_SIZE environment variable", os.environ.get("WORLD_SIZE"), mpi_size),
              ("RANK environment variable", os.environ.get("RANK"), mpi_rank)]
    for what, claimed, actual in claims:
        if claimed is None or claimed == -1 or claimed == "":
            continue
        try:
            claimed_int = int(claimed)
        except (TypeError, ValueError):
            raise ValueError(f"{op}: the {what} must be an integer, got {claimed!r}") from None
        if claimed_int != actual:
            hint = ""
            if mpi_size == 1:
                hint = (" MPI sees a single process: start the ranks with an MPI launcher "
                        "(paragrad launch -n N -- ..., mpirun -n N ..., srun); torchrun alone "
                        "starts processes MPI doesn't connect")
            raise ValueError(f"{op}: the {what} says {claimed_int}, but MPI says this is rank "
                             f"{mpi_rank} of {mpi_size}.{hint}")
    return mpi_rank, mpi_size


def local_rank(world):
    """This rank's index among the ranks on its machine: what the launcher says (the same
    answer as get_node_local_rank, so a user's device choice and the nccl backend's agree), else
    from MPI (the ranks sharing this node's memory; a collective call on every rank)."""
    from mpi4py import MPI
    if any(os.environ.get(name, "") != "" for name in _LOCAL_RANK_VARS):
        return get_node_local_rank()
    node = world.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return node.Get_rank()
    finally:
        node.Free()


# where launchers say which rank of its node a process is: torchrun, Open MPI, MPICH/Intel MPI, Slurm
_LOCAL_RANK_VARS = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")


def get_node_local_rank(fallback_rank=None):
    """This process's rank among those on its node (torch.distributed.get_node_local_rank):
    LOCAL_RANK as torch reads it, else what the MPI launcher or Slurm set; fallback_rank when
    none is set, else RuntimeError. Use it to pick the GPU: pg.device(f"cuda:{local_rank}")."""
    for name in _LOCAL_RANK_VARS:
        if os.environ.get(name, "") != "":
            return int(os.environ[name])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment: no launcher that sets it (paragrad "
                       "launch, mpirun, srun, torchrun) started this process, and no fallback_rank "
                       "was given")


def launcher_world_size():
    """How many ranks the launcher that started this process says it started (1 when no
    launcher variable is set): read from the environment, without starting MPI, so that a
    program can decide whether to train data-parallel before init_process_group.
    init_process_group still checks the number against MPI's own."""
    for name in _WORLD_SIZE_VARS:
        value = os.environ.get(name, "")
        if value.strip().isdigit():
            return int(value)
    return 1
