"""Where the real datasets are for tests: $PARAGRAD_DATA, else the checkout's ../shared/data."""
import os
from pathlib import Path

import pytest


def mnist_root():
    env = os.environ.get("PARAGRAD_DATA")
    candidates = ([Path(env)] if env else []) + [Path(__file__).resolve().parents[2] / "shared" / "data"]
    for c in candidates:
        if (c / "mnist" / "t10k-labels-idx1-ubyte.gz").exists():
            return c
    pytest.fail("MNIST not found: set PARAGRAD_DATA to the folder holding mnist/ (shared/data)")


def shared_data_file(relative):
    """The real data file at `relative` (e.g. "tinyshakespeare/input.txt") under $PARAGRAD_DATA,
    else the checkout's ../shared/data."""
    env = os.environ.get("PARAGRAD_DATA")
    candidates = ([Path(env)] if env else []) + [Path(__file__).resolve().parents[2] / "shared" / "data"]
    for c in candidates:
        if (c / relative).exists():
            return c / relative
    pytest.fail(f"{relative} not found: set PARAGRAD_DATA to the folder holding it (shared/data)")
