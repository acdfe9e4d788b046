"""What the command line accepts: flag value types that refuse bad values while parsing, and
UsageError for input found bad after parsing (a file, a folder, a checkpoint that doesn't fit).

Both end the same way: `paragrad <command>: error: <message naming the flag or file>` and exit
code 2, before anything is written. Checking at parse time means a bad `--lr` is refused in
milliseconds, not after the dataset has loaded.
"""
from __future__ import annotations

import argparse
import math


class UsageError(Exception):
    """Bad input found after parsing; the message names the flag or file."""


def _number(cast, text):
    try:
        return cast(text)
    except ValueError:
        kind = "an integer" if cast is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None


def positive_int(text):
    n = _number(int, text)
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return n


def nonnegative_int(text):
    n = _number(int, text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return n


def positive_float(text):
    x = _number(float, text)
    if not (math.isfinite(x) and x > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return x


def nonnegative_float(text):
    x = _number(float, text)
    if not (math.isfinite(x) and x >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return x


def below_one(text):
    """A probability-like value in [0, 1): dropout, Adam's betas."""
    x = _number(float, text)
    if not (math.isfinite(x) and 0 <= x < 1):
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1), got {text!r}")
    return x


def probability(text):
    """A probability mass in (0, 1]: --top-p."""
    x = _number(float, text)
    if not (math.isfinite(x) and 0 < x <= 1):
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}")
    return x


def layer_sizes(text):
    """'256,128' -> [256, 128]: one or more positive integers, comma separated."""
    parts = text.split(",")
    if not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(
            f"expected positive layer sizes separated by commas (e.g. 256,128), got {text!r}")
    return [int(p) for p in parts]


def usable_device(text):
    """A device string whose backend can run here ('cpu', 'cuda', 'cuda:1')."""
    from ..backends import device, is_available
    try:
        dev = device(text)
    except RuntimeError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("device: ")) from None
    ok, why = is_available(dev.type)
    if not ok:
        raise argparse.ArgumentTypeError(f"{text!r} is not usable here: {' '.join(why.split())}")
    if dev.type == "cuda":
        from .. import cuda
        if dev.index >= cuda.device_count():
            raise argparse.ArgumentTypeError(f"{text!r}: there is no CUDA device {dev.index} here "
                                             f"({cuda.device_count()} found)")
    return text
