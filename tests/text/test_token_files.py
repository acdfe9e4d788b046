"""paragrad.data.prepare_tokens: uint16 train.bin / val.bin of a real corpus (nanoGPT's 90/10
split), contents that decode back to the corpus, <|endoftext|> as the eot id, files reused while
corpus and tokenizer stay the same and made anew when either changes, and vocabularies too large
for uint16 refused."""
import shutil

import numpy as np
import pytest

from paragrad.data import prepare_tokens
from paragrad.text import EOT, BPETokenizer, CharTokenizer, load_tokenizer
from tests.data_paths import shared_data_file


def _ids(path):
    return np.fromfile(path, dtype="<u2")


@pytest.fixture
def corpus(tmp_path):
    """A copy of Tiny Shakespeare in its own folder (so tests may change it)."""
    path = tmp_path / "corpus" / "input.txt"
    path.parent.mkdir()
    shutil.copyfile(shared_data_file("tinyshakespeare/input.txt"), path)
    return path


def test_char_token_files_split_and_decode_back(corpus, tmp_path):
    text = corpus.read_text(encoding="utf-8")
    tok = CharTokenizer.from_text(text)
    train, val = prepare_tokens(corpus, tok, cache_dir=tmp_path / "cache")
    assert (train.name, val.name) == ("train.bin", "val.bin") and train.parent.parent == tmp_path / "cache"
    assert train.stat().st_size == 2 * 1003854 and val.stat().st_size == 2 * 111540   # nanoGPT's counts
    assert tok.decode(_ids(train)) + tok.decode(_ids(val)) == text
    assert load_tokenizer(train.parent / "tokenizer.json").chars == tok.chars


def test_bpe_token_files_keep_the_eot_between_stories(tmp_path):
    sample = shared_data_file("tinystories/tinystories_sample.txt")
    text = sample.read_text(encoding="utf-8")
    tok = BPETokenizer.train(text.split(EOT), vocab_size=300)
    train, val = prepare_tokens(sample, tok, cache_dir=tmp_path)
    ids = np.concatenate([_ids(train), _ids(val)])
    assert len(_ids(train)) == int(0.9 * len(ids))
    assert int((ids == tok.eot_id).sum()) == text.count(EOT) == 5
    assert tok.decode(ids) == text


def test_default_folder_is_the_user_cache_never_beside_the_corpus(corpus, tmp_path, monkeypatch):
    tok = CharTokenizer.from_text(corpus.read_text())
    train, _ = prepare_tokens(corpus, tok)                  # $PARAGRAD_CACHE: see conftest.py
    assert train.parent.parent == tmp_path / "paragrad-cache" / "tokens"
    assert train.parent.name.startswith("input-")
    monkeypatch.delenv("PARAGRAD_CACHE")                   # then ~/.cache/paragrad
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    train, _ = prepare_tokens(corpus, tok)
    assert train.parent.parent == tmp_path / "home" / ".cache" / "paragrad" / "tokens"
    assert sorted(p.name for p in corpus.parent.iterdir()) == ["input.txt"]


def test_unchanged_corpus_and_tokenizer_reuse_the_files(corpus, tmp_path, monkeypatch):
    tok = CharTokenizer.from_text(corpus.read_text())
    train, val = prepare_tokens(corpus, tok, cache_dir=tmp_path)
    mtimes = train.stat().st_mtime_ns, val.stat().st_mtime_ns
    calls = []
    monkeypatch.setattr(tok, "encode", lambda text: calls.append(text) or [])
    again = CharTokenizer(tok.chars)                            # an equal tokenizer, made anew
    monkeypatch.setattr(again, "encode", tok.encode)
    assert prepare_tokens(corpus, tok, cache_dir=tmp_path) == (train, val)
    assert prepare_tokens(corpus, again, cache_dir=tmp_path) == (train, val)
    assert calls == [] and (train.stat().st_mtime_ns, val.stat().st_mtime_ns) == mtimes


def test_changed_corpus_or_tokenizer_gets_new_files(corpus, tmp_path):
    text = corpus.read_text()
    tok = CharTokenizer.from_text(text)
    train, _ = prepare_tokens(corpus, tok, cache_dir=tmp_path)
    corpus.write_text(text.replace("First Citizen", "Second Citizen", 1))
    train2, val2 = prepare_tokens(corpus, tok, cache_dir=tmp_path)
    assert train2.parent != train.parent and train.exists()
    assert tok.decode(_ids(train2)).startswith("Second Citizen:")
    bigger = CharTokenizer(tok.chars + ["é"])                   # another tokenizer, same corpus
    train3, _ = prepare_tokens(corpus, bigger, cache_dir=tmp_path)
    assert train3.parent not in (train.parent, train2.parent)


def test_vocabulary_must_fit_uint16(tmp_path):
    corpus = tmp_path / "tiny.txt"
    chars = [chr(0x10000 + i) for i in range(65536)]             # ids 0..65535: the most that fit
    corpus.write_text(chars[-1] + chars[0] + chars[-1], encoding="utf-8")
    train, val = prepare_tokens(corpus, CharTokenizer(chars), cache_dir=tmp_path)
    assert (_ids(train).tolist(), _ids(val).tolist()) == ([65535, 0], [65535])
    with pytest.raises(ValueError, match="a vocabulary of 65537 tokens doesn't fit uint16"):
        prepare_tokens(corpus, CharTokenizer(chars + ["a"]), cache_dir=tmp_path)
