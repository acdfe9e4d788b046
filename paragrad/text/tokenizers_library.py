"""The boundary with the Hugging Face `tokenizers` library: imported on first use, and called so
that its Rust panics fail like any other bad input.

`tokenizers` is optional (`pip install "paragrad[text]"`): `import paragrad` never imports it.

A panic inside the library (a tokenizer.json whose normalizer pattern is `\\G` panics with "index
out of bounds" on every text) reaches Python as pyo3's PanicException, a BaseException that
`except Exception` misses, after Rust has written its report, and with RUST_BACKTRACE set a whole
backtrace, straight to file descriptor 2. A command line that refuses bad input in one line can't
have that, so `call` runs the library with descriptor 2 pointed at a scratch file: a panic becomes
a ValueError carrying the panic's message, and whatever else the library wrote is passed on.
"""
from __future__ import annotations

import os
import sys
import tempfile

_scratch = None     # one scratch file per process, emptied before each call


def library():
    """The `tokenizers` module, or an ImportError saying what to install."""
    try:
        import tokenizers
    except ImportError as e:
        raise ImportError('BPETokenizer needs the Hugging Face tokenizers library: '
                          'pip install "paragrad[text]"') from e
    return tokenizers


def call(what, fn, *args, **kwargs):
    """fn(*args, **kwargs); a panic of the library is raised as ValueError("{what}: ...")."""
    global _scratch
    if _scratch is None:
        _scratch = tempfile.TemporaryFile()
    sys.stderr.flush()      # (what Python buffered belongs before the library's own writes)
    _scratch.seek(0)
    _scratch.truncate()
    saved = os.dup(2)
    os.dup2(_scratch.fileno(), 2)
    panicked = False
    try:
        return fn(*args, **kwargs)
    except BaseException as e:
        if type(e).__module__ != "pyo3_runtime":
            raise
        panicked = True
        message = " ".join(str(e).split()) or type(e).__name__
        raise ValueError(f"{what}: the tokenizers library panicked ({message})") from None
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        if not panicked:
            _scratch.seek(0)
            written = _scratch.read()
            while written:
                written = written[os.write(2, written):]
