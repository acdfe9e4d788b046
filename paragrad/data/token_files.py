"""Token files, as nanoGPT's prepare scripts write them: a corpus's token ids once, as uint16
binary files (train.bin: the first 90% of the token stream, val.bin: the rest), reused for as
long as neither the corpus nor the tokenizer changes.

The files go in a folder named by a sha256 of the corpus bytes and the tokenizer's JSON, so a
changed corpus or tokenizer gets new files instead of stale ones. The folder also holds the
tokenizer.json, so the ids can be read back later without the code that made them.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from ..io.atomic_write import atomic_write

TOKEN_DTYPE = np.dtype("<u2")   # uint16, little-endian on every machine: ids 0..65535
TRAIN_FRACTION = 0.9            # nanoGPT's shakespeare_char split
# part of the cache key: a change to the files' layout or split must not reuse old files
FORMAT = b"paragrad token files v1: <u2 ids, first 90% train.bin, rest val.bin"


def read_corpus(path) -> str:
    """The corpus as text, byte for byte (no newline translation: "\\r\\n" stays)."""
    return Path(path).read_bytes().decode("utf-8")


def check_fits_uint16(tokenizer):
    limit = np.iinfo(TOKEN_DTYPE).max + 1
    if tokenizer.vocab_size > limit:
        raise ValueError(f"prepare_tokens(): a vocabulary of {tokenizer.vocab_size} tokens doesn't "
                         f"fit uint16 token files (ids 0..{limit - 1}); use a vocab_size of at "
                         f"most {limit}")


def encode_corpus(text, tokenizer) -> np.ndarray:
    """The token ids of `text` as uint16. A BPE tokenizer turns each <|endoftext|> between
    documents into its eot id (a special token); for a char tokenizer it is plain text."""
    check_fits_uint16(tokenizer)
    return np.array(tokenizer.encode(text), dtype=TOKEN_DTYPE)


def token_folder(corpus_path, corpus_bytes, tokenizer_json, cache_dir=None) -> Path:
    """Where prepare_tokens keeps the files of this corpus and tokenizer: a folder under
    cache_dir (default: the corpus's own folder) named by the corpus and a checksum."""
    corpus_path = Path(corpus_path)
    key = hashlib.sha256(FORMAT)
    key.update(hashlib.sha256(corpus_bytes).digest())   # fixed length: the JSON can't blur into it
    key.update(tokenizer_json.encode("utf-8"))
    parent = Path(cache_dir) if cache_dir is not None else corpus_path.parent
    return parent / f"{corpus_path.stem}-tokens-{key.hexdigest()[:16]}"


def prepare_tokens(corpus_path, tokenizer, cache_dir=None) -> tuple[Path, Path]:
    """(train_path, val_path) of the corpus's token files, tokenizing only when they don't
    exist yet. cache_dir: where their folder goes (default: beside the corpus)."""
    corpus_bytes = Path(corpus_path).read_bytes()
    tokenizer_json = tokenizer.to_json()
    folder = token_folder(corpus_path, corpus_bytes, tokenizer_json, cache_dir)
    train, val = folder / "train.bin", folder / "val.bin"
    if train.exists() and val.exists():     # each written atomically: existing means complete
        return train, val
    ids = encode_corpus(corpus_bytes.decode("utf-8"), tokenizer)
    n_train = int(len(ids) * TRAIN_FRACTION)
    atomic_write(folder / "tokenizer.json", [tokenizer_json.encode("utf-8")])
    atomic_write(val, [ids[n_train:].tobytes()])
    atomic_write(train, [ids[:n_train].tobytes()])
    return train, val
