"""Atomic file writes for checkpoints: write a temp file beside the target, fsync, rename into
place, fsync the folder. A reader sees the old file or the new one, never half of one.

The temp file is created like a plain `open(path, "w")` would create the file (mode 0o666 less
the process umask: mkstemp's 0o600 would make checkpoints unreadable to the group), and is named
`<target>.<host>-<pid>-<random>.paragrad.tmp`, so a later write into the same folder can tell its
own kind of leftovers from anything else: a writer killed mid-write leaves one, and the next write
removes it once it is stale (its writer process on this host is gone, or it hasn't been touched
for STALE_AFTER_S, for writers on other hosts sharing the folder). Files not of that pattern, and
temp files of live writers, are never touched.
"""
from __future__ import annotations

import hashlib
import os
import re
import secrets
import socket
import stat
import time

STALE_AFTER_S = 3600
_HOST = hashlib.sha1(socket.gethostname().encode()).hexdigest()[:8]
_TEMP = re.compile(r"\.(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]+)-[0-9a-f]{8}\.paragrad\.tmp$")


def temp_name(path):
    """The temp file name atomic_write uses for `path` (in the same folder)."""
    return f"{os.fspath(path)}.{_HOST}-{os.getpid()}-{secrets.token_hex(4)}.paragrad.tmp"


def atomic_write(path, chunks):
    """Write the byte strings `chunks` to `path` atomically (see the module doc)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    remove_stale_temporaries(folder)
    tmp = temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
            f.flush()
            os.fsync(f.fileno())
        rename_into_place(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError) and e.filename is None:      # a full disk: say which file
            raise OSError(e.errno, e.strerror or str(e), path) from None
        raise


def rename_into_place(src, dst):
    """os.replace, made durable (the folder fsynced), for a file already written and fsynced."""
    os.replace(src, dst)
    _fsync_folder(os.path.dirname(os.path.abspath(os.fspath(dst))))


def remove_stale_temporaries(folder):
    """Delete the stale temp files atomic_write left in `folder` (see the module doc)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    now = time.time()
    for name in names:
        m = _TEMP.search(name)
        if m is None:
            continue
        full = os.path.join(folder, name)
        try:
            st = os.lstat(full)
            if stat.S_ISREG(st.st_mode) and (_writer_gone(m) or now - st.st_mtime > STALE_AFTER_S):
                os.unlink(full)
        except OSError:             # another writer removed it first, or we may not: not ours to fix
            pass


def _writer_gone(match):
    if match["host"] != _HOST or os.name != "posix":    # (Windows' os.kill would terminate it)
        return False
    pid = int(match["pid"])
    if pid == os.getpid():
        return False                # another thread of this process may be writing it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False
    return False


def _fsync_folder(folder):
    # makes the rename itself durable; not every platform can open a folder
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
