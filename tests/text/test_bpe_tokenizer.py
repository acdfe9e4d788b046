"""paragrad.text.BPETokenizer: byte-level BPE trained on real TinyStories text (a small vocabulary,
to stay fast), exact round trips of any text, the <|endoftext|> id, save and load, and the
optional dependency: `import paragrad` never imports tokenizers, and BPE without it says what
to install."""
import subprocess
import sys

import pytest

from paragrad.text import EOT, BPETokenizer, load_tokenizer
from tests.data_paths import shared_data_file


def _read(relative):
    return shared_data_file(relative).read_bytes().decode("utf-8")


@pytest.fixture(scope="module")
def stories():
    return _read("tinystories/tinystories_val_head.txt")


@pytest.fixture(scope="module")
def bpe(stories):
    return BPETokenizer.train([stories[:200_000]], vocab_size=512)


def test_vocab_size_and_eot(bpe):
    assert bpe.vocab_size == 512
    assert bpe.eot_id == 0                          # the first special token comes first
    assert bpe.decode([bpe.eot_id]) == EOT
    assert BPETokenizer.train(["no special tokens"], vocab_size=300, special_tokens=()).eot_id is None


def test_round_trip_of_the_whole_corpus(bpe, stories):
    ids = bpe.encode(stories)
    assert max(ids) < 512
    assert len(ids) < len(stories) / 2             # merges learned: far fewer tokens than bytes
    assert bpe.decode(ids) == stories


def test_separators_become_the_eot_id(bpe):
    sample = _read("tinystories/tinystories_sample.txt")
    ids = bpe.encode(sample)
    assert ids.count(bpe.eot_id) == sample.count(EOT) == 5
    assert bpe.decode(ids) == sample


def test_any_text_round_trips(bpe):
    for text in ["héllo wörld 日本 🙂", "  two leading spaces\r\n\ttab", "a<|endoftext|>b", ""]:
        assert bpe.decode(bpe.encode(text)) == text


def test_ids_outside_the_vocabulary_and_text_that_is_not_utf8_are_refused(bpe):
    # (the library decodes an unknown id to nothing and passes on a lone surrogate as a TypeError)
    for bad in (512, 70000, -1):
        with pytest.raises(ValueError, match=rf"BPETokenizer.decode\(\): id {bad} is outside the "
                                             rf"vocabulary \[0, 512\)"):
            bpe.decode([1, bad])
    # `--prompt $'\xff'`: Python decodes the byte that isn't UTF-8 to the surrogate U+DCFF
    with pytest.raises(ValueError, match=r"BPETokenizer.encode\(\): byte 0xff at position 3 is not valid UTF-8"):
        bpe.encode("abc\udcffd")
    with pytest.raises(ValueError, match=r"U\+D800 at position 0 is a lone surrogate"):
        bpe.encode("\ud800")


def test_token_bytes_join_to_what_decode_gives(bpe):
    table = bpe.token_bytes()
    assert len(table) == 512 and table[bpe.eot_id] == EOT.encode()
    ids = bpe.encode("日本 🙂 naïve") + list(range(512))         # bytes that aren't UTF-8 too
    assert b"".join(table[i] for i in ids).decode("utf-8", "replace") == bpe.decode(ids)


def test_save_and_load(bpe, tmp_path, stories):
    path = tmp_path / "tokenizer.json"
    bpe.save(path)
    back = load_tokenizer(path)
    assert isinstance(back, BPETokenizer) and back.vocab_size == 512 and back.eot_id == bpe.eot_id
    assert back.to_json() == bpe.to_json()
    assert back.encode(stories[-5000:]) == bpe.encode(stories[-5000:])


def test_train_from_files(tmp_path, stories):
    path = tmp_path / "part.txt"
    path.write_text(stories[:50_000], encoding="utf-8")
    tok = BPETokenizer.train_from_files([path], vocab_size=400)
    assert tok.vocab_size == 400 and tok.eot_id == 0
    assert tok.decode(tok.encode(stories[-2000:])) == stories[-2000:]


def test_training_is_deterministic(stories):
    # (what lets prepare_tokens reuse the token files of a BPE tokenizer trained anew)
    a = BPETokenizer.train([stories[:50_000]], vocab_size=400)
    b = BPETokenizer.train([stories[:50_000]], vocab_size=400)
    assert a.to_json() == b.to_json()


def test_without_tokenizers_installed_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "tokenizers", None)       # makes `import tokenizers` fail
    with pytest.raises(ImportError, match=r'pip install "paragrad\[text\]"'):
        BPETokenizer.train(["some text"], vocab_size=300)


def test_importing_paragrad_does_not_import_tokenizers():
    code = ("import sys, paragrad, paragrad.data, paragrad.text; "
            "print('tokenizers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
