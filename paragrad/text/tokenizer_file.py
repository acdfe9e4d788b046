"""Reading a tokenizer.json back as the tokenizer that wrote it."""
from __future__ import annotations

import json
from pathlib import Path

from . import char_tokenizer
from .bpe_tokenizer import BPETokenizer
from .char_tokenizer import CharTokenizer


def load_tokenizer(path):
    """The CharTokenizer or BPETokenizer saved at `path`. A char tokenizer's file has
    "type": "char"; a BPE one is the `tokenizers` library's JSON, whose "model" is {"type": "BPE"}."""
    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text)
    data = data if isinstance(data, dict) else {}
    if data.get("type") == char_tokenizer.TYPE:
        return CharTokenizer.from_json(text)
    model = data.get("model")
    if isinstance(model, dict) and model.get("type") == "BPE":
        return BPETokenizer.from_json(text)
    raise ValueError(f"load_tokenizer(): {path} is neither a paragrad char tokenizer (\"type\": "
                     f"\"char\") nor a byte-level BPE tokenizer.json (\"model\": {{\"type\": \"BPE\"}})")
