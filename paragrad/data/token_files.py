"""Token files, as nanoGPT's prepare scripts write them: a corpus's token ids once, as uint16
binary files (train.bin: the first 90% of the token stream, val.bin: the rest), reused for as
long as neither the corpus nor the tokenizer changes.

Where: a folder per corpus and tokenizer, named by a sha256 of the corpus's bytes and the
tokenizer's fingerprint, so a changed corpus or tokenizer gets new files instead of stale ones.
It goes under cache_dir, by default $PARAGRAD_CACHE/tokens (else ~/.cache/paragrad/tokens), and
never beside the corpus: a data folder may be read-only or shared, and isn't the cache's to fill.
A caller may name its own cache_dir (a training run's output folder, say). The folder also holds
the tokenizer.json, so the ids can be read back later without the code that made them.

Damage: tokens.json, written last, records each file's size and sha256. A folder whose files
don't match it (cut short by a copy or a full disk, overwritten, half-written by a killed
process) is made anew, never read.

Failure: a write that fails (a full disk) takes back what this call wrote, the folders it made
included, and raises an OSError naming the file.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from ..cache_folder import cache_root
from ..io.atomic_write import atomic_write
from ..text import fingerprint
from ..text.char_tokenizer import NotInVocabulary
from .download import DataError, sha256_of

TOKEN_DTYPE = np.dtype("<u2")   # uint16, little-endian on every machine: ids 0..65535
TRAIN_FRACTION = 0.9            # nanoGPT's shakespeare_char split
# part of the cache key: a change to the files' layout or split must not reuse old files
FORMAT = "paragrad token files v2: <u2 ids, first 90% train.bin, rest val.bin; tokens.json last"
MANIFEST = "tokens.json"
FILES = ("tokenizer.json", "val.bin", "train.bin")     # written in this order, then MANIFEST


def read_corpus(path) -> str:
    """The corpus as text, byte for byte (no newline translation: "\\r\\n" stays)."""
    return _decode(path, Path(path).read_bytes())


def _decode(path, raw):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start}); "
                        f"a corpus must be UTF-8") from None


def check_fits_uint16(tokenizer):
    limit = np.iinfo(TOKEN_DTYPE).max + 1
    if tokenizer.vocab_size > limit:
        raise ValueError(f"prepare_tokens(): a vocabulary of {tokenizer.vocab_size} tokens doesn't "
                         f"fit uint16 token files (ids 0..{limit - 1}); use a vocab_size of at "
                         f"most {limit}")


def encode_corpus(text, tokenizer, path="the corpus") -> np.ndarray:
    """The token ids of `text` (the corpus at `path`) as uint16. A BPE tokenizer turns each
    <|endoftext|> between documents into its eot id (a special token); for a char tokenizer it
    is plain text. DataError naming the file and line of a character the vocabulary lacks."""
    check_fits_uint16(tokenizer)
    try:
        ids = tokenizer.encode(text)
    except NotInVocabulary as e:
        line = text.count("\n", 0, e.position) + 1
        raise DataError(f"{path}: line {line} has the character {e.char!r}, which the tokenizer's "
                        f"vocabulary of {tokenizer.vocab_size} characters lacks (a tokenizer made "
                        f"from another text?)") from None
    return np.array(ids, dtype=TOKEN_DTYPE)


def token_folder(corpus_path, identity, cache_dir=None) -> Path:
    """Where prepare_tokens keeps the files of the corpus and tokenizer `identity` names: a
    folder under cache_dir (default: cache_root()/tokens) named by the corpus and a checksum."""
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode("ascii")).hexdigest()
    parent = Path(cache_dir) if cache_dir is not None else cache_root() / "tokens"
    return parent / f"{Path(corpus_path).stem}-{key[:16]}"


def prepare_tokens(corpus_path, tokenizer, cache_dir=None, read_only=()) -> tuple[Path, Path]:
    """(train_path, val_path) of the corpus's token files, tokenizing only when intact ones don't
    exist yet. cache_dir: where their folder goes (default: cache_root()/tokens). read_only:
    more such places to take intact files from first, never written to (`paragrad evaluate`
    reads the run's own)."""
    corpus_bytes = Path(corpus_path).read_bytes()
    identity = {"format": FORMAT, "corpus_sha256": hashlib.sha256(corpus_bytes).hexdigest(),
                "tokenizer": fingerprint(tokenizer)}
    for place in read_only:
        folder = token_folder(corpus_path, identity, place)
        if _intact(folder, identity):
            return folder / "train.bin", folder / "val.bin"
    folder = token_folder(corpus_path, identity, cache_dir)
    if not _intact(folder, identity):
        ids = encode_corpus(_decode(corpus_path, corpus_bytes), tokenizer, corpus_path)
        _write(folder, identity, tokenizer.to_json(), ids)
    return folder / "train.bin", folder / "val.bin"


def _intact(folder, identity) -> bool:
    """Whether `folder` holds the complete files of `identity`, as its manifest records them."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        if {k: manifest[k] for k in identity} != identity:
            return False
        for name in FILES:
            want, path = manifest["files"][name], folder / name
            if path.stat().st_size != want["bytes"] or sha256_of(path) != want["sha256"]:
                return False
    except (OSError, ValueError, KeyError, TypeError):     # missing, unreadable or not ours
        return False
    return True


def _write(folder, identity, tokenizer_json, ids):
    n_train = int(len(ids) * TRAIN_FRACTION)
    contents = {"tokenizer.json": tokenizer_json.encode("utf-8"), "val.bin": ids[n_train:].tobytes(),
                "train.bin": ids[:n_train].tobytes()}
    files = {name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
             for name, data in contents.items()}
    contents[MANIFEST] = json.dumps({**identity, "files": files}, indent=1).encode("utf-8")
    made = [p for p in (folder, *folder.parents) if not p.exists()]     # deepest first
    target = folder
    try:
        for name, data in contents.items():     # (a dict keeps its order: MANIFEST last)
            target = folder / name
            atomic_write(target, [data])
    except BaseException as e:
        _take_back(folder, made)
        if isinstance(e, OSError):
            raise OSError(e.errno, f"can't write the token cache file {target}: "
                                   f"{e.strerror or e}; what was written of it is removed") from None
        raise


def _take_back(folder, made):
    """Remove the cache files in `folder`, then `folder` and the folders `made` if empty: nothing
    half done stays behind (a damaged cache being made anew goes too)."""
    for name in (*FILES, MANIFEST):
        try:
            (folder / name).unlink()
        except OSError:     # not there, or can't be removed: the error being raised says more
            pass
    for path in dict.fromkeys([folder, *made]):
        try:
            path.rmdir()
        except OSError:     # holds something else (another writer's files): not ours to remove
            break
