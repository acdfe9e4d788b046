"""A character-level tokenizer: the vocabulary is the corpus's sorted set of characters, as in
nanoGPT's shakespeare_char preparation (65 characters for Tiny Shakespeare)."""
from __future__ import annotations

import json

from ..io.atomic_write import atomic_write
from .utf8 import describe, invalid_utf8

TYPE = "char"       # the "type" field of its tokenizer.json, how load_tokenizer recognizes it


class NotInVocabulary(ValueError):
    """encode() met a character outside the vocabulary: `char`, first seen at index `position`
    of the text (so that a caller can name the line of the file it came from)."""

    def __init__(self, message, char, position):
        super().__init__(message)
        self.char, self.position = char, position


class CharTokenizer:
    """Character-level tokenizer: id i is chars[i] (from_text: a text's sorted characters), as nanoGPT's
    shakespeare_char; paragrad's own, no torch counterpart. encode raises NotInVocabulary (a
    ValueError) for a character outside the vocabulary."""

    def __init__(self, chars):
        chars = list(chars)
        if any(not isinstance(c, str) or len(c) != 1 for c in chars):
            raise ValueError("CharTokenizer: the vocabulary must be single characters")
        if len(set(chars)) != len(chars):
            raise ValueError("CharTokenizer: the vocabulary has a character twice")
        lone = next((c for c in chars if 0xD800 <= ord(c) <= 0xDFFF), None)
        if lone is not None:    # (a tokenizer.json is UTF-8: it couldn't be saved)
            raise ValueError(f"CharTokenizer: the vocabulary holds U+{ord(lone):04X}, a lone "
                             f"surrogate, not a character of UTF-8 text")
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
            char = e.args[0]
            position = text.index(char)
            what = (describe(char, position) if invalid_utf8(char) else
                    f"character {char!r} is not in the vocabulary of {self.vocab_size} characters "
                    f"(position {position} of the text)")
            raise NotInVocabulary(f"CharTokenizer.encode(): {what}", char, position) from None

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

    def token_bytes(self) -> list[bytes]:
        """The UTF-8 bytes of each token, by id (see BPETokenizer.token_bytes)."""
        return [c.encode("utf-8") for c in self.chars]

    def to_json(self) -> str:
        return json.dumps({"type": TYPE, "chars": "".join(self.chars)}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("type") != TYPE:
            got = data.get("type") if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"CharTokenizer.from_json(): expected \"type\": \"{TYPE}\", got {got!r}")
        if not isinstance(data.get("chars"), str):
            raise ValueError("CharTokenizer.from_json(): expected \"chars\": the vocabulary as one "
                             f"string, got {type(data.get('chars')).__name__}")
        return cls(data["chars"])

    def save(self, path):
        """Write the tokenizer's JSON to `path` (a tokenizer.json), atomically."""
        atomic_write(path, [self.to_json().encode("utf-8")])

    def __repr__(self):
        return f"CharTokenizer(vocab_size={self.vocab_size})"
