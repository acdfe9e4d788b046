"""Reading a tokenizer.json back as the tokenizer that wrote it, and a tokenizer's identity.

Whatever is wrong with the file (not UTF-8, not JSON, fields missing, a pattern the `tokenizers`
library panics on) is a ValueError that names it, so a command line can refuse it in one line.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from . import char_tokenizer
from .bpe_tokenizer import BPETokenizer
from .char_tokenizer import CharTokenizer


def load_tokenizer(path):
    """The CharTokenizer or BPETokenizer saved at `path`. A char tokenizer's file has
    "type": "char"; a BPE one is the `tokenizers` library's JSON, whose "model" is {"type": "BPE"}.
    ValueError naming `path` if it is neither or is damaged (OSError if it can't be read)."""
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8")
        data = json.loads(text)
    except UnicodeDecodeError as e:
        raise ValueError(f"load_tokenizer(): {path} is not UTF-8 text (byte 0x{raw[e.start]:02x} "
                         f"at offset {e.start}); is it a tokenizer.json?") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"load_tokenizer(): {path} is not valid JSON ({e}); a damaged or "
                         f"truncated tokenizer.json?") from None
    data = data if isinstance(data, dict) else {}
    model = data.get("model")
    if data.get("type") == char_tokenizer.TYPE:
        kind = CharTokenizer
    elif isinstance(model, dict) and model.get("type") == "BPE":
        kind = BPETokenizer
    else:
        raise ValueError(f"load_tokenizer(): {path} is neither a paragrad char tokenizer (\"type\": "
                         f"\"char\") nor a byte-level BPE tokenizer.json (\"model\": {{\"type\": \"BPE\"}})")
    try:
        return kind.from_json(text)
    except ValueError as e:
        raise ValueError(f"load_tokenizer(): {path} is not a usable {kind.__name__} ({e})") from None


def fingerprint(tokenizer) -> str:
    """The identity of a tokenizer (a CharTokenizer or BPETokenizer, or the path of its
    tokenizer.json): the sha256, in hex, of its JSON in canonical form (keys sorted, no spaces,
    ASCII). A tokenizer and its saved file give the same; tokenizers that map any text to other
    ids (a vocabulary reordered, a merge more) give different ones."""
    if isinstance(tokenizer, (str, os.PathLike)):
        tokenizer = load_tokenizer(tokenizer)
    canonical = json.dumps(json.loads(tokenizer.to_json()), sort_keys=True, separators=(",", ":"),
                           ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()
