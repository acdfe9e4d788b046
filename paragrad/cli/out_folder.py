"""A run's output folder: where it is by default, and never two runs' files mixed in one.

An image run writes epochN.safetensors (+ .train.safetensors), metrics.jsonl and curves.png. A
new run into a folder that holds another run's files is refused (naming --resume and
--overwrite); with --overwrite those files are removed once every check has passed, just
before training. Resuming a checkpoint of the folder continues its run: only checkpoints of
later epochs would clash (resuming epoch 2 after epoch 3 was written would replace epoch 3).

While a run writes into its folder it holds an advisory lock on it (the file .paragrad.lock,
holding its pid): a second run into the same folder is refused naming that pid, instead of the
two mixing their files.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..io.atomic_write import atomic_write
from .arguments import UsageError

try:
    import fcntl
except ImportError:         # (not POSIX: no lock)
    fcntl = None

_CHECKPOINT = re.compile(r"epoch(\d+)\.safetensors(\.train\.safetensors|\.pending)?")
_RECORDS = ("metrics.jsonl", "curves.png")
LOCK = ".paragrad.lock"


def checkpoint_path(out, epoch):
    return Path(out) / f"epoch{epoch}.safetensors"


def default_out(args):
    """runs/DATASET-MODEL, so that runs of different models don't meet; resuming continues in
    the checkpoint's own folder."""
    return str(Path(args.resume).parent) if args.resume else f"runs/{args.dataset}-{args.model}"


def _run_files(out):
    """{path: epoch (None for the metrics and plot)} of a run's files in out."""
    files = {}
    for p in out.iterdir():
        m = _CHECKPOINT.fullmatch(p.name)
        if m:
            files[p] = int(m.group(1))
        elif p.name in _RECORDS:
            files[p] = None
    return files


def _latest(files):
    return max((p for p, e in files.items() if e is not None and p.name == f"epoch{e}.safetensors"),
               key=files.get, default=None)


def check(args, resumed_epoch=0):
    """Refuse an --out that is a file or holds another run; returns (out, the files --overwrite
    will remove)."""
    out = Path(args.out)
    for p in (out, *out.parents):       # the nearest existing folder on the way must be a folder
        if p.exists():
            if not p.is_dir():
                raise UsageError(f"--out {args.out}: {p} is a file, not a folder")
            break
    if not out.is_dir():
        return out, []
    files = _run_files(out)
    continuing = args.resume is not None and Path(args.resume).resolve().parent == out.resolve()
    if continuing:      # the run's own records are rewritten from the checkpoint's
        stale = sorted(p for p, e in files.items() if e is not None and e > resumed_epoch)
        if stale and not args.overwrite:
            raise later_checkpoints(args, [p.name for p in stale if p.name == f"epoch{files[p]}.safetensors"],
                                    f"epoch {resumed_epoch}", _latest(files))
        return out, stale
    stale = sorted(files)
    if stale and not args.overwrite:
        latest = _latest(files)
        cont = f"continue it with --resume {latest}, " if latest else ""
        names = [p.name for p in stale if files[p] is None or p.name == f"epoch{files[p]}.safetensors"]
        raise UsageError(f"--out {args.out} already holds another run "
                         f"({', '.join(names[:4])}{', ...' if len(names) > 4 else ''}); "
                         f"{cont}replace it with --overwrite, or choose another --out")
    return out, stale


def later_checkpoints(args, names, resumed, latest):
    """The refusal of resuming an earlier checkpoint of the folder that holds later ones."""
    return UsageError(f"--out {args.out} holds later checkpoints of this run ({', '.join(names)}), which "
                      f"continuing from {resumed} ({args.resume}) would replace; resume the latest "
                      f"with --resume {latest}, pass --overwrite to replace them, or choose another --out")


def remove(files):
    for p in files:
        p.unlink(missing_ok=True)


_held = []      # the lock files of this process's run, open until unlock()


def lock(out):
    """Take the run lock of folder `out` (created if missing) until unlock(); UsageError naming
    the other run's pid if one holds it."""
    out.mkdir(parents=True, exist_ok=True)
    f = open(out / LOCK, "a+")
    if fcntl is None:
        _held.append(f)
        return
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        pid = f.read().strip() or "unknown"
        f.close()
        raise UsageError(f"--out {out}: another run (pid {pid}) is writing into it; wait for it to "
                         f"end, or choose another --out") from None
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    _held.append(f)


def unlock():
    """Release the locks lock() took (closing the file releases its lock; the file stays, so
    that a run waiting on it never locks a file that a third run has just replaced)."""
    while _held:
        _held.pop().close()


def write_records(records, path):
    """metrics.jsonl, atomically: a kill mid-write leaves the previous one. NaN and inf are not
    JSON, and a run stops before recording one (divergence.py), so they raise here."""
    atomic_write(path, [json.dumps(r, allow_nan=False).encode() + b"\n" for r in records])
