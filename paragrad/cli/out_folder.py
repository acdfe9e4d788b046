"""A run's output folder: where it is by default, and never two runs' files mixed in one.

A run writes epochN.safetensors (+ .train.safetensors), metrics.jsonl and curves.png. A new run
into a folder that holds another run's files is refused (naming --resume and --overwrite);
with --overwrite those files are removed once every check has passed, just before training.
Resuming a checkpoint of the folder continues its run: only checkpoints of later epochs (from
an earlier continuation) would clash.
"""
from __future__ import annotations

import re
from pathlib import Path

from .arguments import UsageError

_CHECKPOINT = re.compile(r"epoch(\d+)\.safetensors(\.train\.safetensors)?")
_RECORDS = ("metrics.jsonl", "curves.png")


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
    return max((p for p, e in files.items() if e is not None and not p.name.endswith(".train.safetensors")),
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
            raise UsageError(f"--out {args.out} holds checkpoints of epochs after {resumed_epoch} "
                             f"from an earlier continuation ({', '.join(p.name for p in stale)}); "
                             f"pass --overwrite to replace them, or choose another --out")
        return out, stale
    stale = sorted(files)
    if stale and not args.overwrite:
        latest = _latest(files)
        cont = f"continue it with --resume {latest}, " if latest else ""
        names = [p.name for p in stale if not p.name.endswith(".train.safetensors")]
        raise UsageError(f"--out {args.out} already holds another run "
                         f"({', '.join(names[:4])}{', ...' if len(names) > 4 else ''}); "
                         f"{cont}replace it with --overwrite, or choose another --out")
    return out, stale


def remove(files):
    for p in files:
        p.unlink(missing_ok=True)
