"""paragrad.text.load_tokenizer on damaged files: each a ValueError naming the file, a panic of
the `tokenizers` library included (and its report kept off stderr); and fingerprint, a
tokenizer's identity: the same for a tokenizer and its file, different for any other."""
import json

import pytest

from paragrad.text import BPETokenizer, CharTokenizer, fingerprint, load_tokenizer
from tests.data_paths import shared_data_file


@pytest.fixture(scope="module")
def bpe():
    text = shared_data_file("tinystories/tinystories_val_head.txt").read_text(encoding="utf-8")
    return BPETokenizer.train([text[:50_000]], vocab_size=300)


def _bpe_file(tmp_path, bpe, edit):
    data = json.loads(bpe.to_json())
    edit(data)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("content, says", [
    (b"", "is not valid JSON"),
    (b'{"type": "char", "chars": "ab', "is not valid JSON"),              # cut short
    (b'{"type": "char", "chars": "a\xffb"}', r"is not UTF-8 text \(byte 0xff at offset 28\)"),
    (b'{"type": "char"}', 'expected "chars": the vocabulary as one string, got NoneType'),
    (b'{"type": "char", "chars": 5}', "got int"),
    (b'{"type": "char", "chars": "abca"}', "twice"),
    (b'{"type": "char", "chars": "a\\udcffb"}', "lone surrogate"),
    (b'[1, 2]', "neither a paragrad char tokenizer"),
    (b'{"model": {"type": "BPE", "vocab": 7}}', "the tokenizers library can't read it"),
])
def test_a_damaged_file_is_named(tmp_path, content, says):
    path = tmp_path / "tokenizer.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=rf"load_tokenizer\(\): {path} .*{says}"):
        load_tokenizer(path)


def test_a_pattern_that_panics_the_library_is_a_value_error_and_prints_nothing(bpe, tmp_path, capfd):
    # a Replace normalizer on `\G` panics ("index out of bounds") on every text it normalizes
    path = _bpe_file(tmp_path, bpe, lambda d: d.update(
        normalizer={"type": "Replace", "pattern": {"Regex": "\\G"}, "content": "x"}))
    capfd.readouterr()
    with pytest.raises(ValueError, match=rf"{path} is not a usable BPETokenizer .*the tokenizers "
                                         rf"library panicked \(index out of bounds"):
        load_tokenizer(path)
    assert capfd.readouterr().err == ""     # Rust's panic report and backtrace: kept off stderr


def test_bpe_files_that_would_decode_wrongly_are_refused(bpe, tmp_path):
    def gap(d):                 # an id that decodes to nothing: the vocabulary has a hole
        vocab = d["model"]["vocab"]
        vocab[next(t for t, i in vocab.items() if i == 150)] = 400
    with pytest.raises(ValueError, match=r"its 300 token ids are not 0\.\.299 \(none is 150\)"):
        load_tokenizer(_bpe_file(tmp_path, bpe, gap))
    with pytest.raises(ValueError, match="its decoder is 'Metaspace', not 'ByteLevel'"):
        load_tokenizer(_bpe_file(tmp_path, bpe, lambda d: d.update(
            decoder={"type": "Metaspace", "replacement": "_", "prepend_scheme": "always", "split": True})))


def test_fingerprint_is_the_tokenizers_identity(bpe, tmp_path):
    shakespeare = shared_data_file("tinyshakespeare/input.txt").read_text(encoding="utf-8")
    char = CharTokenizer.from_text(shakespeare)
    char.save(tmp_path / "char.json")
    bpe.save(tmp_path / "bpe.json")
    prints = {fingerprint(char), fingerprint(bpe)}
    assert len(prints) == 2 and all(len(p) == 64 and int(p, 16) >= 0 for p in prints)
    assert fingerprint(tmp_path / "char.json") == fingerprint(str(tmp_path / "char.json")) == fingerprint(char)
    assert fingerprint(tmp_path / "bpe.json") == fingerprint(bpe)
    # the same tokenizer written with other spacing and key order: the same identity
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(dict(reversed(json.loads(bpe.to_json()).items())), indent=4))
    assert fingerprint(pretty) == fingerprint(bpe)
    # a vocabulary reordered (the same characters, other ids) or a merge fewer: another identity
    swapped = CharTokenizer([char.chars[1], char.chars[0], *char.chars[2:]])
    assert fingerprint(swapped) != fingerprint(char)
    path = _bpe_file(tmp_path, bpe, lambda d: d["model"].update(merges=d["model"]["merges"][:-1]))
    assert fingerprint(path) != fingerprint(bpe)
