"""`paragrad train tinystories`: a BPE vocabulary of --vocab-size tokens trained on the corpus,
saved as tokenizer.json, and generation that starts from <|endoftext|> by default."""
from paragrad.text import load_tokenizer
from tests.cli.helpers import TINY_GPT, lm_records, run
from tests.data_paths import shared_data_file


def test_tinystories_trains_on_its_own_bpe_vocabulary_and_generates(tmp_path, capsys):
    data = shared_data_file("tinystories/tinystories_val_head.txt").parent.parent
    out = tmp_path / "run"
    assert run("train", "tinystories", "--data-dir", data, "--out", out, "--vocab-size", "300",
               *TINY_GPT, "--max-iters", "20") == 0
    tokenizer = load_tokenizer(out / "tokenizer.json")
    assert tokenizer.vocab_size == 300 and tokenizer.eot_id is not None
    assert "vocabulary 300" in capsys.readouterr().out
    assert [r["iter"] for r in lm_records(out)] == [0, 10, 20]
    assert run("generate", out / "ckpt.safetensors", "--max-new-tokens", "12", "--seed", "3") == 0
    first = capsys.readouterr().out
    assert run("generate", out / "ckpt.safetensors", "--max-new-tokens", "12", "--seed", "3") == 0
    assert capsys.readouterr().out == first and len(first) > 1
