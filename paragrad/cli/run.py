"""`paragrad run script.py [args...]`: run an unmodified PyTorch script on paragrad.

The script runs as `python script.py` would run it: as __main__, with sys.argv = [script, *args]
and its own folder first on sys.path; its exit code is its own (sys.exit(n) passes through, an
uncaught exception prints the script's traceback and exits 1). Before it starts, `import torch`
and `import torch.X.Y` are mapped to paragrad (paragrad/as_torch).
"""
from __future__ import annotations

import importlib.machinery
import os
import sys
import types

from .arguments import UsageError


def prepare(args):
    """The script's path, with torch mapped to paragrad; UsageError if that can't be done."""
    if not os.path.isfile(args.script):
        what = "is a folder, not a script" if os.path.isdir(args.script) else "does not exist"
        raise UsageError(f"script {args.script!r} {what}")
    from ..as_torch import RealTorchImported, install
    try:
        install()
    except RealTorchImported as e:
        raise UsageError(str(e)) from None
    return args.script


def run_script(script, script_args):
    """Run it as __main__; its return code (uncaught exceptions are printed, as Python does)."""
    path = os.path.abspath(script)
    sys.argv = [script, *script_args]
    sys.path[0] = os.path.dirname(os.path.realpath(script))   # where `python script.py` puts it
    try:
        _execute(path)
    except SystemExit:
        raise
    except BaseException as e:      # noqa: BLE001 - reported as Python reports an uncaught one
        tb = _from_script(e.__traceback__, path)
        sys.excepthook(type(e), e.with_traceback(tb), tb)   # the hook prints e's own traceback
        return 130 if isinstance(e, KeyboardInterrupt) else 1   # 130: as a shell shows Ctrl-C
    return 0


def _execute(path):
    """Run the file as the __main__ module, as `python path` does (runpy.run_path would set
    sys.argv[0] to the absolute path; Python keeps it as typed and makes only __file__ absolute).
    Classes the script defines pickle as __main__.Name, so it is sys.modules['__main__'] meanwhile."""
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__file__, main.__cached__ = path, None
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        sys.modules["__main__"] = saved


def _from_script(tb, path):
    """The traceback from the script's first frame on (the command line's frames aren't the
    script's); None if no frame is the script's (a syntax error in it names its line itself)."""
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    return tb
