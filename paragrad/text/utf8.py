"""Naming what in a Python string can't be UTF-8 text: a lone surrogate.

Python decodes the bytes of a command line that aren't UTF-8 (`--prompt $'\\xff'`) to lone
surrogates U+DC80..U+DCFF, one per byte (PEP 383), and such a string has no UTF-8 encoding: the
`tokenizers` library refuses it with a bare TypeError, a char vocabulary can't hold it.
"""
from __future__ import annotations


def invalid_utf8(text) -> str | None:
    """None if `text` has a UTF-8 encoding, else what stops it, e.g. "byte 0xff at position 3
    is not valid UTF-8"."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return describe(text[e.start], e.start)
    return None


def describe(char, position) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:    # a byte that wasn't UTF-8, as Python decoded it
        return f"byte 0x{code - 0xDC00:02x} at position {position} is not valid UTF-8"
    return f"U+{code:04X} at position {position} is a lone surrogate, not a character of UTF-8 text"
