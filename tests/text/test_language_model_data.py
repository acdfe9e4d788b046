"""paragrad.data.language_model_data: the corpora by name under the data root, with a char or
BPE tokenizer or a given one, their token datasets, and the error for a missing corpus."""
import pytest

from paragrad.data import DataError, language_model_data
from paragrad.text import BPETokenizer, CharTokenizer
from tests.data_paths import shared_data_file

ROOT = shared_data_file("tinyshakespeare/input.txt").parents[1]


def test_shakespeare_characters(tmp_path):
    tokenizer, train, val = language_model_data("shakespeare", ROOT, cache_dir=tmp_path)
    assert isinstance(tokenizer, CharTokenizer) and tokenizer.vocab_size == 65
    assert (len(train), len(val)) == (1003854, 111540)
    text = (ROOT / "tinyshakespeare" / "input.txt").read_text(encoding="utf-8")
    assert tokenizer.decode(val.tokens) == text[1003854:]


def test_tinystories_bpe_is_trained_once_and_reused(tmp_path):
    data = language_model_data("tinystories", ROOT, tokenizer="bpe", vocab_size=512, cache_dir=tmp_path)
    assert isinstance(data.tokenizer, BPETokenizer) and data.tokenizer.vocab_size == 512
    text = (ROOT / "tinystories" / "tinystories_val_head.txt").read_text(encoding="utf-8")
    assert data.tokenizer.decode(data.train.tokens) + data.tokenizer.decode(data.val.tokens) == text
    again = language_model_data("tinystories", ROOT, tokenizer="bpe", vocab_size=512, cache_dir=tmp_path)
    assert again.train.path == data.train.path          # the same tokenizer, so the same files
    assert len(list(tmp_path.iterdir())) == 1


def test_a_given_tokenizer_is_used(tmp_path):
    text = (ROOT / "tinyshakespeare" / "input.txt").read_text(encoding="utf-8")
    mine = CharTokenizer.from_text(text + "é")
    tokenizer, train, _ = language_model_data("shakespeare", ROOT, tokenizer=mine, cache_dir=tmp_path)
    assert tokenizer is mine and train.tokens.max() < 66


def test_nothing_is_written_into_the_data_folder(tmp_path):
    """The token files go to the cache ($PARAGRAD_CACHE, see conftest.py), not beside the corpus."""
    before = sorted(p.relative_to(ROOT) for p in ROOT.rglob("*"))
    language_model_data("shakespeare", ROOT)
    assert sorted(p.relative_to(ROOT) for p in ROOT.rglob("*")) == before
    assert len(list((tmp_path / "paragrad-cache" / "tokens").iterdir())) == 1


def test_missing_corpus_and_bad_names(tmp_path):
    with pytest.raises(DataError, match=r"missing .*input\.txt.*PARAGRAD_DATA.*tinyshakespeare/"):
        language_model_data("shakespeare", tmp_path, download=False)
    with pytest.raises(DataError, match=r"tinystories_val_head\.txt"):
        language_model_data("tinystories", tmp_path)
    with pytest.raises(ValueError, match="unknown corpus 'wikitext'; expected one of shakespeare, tinystories"):
        language_model_data("wikitext", ROOT)
    with pytest.raises(ValueError, match="unknown tokenizer 'words'"):
        language_model_data("shakespeare", ROOT, tokenizer="words", cache_dir=tmp_path)
    assert not (tmp_path / "tinyshakespeare").exists()      # nothing left behind
