"""paragrad.text.CharTokenizer on Tiny Shakespeare: nanoGPT's 65-character vocabulary and ids,
exact round trips, the error for a character outside the vocabulary, save and load."""
import json

import pytest

from paragrad.text import CharTokenizer, load_tokenizer
from tests.data_paths import shared_data_file


@pytest.fixture(scope="module")
def shakespeare():
    return shared_data_file("tinyshakespeare/input.txt").read_text(encoding="utf-8")


def test_vocabulary_and_ids_are_nanogpts(shakespeare):
    tok = CharTokenizer.from_text(shakespeare)
    assert tok.vocab_size == 65
    assert "".join(tok.chars[:13]) == "\n !$&',-.3:;?"      # sorted: newline and space first
    assert tok.encode("hii there") == [46, 47, 47, 1, 58, 46, 43, 56, 43]   # nanoGPT's example
    assert tok.eot_id is None


def test_round_trip_of_the_whole_corpus(shakespeare):
    tok = CharTokenizer.from_text(shakespeare)
    ids = tok.encode(shakespeare)
    assert len(ids) == len(shakespeare) == 1115394
    assert tok.decode(ids) == shakespeare


def test_unknown_character_and_bad_id_are_named(shakespeare):
    tok = CharTokenizer.from_text(shakespeare)
    with pytest.raises(ValueError, match="character 'é' is not in the vocabulary of 65"):
        tok.encode("café")
    with pytest.raises(ValueError, match=r"id 65 is outside the vocabulary \[0, 65\)"):
        tok.decode([0, 65])
    with pytest.raises(ValueError, match="id -1"):
        tok.decode([-1])
    with pytest.raises(ValueError, match=r"character 'é' is not in the vocabulary of 65 characters "
                                         r"\(position 3 of the text\)") as e:
        tok.encode("café")
    assert (e.value.char, e.value.position) == ("é", 3)
    with pytest.raises(ValueError, match="byte 0xff at position 1 is not valid UTF-8"):
        tok.encode("a\udcff")           # (`--prompt $'a\xff'` as Python gives it)


def test_save_and_load(tmp_path, shakespeare):
    tok = CharTokenizer.from_text(shakespeare + "é🙂")
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    assert json.loads(path.read_text(encoding="utf-8"))["type"] == "char"
    back = load_tokenizer(path)
    assert isinstance(back, CharTokenizer) and back.chars == tok.chars
    assert back.encode("é🙂\nA") == tok.encode("é🙂\nA")


def test_bad_vocabularies_and_files_are_refused(tmp_path):
    with pytest.raises(ValueError, match="twice"):
        CharTokenizer("abca")
    with pytest.raises(ValueError, match="single characters"):
        CharTokenizer(["ab"])
    with pytest.raises(ValueError, match="U\\+DCFF, a lone surrogate"):
        CharTokenizer("a\udcff")
    other = tmp_path / "other.json"
    other.write_text('{"type": "words"}')
    with pytest.raises(ValueError, match="neither a paragrad char tokenizer"):
        load_tokenizer(other)
