"""A bench/ script loaded as a module, for tests of its functions: the scripts import their
siblings (common.py, scripts.py), so bench/ is on sys.path while it loads."""
import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(name):
    """bench/NAME.py as a module (named bench_NAME)."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module
