"""paragrad.io.atomic_write: the file appears whole or not at all, with the umask's mode; a write
removes the stale temp files earlier writers left in its folder (by their naming pattern, once
their writer is gone or they are old) and nothing else: not other files, not live writers'."""
import os
import subprocess
import sys
import time

import pytest

from paragrad.io import atomic_write as aw


def _dead_pid():
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True).stdout)


def _plant(folder, target, pid=None, host=None, age_s=0.0):
    name = aw.temp_name(folder / target)
    if pid is not None:
        name = name.replace(f"-{os.getpid()}-", f"-{pid}-")
    if host is not None:
        name = name.replace(f".{aw._HOST}-", f".{host}-")
    open(name, "wb").close()
    if age_s:
        t = time.time() - age_s
        os.utime(name, (t, t))
    return os.path.basename(name)


def test_writes_whole_file_and_leaves_nothing_else(tmp_path):
    aw.atomic_write(tmp_path / "out.bin", [b"ab", b"cd"])
    assert (tmp_path / "out.bin").read_bytes() == b"abcd" and os.listdir(tmp_path) == ["out.bin"]


def test_failed_write_keeps_the_old_file_and_removes_its_temp(tmp_path):
    (tmp_path / "out.bin").write_bytes(b"old")

    def chunks():
        yield b"new"
        raise ValueError("serialization failed")
    with pytest.raises(ValueError):
        aw.atomic_write(tmp_path / "out.bin", chunks())
    assert (tmp_path / "out.bin").read_bytes() == b"old" and os.listdir(tmp_path) == ["out.bin"]


def test_stale_temporaries_go_and_everything_else_stays(tmp_path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        foreign = ["notes.tmp", "ck.safetensors.x1y2z3.tmp",        # not ours (mkstemp's style)
                   "ck.safetensors.0123abcd-1-0123abcd.paragrad.tmp.bak"]
        for name in foreign:
            (tmp_path / name).write_bytes(b"x")
        keep = {
            _plant(tmp_path, "live.safetensors", pid=sleeper.pid),            # a writer at work
            _plant(tmp_path, "mine.safetensors"),                             # this process's
            _plant(tmp_path, "remote.safetensors", pid=_dead_pid(), host="0123abcd"),  # other host, fresh
            *foreign,
        }
        gone = {
            _plant(tmp_path, "dead.safetensors", pid=_dead_pid()),
            _plant(tmp_path, "old-remote.safetensors", host="0123abcd", age_s=aw.STALE_AFTER_S + 60),
            _plant(tmp_path, "old-live.safetensors", pid=sleeper.pid, age_s=aw.STALE_AFTER_S + 60),
        }
        os.mkdir(tmp_path / "dir.0123abcd-1-0123abcd.paragrad.tmp")           # not a file: kept
        keep.add("dir.0123abcd-1-0123abcd.paragrad.tmp")
        aw.atomic_write(tmp_path / "new.bin", [b"x"])
    finally:
        sleeper.kill()
        sleeper.wait()
    assert set(os.listdir(tmp_path)) == keep | {"new.bin"}
    assert not gone & set(os.listdir(tmp_path))


def test_a_full_disk_names_the_file_and_leaves_the_old_one(tmp_path, monkeypatch):
    import errno
    target = tmp_path / "ckpt.safetensors"
    aw.atomic_write(target, [b"old"])

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")
    real_fdopen = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    with pytest.raises(OSError, match=r"No space left on device: '.*ckpt\.safetensors'") as e:
        aw.atomic_write(target, [b"new"])
    assert e.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.safetensors"]
