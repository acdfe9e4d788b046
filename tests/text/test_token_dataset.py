"""paragrad.data.TokenDataset and random_windows: (B, T) int64 windows of a real token file,
y = x shifted by one token, offsets from a seeded generator (reproducible), and the device-side
gather equal to a NumPy gather at the same offsets."""
import numpy as np
import pytest

import paragrad as pg
from paragrad.data import TokenDataset, prepare_tokens, random_windows
from paragrad.text import CharTokenizer
from tests.data_paths import shared_data_file
from tests.host_reads import counting_device  # noqa: F401  (a fixture)

B, T = 8, 32


@pytest.fixture(scope="module")
def shakespeare_tokens(tmp_path_factory):
    corpus = shared_data_file("tinyshakespeare/input.txt")
    tok = CharTokenizer.from_text(corpus.read_text(encoding="utf-8"))
    train, _ = prepare_tokens(corpus, tok, cache_dir=tmp_path_factory.mktemp("tokens"))
    return TokenDataset(train)


def _seeded(seed, device="cpu"):
    return pg.Generator(device).manual_seed(seed)


def test_memory_map_of_the_file(shakespeare_tokens):
    ds = shakespeare_tokens
    assert len(ds) == 1003854
    assert isinstance(ds.tokens, np.memmap) and not ds.tokens.flags.writeable
    assert np.array_equal(ds.tokens[:5], np.fromfile(ds.path, "<u2", count=5))


def test_get_batch_windows_and_targets(shakespeare_tokens, device):
    ds = shakespeare_tokens
    x, y = ds.get_batch(B, T, generator=_seeded(1), device=device)
    assert tuple(x.shape) == tuple(y.shape) == (B, T) and x.dtype is y.dtype is pg.int64
    assert x.device == y.device == pg.device(device)
    starts = pg.randint(0, len(ds) - T, (B, 1), generator=_seeded(1)).numpy()   # the same draw
    tokens = np.asarray(ds.tokens, np.int64)
    assert np.array_equal(x.cpu().numpy(), tokens[starts + np.arange(T)])
    assert np.array_equal(y.cpu().numpy(), tokens[starts + 1 + np.arange(T)])
    assert np.array_equal(x.cpu().numpy()[:, 1:], y.cpu().numpy()[:, :-1])


def test_get_batch_is_reproducible_per_seed(shakespeare_tokens):
    ds = shakespeare_tokens
    a, _ = ds.get_batch(B, T, generator=_seeded(7))
    b, _ = ds.get_batch(B, T, generator=_seeded(7))
    c, _ = ds.get_batch(B, T, generator=_seeded(8))
    assert np.array_equal(a.numpy(), b.numpy()) and not np.array_equal(a.numpy(), c.numpy())
    pg.manual_seed(3)
    d, _ = ds.get_batch(B, T)                                   # the default generator
    pg.manual_seed(3)
    assert np.array_equal(d.numpy(), ds.get_batch(B, T)[0].numpy())


def test_offsets_stay_inside_the_stream(tmp_path):
    path = tmp_path / "short.bin"
    np.arange(T + 1, dtype="<u2").tofile(path)                  # room for exactly one window
    ds = TokenDataset(path)
    x, y = ds.get_batch(4, T)
    assert (x.numpy() == np.arange(T)).all() and (y.numpy() == np.arange(1, T + 1)).all()
    with pytest.raises(ValueError, match=f"at least {T + 2} tokens, got {T + 1}"):
        ds.get_batch(4, T + 1)
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert len(TokenDataset(empty)) == 0


def test_tokens_on_device(shakespeare_tokens, device):
    t = shakespeare_tokens.tokens_on_device(device)
    assert t.dtype is pg.int64 and t.device == pg.device(device) and tuple(t.shape) == (1003854,)
    assert np.array_equal(t[-100:].cpu().numpy(), shakespeare_tokens.tokens[-100:])


def test_random_windows_equal_a_numpy_gather(shakespeare_tokens, device):
    tokens = shakespeare_tokens.tokens_on_device(device)
    x, y = random_windows(tokens, B, T, generator=_seeded(5, device))
    assert tuple(x.shape) == tuple(y.shape) == (B, T) and x.dtype is pg.int64
    assert x.device == y.device == pg.device(device)
    starts = pg.randint(0, tokens.shape[0] - T, (B, 1), generator=_seeded(5, device),
                        device=device).cpu().numpy()                                      # (B, 1)
    host = np.asarray(shakespeare_tokens.tokens, np.int64)
    assert np.array_equal(x.cpu().numpy(), host[starts + np.arange(T)])
    assert np.array_equal(y.cpu().numpy(), host[starts + 1 + np.arange(T)])
    x2, _ = random_windows(tokens, B, T, generator=_seeded(6, device))
    assert not np.array_equal(x.cpu().numpy(), x2.cpu().numpy())


def test_random_windows_and_get_batch_draw_the_same_batch_on_the_cpu(shakespeare_tokens):
    x, y = random_windows(shakespeare_tokens.tokens_on_device(), B, T, generator=_seeded(9))
    x2, y2 = shakespeare_tokens.get_batch(B, T, generator=_seeded(9))
    assert np.array_equal(x.numpy(), x2.numpy()) and np.array_equal(y.numpy(), y2.numpy())


def test_random_windows_refuses_bad_streams():
    with pytest.raises(ValueError, match="1-D token tensor"):
        random_windows(pg.zeros(4, 4, dtype=pg.int64), 2, 2)
    with pytest.raises(ValueError, match="at least 5 tokens, got 4"):
        random_windows(pg.arange(4), 2, 4)


def test_random_windows_read_nothing_back_from_the_device(counting_device, tmp_path):
    # a language-model step on the stand-in GPU: drawing the batch, the embedding and the loss
    # must not read the device (in eager mode too: a read stalls the step until the GPU is done)
    path = tmp_path / "tokens.bin"
    (np.arange(5000) % 97).astype("<u2").tofile(path)
    tokens = TokenDataset(path).tokens_on_device("cuda")
    embedding = pg.nn.Embedding(97, 16).to("cuda")
    counting_device.reads = 0
    x, y = random_windows(tokens, B, T)
    logits = embedding(x) @ embedding.weight.T                                   # (B, T, 97)
    pg.nn.functional.cross_entropy(logits.reshape(B * T, 97), y.reshape(B * T)).backward()
    assert counting_device.reads == 0
    assert np.array_equal((x.cpu().numpy() + 1) % 97, y.cpu().numpy())
