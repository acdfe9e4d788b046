"""The token cache of paragrad.data.prepare_tokens keeps nothing damaged and nothing half-written:
a file cut short or altered is found and made anew; a write that fails (a full disk) names the
file and leaves nothing behind; caches that may only be read are read, never written; a corpus
character the tokenizer lacks names the file and line."""
import errno
import shutil

import numpy as np
import pytest

from paragrad.data import DataError, prepare_tokens
from paragrad.data import token_files
from paragrad.text import CharTokenizer
from tests.data_paths import shared_data_file


@pytest.fixture
def corpus(tmp_path):
    """A copy of Tiny Shakespeare's first 20,000 characters in its own folder."""
    path = tmp_path / "corpus" / "input.txt"
    path.parent.mkdir()
    path.write_text(shared_data_file("tinyshakespeare/input.txt").read_text(encoding="utf-8")[:20_000],
                    encoding="utf-8")
    return path


def _tokenizer(corpus):
    return CharTokenizer.from_text(corpus.read_text(encoding="utf-8"))


def _ids(path):
    return np.fromfile(path, dtype="<u2")


@pytest.mark.parametrize("damage", ["cut short", "a byte changed", "no manifest", "manifest cut short"])
def test_a_damaged_cache_is_made_anew_not_read(corpus, tmp_path, damage):
    tok = _tokenizer(corpus)
    train, val = prepare_tokens(corpus, tok, cache_dir=tmp_path / "cache")
    good = _ids(train), _ids(val)
    manifest = train.parent / "tokens.json"
    if damage == "cut short":           # a copy or a disk that stopped early
        train.write_bytes(train.read_bytes()[:-2])
    elif damage == "a byte changed":
        data = bytearray(val.read_bytes())
        data[7] ^= 1
        val.write_bytes(bytes(data))
    elif damage == "no manifest":       # a writer killed before it finished
        manifest.unlink()
    else:
        manifest.write_bytes(manifest.read_bytes()[:20])
    assert prepare_tokens(corpus, tok, cache_dir=tmp_path / "cache") == (train, val)
    assert np.array_equal(_ids(train), good[0]) and np.array_equal(_ids(val), good[1])
    assert tok.decode(_ids(train)) + tok.decode(_ids(val)) == corpus.read_text(encoding="utf-8")


def _disk_fills_at(monkeypatch, name):
    """Writing the cache file `name` fails half-way with ENOSPC, as a full disk does."""
    real = token_files.atomic_write

    def write(path, chunks):
        if path.name != name:
            return real(path, chunks)

        def half_then_full():
            data = b"".join(chunks)
            yield data[:len(data) // 2]
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, half_then_full())
    monkeypatch.setattr(token_files, "atomic_write", write)


@pytest.mark.parametrize("name", ["tokenizer.json", "train.bin", "tokens.json"])
def test_a_full_disk_names_the_file_and_leaves_nothing(corpus, tmp_path, monkeypatch, name):
    out = tmp_path / "run"              # as `paragrad train` passes its --out's tokens/
    out.mkdir()
    _disk_fills_at(monkeypatch, name)
    with pytest.raises(OSError, match=rf"can't write the token cache file {out}/tokens/input-\w+/"
                                      rf"{name}: No space left on device") as e:
        prepare_tokens(corpus, _tokenizer(corpus), cache_dir=out / "tokens")
    assert e.value.errno == errno.ENOSPC and "\n" not in str(e.value)
    assert list(out.iterdir()) == []                        # no partial tokens/
    with pytest.raises(OSError, match="No space left"):     # the default cache, not there yet
        prepare_tokens(corpus, _tokenizer(corpus))
    assert not (tmp_path / "paragrad-cache").exists()
    monkeypatch.undo()                  # space again: the next call writes the whole cache
    train, val = prepare_tokens(corpus, _tokenizer(corpus), cache_dir=out / "tokens")
    assert len(_ids(train)) + len(_ids(val)) == 20_000


def test_a_full_disk_while_rebuilding_a_damaged_cache_removes_it(corpus, tmp_path, monkeypatch):
    train, _ = prepare_tokens(corpus, _tokenizer(corpus), cache_dir=tmp_path / "cache")
    train.write_bytes(b"")
    _disk_fills_at(monkeypatch, "train.bin")
    with pytest.raises(OSError, match="train.bin: No space left on device"):
        prepare_tokens(corpus, _tokenizer(corpus), cache_dir=tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_read_only_caches_are_read_but_never_written(corpus, tmp_path):
    tok = _tokenizer(corpus)
    run_tokens = tmp_path / "run" / "tokens"
    train, val = prepare_tokens(corpus, tok, cache_dir=run_tokens)
    cache = tmp_path / "paragrad-cache"
    assert prepare_tokens(corpus, tok, read_only=[run_tokens]) == (train, val)
    assert not cache.exists()                               # intact: nothing written anywhere
    train.write_bytes(train.read_bytes()[:100])             # damaged: left as it is
    train2, _ = prepare_tokens(corpus, tok, read_only=[tmp_path / "none", run_tokens])
    assert train2.parent.parent == cache / "tokens" and train.stat().st_size == 100
    assert len(_ids(train2)) == int(0.9 * 20_000)


def test_a_character_outside_the_vocabulary_names_the_file_and_line(corpus, tmp_path):
    tok = _tokenizer(corpus)
    text = corpus.read_text(encoding="utf-8")
    corpus.write_text("First\nSecond\nCafé\n" + text, encoding="utf-8")
    with pytest.raises(DataError, match=rf"{corpus}: line 3 has the character 'é', which the "
                                        rf"tokenizer's vocabulary of {tok.vocab_size} characters lacks"):
        prepare_tokens(corpus, tok, cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_a_corpus_that_is_not_utf8_is_named(corpus, tmp_path):
    shutil.copyfile(corpus, tmp_path / "copy.txt")
    corpus.write_bytes(b"ok\n\xff\n")
    with pytest.raises(DataError, match=rf"{corpus}: not UTF-8 text \(byte 0xff at offset 3\)"):
        prepare_tokens(corpus, CharTokenizer("ok\n"), cache_dir=tmp_path / "cache")
