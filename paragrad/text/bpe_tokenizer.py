"""Byte-level BPE (GPT-2's scheme) trained locally with the Hugging Face `tokenizers` library.

Byte-level means every text round-trips: the base vocabulary is the 256 bytes, so nothing is
unknown, and every token is a byte string (token_bytes), which is what lets StreamDecoder decode
a growing sequence a token at a time. `tokenizers` is optional (`pip install "paragrad[text]"`):
it is imported when a BPE tokenizer is made, never by `import paragrad`.
"""
from __future__ import annotations

import json

from ..io.atomic_write import atomic_write
from .tokenizers_library import call, library
from .utf8 import invalid_utf8

EOT = "<|endoftext|>"       # GPT-2's end-of-text token, also TinyStories' story separator
# a text with a bit of everything, encoded and decoded once when a tokenizer.json is read: a
# pattern that makes the library panic on any text is found then, not mid-run
_PROBE = "Once upon a time, naïve Zoë said: \"日本 🙂\"\r\n\t42 <|endoftext|>"


def _gpt2_byte_of_char():
    """GPT-2's bytes_to_unicode, inverted: the printable byte values stand for themselves, the
    other 68 were moved to chr(256 + n); the ByteLevel decoder maps each token's characters
    back to bytes with this table."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    moved = [b for b in range(256) if b not in printable]
    table = {chr(b): b for b in printable}
    table.update({chr(256 + n): b for n, b in enumerate(moved)})
    return table


class BPETokenizer:
    """Wraps a `tokenizers.Tokenizer`; make one with `train`, `train_from_files` or
    `load_tokenizer`."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self._token_bytes = None

    @classmethod
    def train(cls, texts, vocab_size=4096, special_tokens=(EOT,)):
        """Train on an iterable of strings (documents, lines, or one whole corpus)."""
        tokenizer, trainer = cls._untrained(library(), vocab_size, special_tokens)
        call("BPETokenizer.train()", tokenizer.train_from_iterator, texts, trainer=trainer)
        return cls(tokenizer)

    @classmethod
    def train_from_files(cls, paths, vocab_size=4096, special_tokens=(EOT,)):
        """Train on the UTF-8 text files at `paths`."""
        tokenizer, trainer = cls._untrained(library(), vocab_size, special_tokens)
        call("BPETokenizer.train_from_files()", tokenizer.train, [str(p) for p in paths], trainer=trainer)
        return cls(tokenizer)

    @staticmethod
    def _untrained(tk, vocab_size, special_tokens):
        tokenizer = tk.Tokenizer(tk.models.BPE())
        # no prefix space: it would add a space in front of every text, and decode would keep it
        tokenizer.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = tk.decoders.ByteLevel()
        trainer = tk.trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=list(special_tokens), show_progress=False,
            # all 256 bytes even if the corpus lacks some, so any text encodes
            initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet())
        return tokenizer, trainer

    @property
    def vocab_size(self):
        return self.tokenizer.get_vocab_size(with_added_tokens=True)

    @property
    def eot_id(self):
        """The id of <|endoftext|>, or None if it wasn't one of the special tokens."""
        return self.tokenizer.token_to_id(EOT)

    def encode(self, text) -> list[int]:
        """Ids of `text`; special tokens written in it (<|endoftext|>) become their own id."""
        problem = invalid_utf8(text) if isinstance(text, str) else None
        if problem:     # (the library would say only "TextInputSequence must be str")
            raise ValueError(f"BPETokenizer.encode(): {problem}")
        return call("BPETokenizer.encode()", self.tokenizer.encode, text, add_special_tokens=False).ids

    def decode(self, ids) -> str:
        # special tokens are kept: dropping them would break decode(encode(text)) == text
        ids = [int(i) for i in ids]
        self._check_ids(ids, "decode")
        return call("BPETokenizer.decode()", self.tokenizer.decode, ids, skip_special_tokens=False)

    def _check_ids(self, ids, where):
        # the library decodes an unknown id to nothing, and a negative one fails in its bindings
        n = self.vocab_size
        bad = next((i for i in ids if not 0 <= i < n), None)
        if bad is not None:
            raise ValueError(f"BPETokenizer.{where}(): id {bad} is outside the vocabulary [0, {n})")

    def token_bytes(self) -> list[bytes]:
        """The bytes of each token, by id, as the ByteLevel decoder makes them: a token's
        characters mapped back to bytes, or, for a special token with a character outside that
        map, its own UTF-8. decode(ids) is the UTF-8 decoding (U+FFFD for what isn't UTF-8) of
        their bytes joined."""
        if self._token_bytes is None:
            byte_of = _gpt2_byte_of_char()
            table = [b""] * self.vocab_size
            for token, i in self.tokenizer.get_vocab(with_added_tokens=True).items():
                known = all(c in byte_of for c in token)
                table[i] = bytes(byte_of[c] for c in token) if known else token.encode("utf-8")
            self._token_bytes = table
        return self._token_bytes

    def to_json(self) -> str:
        return self.tokenizer.to_str()

    @classmethod
    def from_json(cls, text):
        """The tokenizer of a `tokenizers` tokenizer.json; ValueError if the library can't read
        it, it isn't byte-level (token_bytes would be wrong), its ids have gaps (a model would
        sample ids that decode to nothing), or the library fails on a sample text."""
        tk = library()
        try:
            tokenizer = call("BPETokenizer.from_json()", tk.Tokenizer.from_str, text)
        except ValueError:          # (a panic, already said)
            raise
        except Exception as e:      # (the library's one error type is Exception itself)
            raise ValueError(f"the tokenizers library can't read it ({' '.join(str(e).split())})") from None
        decoder = json.loads(text).get("decoder")
        kind = decoder.get("type") if isinstance(decoder, dict) else decoder
        if kind != "ByteLevel":
            raise ValueError(f"its decoder is {kind!r}, not 'ByteLevel': paragrad reads byte-level "
                             f"BPE tokenizers only")
        bpe = cls(tokenizer)
        ids = sorted(tokenizer.get_vocab(with_added_tokens=True).values())
        if ids != list(range(len(ids))):
            gap = next(i for i, v in enumerate(ids) if v != i)
            raise ValueError(f"its {len(ids)} token ids are not 0..{len(ids) - 1} (none is {gap})")
        bpe.decode(bpe.encode(_PROBE))
        return bpe

    def save(self, path):
        """Write the `tokenizers` library's tokenizer.json to `path`, atomically."""
        atomic_write(path, [self.to_json().encode("utf-8")])

    def __repr__(self):
        return f"BPETokenizer(vocab_size={self.vocab_size}, eot_id={self.eot_id})"
