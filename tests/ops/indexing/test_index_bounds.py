"""Index bounds checks on a device read nothing on the host when the indices' range is known
from where they came from (host data, randint, randperm, arange; slices, reshapes and
gathers of those), still raise for a bad index, and forget a range once the buffer is written
in place. Run on the CPU's stand-in device (tests/host_reads.py)."""
import numpy as np
import pytest

import paragrad as pg
import paragrad.nn.functional as F
from tests.host_reads import counting_device  # noqa: F401  (a fixture)


@pytest.mark.parametrize("make", [
    lambda: pg.tensor([3, 0, 7, 9], device="cuda"),
    lambda: pg.tensor(np.array([3, 0, 7, 9]), device="cuda"),
    lambda: pg.tensor([3, 0, 7, 9]).to("cuda"),
    lambda: pg.randint(0, 10, (4,), device="cuda"),
    lambda: pg.randperm(10, device="cuda")[2:6],
    lambda: pg.arange(10, device="cuda").reshape(2, 5)[1, ::2],
    lambda: pg.tensor([[1, 9], [2, 3]], device="cuda")[pg.tensor([1, 0], device="cuda")],
], ids=["list", "array", "to", "randint", "randperm slice", "arange view", "gathered"])
def test_indexing_with_indices_of_known_range_reads_nothing(counting_device, make):
    x, labels = pg.randn(10, 3, device="cuda"), pg.arange(10, device="cuda")
    idx = make()
    counting_device.reads = 0
    y = x[idx]
    F.cross_entropy(pg.randn(idx.numel(), 10, device="cuda"), labels[idx.reshape(-1)])
    assert counting_device.reads == 0
    assert y.shape == tuple(idx.shape) + (3,)


def test_a_bad_index_still_raises(counting_device):
    x = pg.zeros(5, device="cuda")
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 5"):
        x[pg.tensor([1, 9], device="cuda")]
    wide = pg.arange(10, device="cuda")[:4]     # known range 0..9, values 0..3: read, then fine
    assert x[wide].shape == (4,)
    with pytest.raises(IndexError, match="Target 12 is out of bounds for 10 classes"):
        F.cross_entropy(pg.zeros(2, 10, device="cuda"), pg.tensor([1, 12], device="cuda"))
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(pg.tensor([[0, 5]], device="cuda"), pg.zeros(5, 2, device="cuda"))
    with pytest.raises(IndexError, match="index 5 is out of range for dimension 0"):
        x.index_select(0, pg.tensor([5], device="cuda"))


def test_embedding_of_ids_of_known_range_reads_nothing(counting_device):
    weight = pg.randn(50, 4, device="cuda", requires_grad=True)
    tokens = pg.tensor(np.arange(40) % 50, device="cuda")           # a corpus uploaded once
    counting_device.reads = 0
    F.embedding(tokens[8:24].reshape(2, 8), weight).sum().backward()
    assert counting_device.reads == 0


def test_an_in_place_write_forgets_the_range(counting_device):
    x = pg.zeros(5, device="cuda")
    idx = pg.tensor([0, 1, 2], device="cuda")
    idx.view(3)[1:].add_(10)            # through a view: the shared buffer now holds 11 and 12
    with pytest.raises(IndexError, match="index 12 is out of bounds"):
        x[idx]
    idx = pg.tensor([0, 1], device="cuda")
    idx.copy_(pg.tensor([4, 7]))
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        x[idx]


def test_makemore_style_indices_read_nothing(counting_device):
    """makemore's MLP: a roll of uploaded ids, a Python int written into the first column, and
    targets padded with ignore_index -1: every range stays known, no host read."""
    emb = pg.nn.Embedding(28, 4).to("cuda")
    idx = pg.tensor(np.arange(12).reshape(3, 4) % 27, device="cuda")
    targets = pg.tensor([[1, 2, -1, -1], [3, -1, -1, -1], [0, 0, 26, -1]], device="cuda")
    counting_device.reads = 0
    idx = pg.roll(idx, 1, 1)
    idx[:, 0] = 27
    logits = emb(idx) @ pg.randn(4, 27, device="cuda")
    F.cross_entropy(logits.view(-1, 27), targets.view(-1), ignore_index=-1).backward()
    assert counting_device.reads == 0


def test_a_written_int_outside_the_table_still_raises(counting_device):
    idx = pg.roll(pg.tensor([[0, 1, 2]], device="cuda"), 1, 1)
    idx[:, 0] = 28                      # the range widens to 0..28, past the 28-row table
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(idx, pg.zeros(28, 2, device="cuda"))
    padded = pg.tensor([1, -1, 3], device="cuda")
    with pytest.raises(IndexError, match="Target -1 is out of bounds"):
        F.cross_entropy(pg.zeros(3, 5, device="cuda"), padded)      # -1 not ignored here


def test_negative_ids_are_refused_where_torch_refuses_them(counting_device):
    """embedding and index_select refuse -1 on a device too (its take would wrap or read past
    the table); x[idx] takes it from the end."""
    w = pg.arange(10.0, device="cuda").reshape(5, 2)
    neg = pg.tensor([0, -1], device="cuda")
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(neg, w)
    with pytest.raises(IndexError, match="index out of range in self"):
        w.index_select(0, neg)
    assert w[neg].tolist() == [[0.0, 1.0], [8.0, 9.0]]


def test_index_select_take_along_dim_and_index_fill_of_known_ids_read_nothing(counting_device):
    w = pg.randn(5, 2, device="cuda")
    ids, negative = pg.tensor([4, 0, 2], device="cuda"), pg.tensor([4, 0, -1], device="cuda")
    counting_device.reads = 0
    w.index_select(0, ids)
    pg.take_along_dim(w, negative.reshape(3, 1), 0)       # (wrapped modulo 5: range 0..4)
    w.index_fill(0, negative, 0.0)
    assert counting_device.reads == 0
