"""A character-level tokenizer: the vocabulary is the corpus's sorted set of characters, as in
nanoGPT's shakespeare_char preparation (65 characters for Tiny Shakespeare)."""
from __future__ import annotations

import json

from ..io.atomic_write import atomic_write

TYPE = "char"       # the "type" field of its tokenizer.json, how load_tokenizer recognizes it


class CharTokenizer:
    def __init__(self, chars):
        chars = list(chars)
        if any(not isinstance(c, str) or len(c) != 1 for c in chars):
            raise ValueError("CharTokenizer: the vocabulary must be single characters")
        if len(set(chars)) != len(chars):
            raise ValueError("CharTokenizer: the vocabulary has a character twice")
        self.chars = chars
        self._ids = {c: i for i, c in enumerate(chars)}

    @classmethod
    def from_text(cls, text):
        """The tokenizer whose vocabulary is every character of `text`, sorted."""
        return cls(sorted(set(text)))

    @property
    def vocab_size(self):
        return len(self.chars)

    @property
    def eot_id(self):
        """None: characters have no end-of-text token (a separator in the text is just text)."""
        return None

    def encode(self, text) -> list[int]:
        ids = self._ids
        try:
            return [ids[c] for c in text]
        except KeyError as e:
            raise ValueError(f"CharTokenizer.encode(): character {e.args[0]!r} is not in the "
                             f"vocabulary of {self.vocab_size} characters") from None

    def decode(self, ids) -> str:
        chars, n = self.chars, len(self.chars)
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < n:      # (a negative id would silently count from the end)
                raise ValueError(f"CharTokenizer.decode(): id {i} is outside the vocabulary "
                                 f"[0, {n})")
            out.append(chars[i])
        return "".join(out)

    def to_json(self) -> str:
        return json.dumps({"type": TYPE, "chars": "".join(self.chars)}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        if data.get("type") != TYPE:
            raise ValueError(f"CharTokenizer.from_json(): expected \"type\": \"{TYPE}\", got "
                             f"{data.get('type')!r}")
        return cls(data["chars"])

    def save(self, path):
        """Write the tokenizer's JSON to `path` (a tokenizer.json), atomically."""
        atomic_write(path, [self.to_json().encode("utf-8")])

    def __repr__(self):
        return f"CharTokenizer(vocab_size={self.vocab_size})"
