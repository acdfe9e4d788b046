"""The text corpora of the language-model examples, by name, and one call that gives a training
loop all it needs from one: the tokenizer and the train and val token datasets.

    from paragrad.data import language_model_data
    tokenizer, train, val = language_model_data("shakespeare")          # characters: 65 ids
    tokenizer, train, val = language_model_data("tinystories", tokenizer="bpe", vocab_size=4096)
    x, y = train.get_batch(64, 256, device="cuda")                      # (64, 256) int64 each
    text = tokenizer.decode(x[0].tolist())

The corpora lie under the data root (--data-dir, else $PARAGRAD_DATA, else ~/.cache/paragrad):
    shakespeare   tinyshakespeare/input.txt                (fetched if missing and online)
    tinystories   tinystories/tinystories_val_head.txt     (the first stories of the TinyStories
                  validation split; no public URL serves this slice, so it is never fetched)
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from ..text import EOT, BPETokenizer, CharTokenizer
from .download import DataError, data_root, download
from .token_dataset import TokenDataset
from .token_files import prepare_tokens, read_corpus


class Corpus(NamedTuple):
    file: str           # under the data root
    sha256: str
    url: str | None     # where to fetch it when missing; None: the error says where to put it


CORPORA = {
    "shakespeare": Corpus(
        "tinyshakespeare/input.txt",
        "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
        "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"),
    "tinystories": Corpus(
        "tinystories/tinystories_val_head.txt",
        "5fc1fb0113df62b567fb271806cd645ce8d75f59c58ca0b764c03d3b6ff34ca6",
        None),
}


class LanguageModelData(NamedTuple):
    tokenizer: object       # a CharTokenizer or BPETokenizer (None for random_tokens' ids of no text)
    train: TokenDataset     # (or random_tokens.RandomTokens: len() and tokens_on_device alike)
    val: TokenDataset


def corpus_path(name, root=None, allow_download=True) -> Path:
    """The file of corpus `name` under the data root, fetched (sha256-checked) if missing and
    it has a URL; DataError naming the file and where it belongs if it can't be had."""
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}; expected one of {', '.join(CORPORA)}")
    corpus = CORPORA[name]
    path = data_root(root) / corpus.file
    if not path.exists() and allow_download and corpus.url is not None:
        download([corpus.url], path, corpus.sha256)
    if not path.exists():
        raise DataError(f"{name}: missing {path} and it could not be downloaded; put "
                        f"{Path(corpus.file).name} (sha256 {corpus.sha256}) in {path.parent}, or "
                        f"pass --data-dir / set PARAGRAD_DATA to the folder that holds "
                        f"{Path(corpus.file).parent}/")
    return path


def make_tokenizer(kind, text, vocab_size=4096):
    """A tokenizer for `text`: "char" (its characters) or "bpe" (byte-level BPE trained on it,
    with <|endoftext|> as a special token)."""
    if kind == "char":
        return CharTokenizer.from_text(text)
    if kind == "bpe":
        # document by document: no merge learned across a story boundary
        return BPETokenizer.train(text.split(EOT), vocab_size=vocab_size)
    raise ValueError(f"unknown tokenizer {kind!r}; expected 'char' or 'bpe' (or a tokenizer object)")


def language_model_data(name, root=None, tokenizer="char", vocab_size=4096, cache_dir=None,
                        download=True, read_only=()) -> LanguageModelData:
    """(tokenizer, train, val) for corpus `name` ('shakespeare' or 'tinystories').

    tokenizer: "char", "bpe" (trained on the corpus with `vocab_size` tokens; training is
    deterministic, so the same corpus gives the same tokenizer and reuses its token files), or a
    tokenizer object (e.g. from paragrad.text.load_tokenizer). The token files are written once
    under cache_dir (default: $PARAGRAD_CACHE/tokens, else ~/.cache/paragrad/tokens; never
    beside the corpus), or taken from one of the read_only places; see prepare_tokens."""
    path = corpus_path(name, root, download)
    if isinstance(tokenizer, str):
        tokenizer = make_tokenizer(tokenizer, read_corpus(path), vocab_size)
    train, val = prepare_tokens(path, tokenizer, cache_dir, read_only)
    return LanguageModelData(tokenizer, TokenDataset(train), TokenDataset(val))
