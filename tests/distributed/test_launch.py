"""`paragrad launch -n N -- COMMAND`: N ranks run, on this host or on those a host file names;
without an MPI launcher, the message says what to install."""
import subprocess
import sys

import pytest

from paragrad.cli import main
from paragrad.cli import launch as launch_module
from tests.distributed.launch_ranks import REPO


def test_launch_runs_every_rank():
    code = ("import paragrad.distributed as d; d.init_process_group(); "
            "print('rank', d.get_rank(), 'of', d.get_world_size(), flush=True)")
    out = subprocess.run([sys.executable, "-m", "paragrad", "launch", "-n", "2", "--", sys.executable,
                          "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "rank 0 of 2" in out.stdout and "rank 1 of 2" in out.stdout, out.stdout + out.stderr


def test_launch_runs_ranks_from_a_host_file(tmp_path):
    """The multi-host path, on the one host a test has: a host file naming localhost."""
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("localhost slots=2\n")
    code = ("import paragrad.distributed as d; d.init_process_group(); "
            "print('rank', d.get_rank(), 'of', d.get_world_size(), flush=True)")
    out = subprocess.run([sys.executable, "-m", "paragrad", "launch", "-n", "2", "--hostfile", str(hosts), "--",
                          sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "rank 0 of 2" in out.stdout and "rank 1 of 2" in out.stdout, out.stdout + out.stderr


def test_launch_with_a_missing_host_file_names_it(tmp_path, capsys):
    missing = tmp_path / "hosts.txt"
    assert main(["launch", "-n", "2", "--hostfile", str(missing), "--", "python", "-c", "pass"]) == 2
    err = capsys.readouterr().err
    assert f"--hostfile {missing}: no such file" in err and "localhost slots=2" in err, err


def test_launch_without_a_launcher_says_what_to_install(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(launch_module.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["launch", "-n", "2", "--", "python", "-c", "pass"]) == 2
    err = capsys.readouterr().err
    assert "no MPI launcher (mpirun or mpiexec)" in err and 'pip install "paragrad[mpi]"' in err, err


def test_launch_needs_a_command(capsys):
    assert main(["launch", "-n", "2"]) == 2
    assert "paragrad launch -n 4 -- python train.py" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["--version"], ["-x", "FOO=1", "python", "x.py"], ["--", "python"]])
def test_launch_refuses_a_command_that_starts_with_an_option(monkeypatch, capsys, command):
    # mpirun would run `--version` itself and exit 0: nothing may be started
    started = []
    monkeypatch.setattr(launch_module.os, "execv", lambda *argv: started.append(argv))
    assert main(["launch", "-n", "2", "--", *command]) == 2
    err = capsys.readouterr().err.strip()
    assert not started, started
    assert len(err.splitlines()) == 1 and repr(command[0]) in err, err
    assert "must start with a program" in err and "paragrad launch -n 4 -- python train.py" in err, err


def test_launcher_flags(monkeypatch):
    monkeypatch.setattr(launch_module, "is_open_mpi", lambda launcher: True)
    monkeypatch.setattr(launch_module, "physical_cores", lambda: 2)
    argv = launch_module.launcher_command(3, ["python", "x.py"], "/opt/mpi/bin/mpirun")
    assert argv[:3] == ["/opt/mpi/bin/mpirun", "-n", "3"] and argv[-2:] == ["python", "x.py"]
    assert "--oversubscribe" in argv and ["-x", "NCCL_NVLS_ENABLE=0"] == argv[-4:-2]
    assert "--oversubscribe" not in launch_module.launcher_command(2, ["python"], "/opt/mpi/bin/mpirun")
    # a host file: its slots decide, not this host's cores
    argv = launch_module.launcher_command(3, ["python"], "/opt/mpi/bin/mpirun", hostfile="/h/hosts.txt")
    assert ["--hostfile", "/h/hosts.txt"] == argv[argv.index("--hostfile"):argv.index("--hostfile") + 2]
    assert "--oversubscribe" not in argv
    monkeypatch.setattr(launch_module, "is_open_mpi", lambda launcher: False)
    assert launch_module.launcher_command(2, ["python"], "/usr/bin/mpiexec") == \
        ["/usr/bin/mpiexec", "-n", "2", "-genv", "NCCL_NVLS_ENABLE", "0", "python"]
    assert launch_module.launcher_command(2, ["python"], "/usr/bin/mpiexec", hostfile="/h/hosts.txt") == \
        ["/usr/bin/mpiexec", "-n", "2", "-f", "/h/hosts.txt", "-genv", "NCCL_NVLS_ENABLE", "0", "python"]


def test_physical_cores_counts_each_core_once():
    import os
    assert 1 <= launch_module.physical_cores() <= (os.cpu_count() or 1)


def test_gpu_rank_counts_follow_paragrad_test_nproc():
    from tests.distributed.launch_ranks import gpu_rank_counts
    assert gpu_rank_counts({}) == [2]
    assert gpu_rank_counts({"PARAGRAD_TEST_NPROC": "8"}) == [2, 8]
    assert gpu_rank_counts({"PARAGRAD_TEST_NPROC": " 2 "}) == [2]
    for bad in ("1", "two", "-4"):
        with pytest.raises(ValueError, match="PARAGRAD_TEST_NPROC must be an integer >= 2"):
            gpu_rank_counts({"PARAGRAD_TEST_NPROC": bad})
