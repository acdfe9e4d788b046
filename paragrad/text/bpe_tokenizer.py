"""Byte-level BPE (GPT-2's scheme) trained locally with the Hugging Face `tokenizers` library.

Byte-level means every text round-trips: the base vocabulary is the 256 bytes, so nothing is
unknown. `tokenizers` is optional (`pip install "paragrad[text]"`): it is imported when a BPE
tokenizer is made, never by `import paragrad`.
"""
from __future__ import annotations

from ..io.atomic_write import atomic_write

EOT = "<|endoftext|>"       # GPT-2's end-of-text token, also TinyStories' story separator


def _tokenizers():
    try:
        import tokenizers
    except ImportError as e:
        raise ImportError('BPETokenizer needs the Hugging Face tokenizers library: '
                          'pip install "paragrad[text]"') from e
    return tokenizers


class BPETokenizer:
    """Wraps a `tokenizers.Tokenizer`; make one with `train`, `train_from_files` or
    `load_tokenizer`."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    @classmethod
    def train(cls, texts, vocab_size=4096, special_tokens=(EOT,)):
        """Train on an iterable of strings (documents, lines, or one whole corpus)."""
        tk = _tokenizers()
        tokenizer, trainer = cls._untrained(tk, vocab_size, special_tokens)
        tokenizer.train_from_iterator(texts, trainer=trainer)
        return cls(tokenizer)

    @classmethod
    def train_from_files(cls, paths, vocab_size=4096, special_tokens=(EOT,)):
        """Train on the UTF-8 text files at `paths`."""
        tk = _tokenizers()
        tokenizer, trainer = cls._untrained(tk, vocab_size, special_tokens)
        tokenizer.train([str(p) for p in paths], trainer=trainer)
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
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, ids) -> str:
        # special tokens are kept: dropping them would break decode(encode(text)) == text
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)

    def to_json(self) -> str:
        return self.tokenizer.to_str()

    @classmethod
    def from_json(cls, text):
        return cls(_tokenizers().Tokenizer.from_str(text))

    def save(self, path):
        """Write the `tokenizers` library's tokenizer.json to `path`, atomically."""
        atomic_write(path, [self.to_json().encode("utf-8")])

    def __repr__(self):
        return f"BPETokenizer(vocab_size={self.vocab_size}, eot_id={self.eot_id})"
