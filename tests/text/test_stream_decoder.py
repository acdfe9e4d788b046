"""paragrad.text.StreamDecoder: a growing token sequence decoded a token at a time joins to
decode of the whole, for BPE tokens that split UTF-8 characters (and bytes that never make one)
and for characters; nothing incomplete is let out early; a token costs the same late as early."""
import random
import time

import pytest

from paragrad.text import BPETokenizer, CharTokenizer, StreamDecoder
from tests.data_paths import shared_data_file


@pytest.fixture(scope="module")
def bpe():
    text = shared_data_file("tinystories/tinystories_val_head.txt").read_text(encoding="utf-8")
    return BPETokenizer.train([text[:50_000], "日本語 🙂 naïve"], vocab_size=400)


def _pieces(tokenizer, ids):
    stream = StreamDecoder(tokenizer)
    return [stream.push(i) for i in ids] + [stream.flush()]


def test_bpe_pieces_join_to_decode_of_the_whole(bpe):
    rng = random.Random(0)
    for _ in range(300):        # random ids: bytes that split characters, and bytes that aren't UTF-8
        ids = [rng.randrange(bpe.vocab_size) for _ in range(rng.randrange(1, 60))]
        assert "".join(_pieces(bpe, ids)) == bpe.decode(ids)


def test_a_character_split_across_tokens_waits_for_its_last_byte(bpe):
    table = bpe.token_bytes()
    byte_id = {t[0]: i for i, t in enumerate(table) if len(t) == 1}
    ids = [byte_id[b] for b in "a日🙂".encode()]             # one token a byte: 1 + 3 + 4
    assert _pieces(bpe, ids) == ["a", "", "", "日", "", "", "", "🙂", ""]
    # a character never finished: U+FFFD at the end, as decode gives
    assert _pieces(bpe, ids[:3]) == ["a", "", "", "\ufffd"] and bpe.decode(ids[:3]) == "a\ufffd"
    # a stream decoder is ready for a new sequence after flush
    stream = StreamDecoder(bpe)
    assert [stream.push(ids[1]), stream.flush(), stream.push(ids[0])] == ["", "\ufffd", "a"]


def test_char_pieces_are_the_characters():
    tok = CharTokenizer("\nab日🙂\ufffd")
    ids = [0, 1, 3, 5, 4, 2]
    assert _pieces(tok, ids) == ["\n", "a", "日", "\ufffd", "🙂", "b", ""]
    with pytest.raises(ValueError, match=r"id 6 is outside the vocabulary \[0, 6\)"):
        StreamDecoder(tok).push(6)
    with pytest.raises(ValueError, match="id -1"):
        StreamDecoder(tok).push(-1)


def test_a_token_costs_the_same_late_as_early(bpe):
    """Decoding the whole again per token cost n^2: 8x the tokens took 64x the time."""
    def seconds(n):
        stream, ids = StreamDecoder(bpe), [i % bpe.vocab_size for i in range(n)]
        start = time.perf_counter()
        for i in ids:
            stream.push(i)
        return time.perf_counter() - start
    seconds(2_000)              # (warm)
    assert seconds(80_000) < 40 * max(seconds(10_000), 1e-4)    # linear: 8x; quadratic: 64x
