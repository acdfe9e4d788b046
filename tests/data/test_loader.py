"""paragrad.data.DataLoader: batches, seeded shuffling, collation, and PyTorch's options (sampler,
batch_sampler, batch_size=None, iterable datasets) with their errors, against torch.utils.data."""
import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import paragrad as pg
import paragrad.utils.data as pdata
from paragrad.data import DataLoader, TensorDataset, default_collate
from tests.helpers import check_raises


def test_tensor_dataset_and_loader_batches():
    x, y = pg.arange(10).reshape(10, 1).float(), pg.arange(10)
    ds = TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    assert batches[1][1].tolist() == [4, 5, 6, 7]
    assert len(DataLoader(ds, batch_size=4)) == 3
    dl = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dl) == 2 and [b[0].shape[0] for b in dl] == [4, 4]


def test_shuffle_is_seeded_and_covers_everything():
    ds = TensorDataset(pg.arange(100))
    order = lambda seed: [int(v) for b in DataLoader(ds, 10, shuffle=True, generator=pg.Generator().manual_seed(seed)) for v in b[0]]  # noqa: E731
    a, b, c = order(1), order(1), order(2)
    assert a == b and a != c and sorted(a) == list(range(100))
    g = pg.Generator().manual_seed(3)
    dl = DataLoader(ds, 100, shuffle=True, generator=g)
    assert next(iter(dl))[0].tolist() != next(iter(dl))[0].tolist()   # a new order every epoch


def test_collate_and_custom_collate():
    samples = [(pg.tensor([1.0, 2.0]), 1, {"k": 0.5}), (pg.tensor([3.0, 4.0]), 2, {"k": 1.5})]
    x, y, d = default_collate(samples)
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]] and y.tolist() == [1, 2] and d["k"].tolist() == [0.5, 1.5]

    class Squares(pg.data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return i * i
    assert [b.tolist() for b in DataLoader(Squares(), 2)] == [[0, 1], [4, 9], [16]]
    assert list(DataLoader(Squares(), 2, collate_fn=sum)) == [1, 13, 16]


def test_loader_rejects_bad_batch_size():
    check_raises(lambda L: L.utils.data.DataLoader(L.utils.data.TensorDataset(L.zeros(3)), batch_size=0),
                 match="batch_size")


def test_torch_style_import_path_and_compat_options():
    from paragrad.utils.data import DataLoader as DL, TensorDataset as TD
    dl = DL(TD(pg.arange(6)), batch_size=4, num_workers=2, pin_memory=True)
    assert [b[0].tolist() for b in dl] == [[0, 1, 2, 3], [4, 5]]
    check_raises(lambda L: L.utils.data.DataLoader(L.utils.data.TensorDataset(L.arange(6)), num_workers=-1),
                 match="num_workers")


def _lists(batches):
    return [b.tolist() if hasattr(b, "tolist") else list(b) for b in batches]


class _Stream(tdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(np.arange(self.n, dtype=np.float32).reshape(-1, 1) * 3)


class _PgStream(pdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(np.arange(self.n, dtype=np.float32).reshape(-1, 1) * 3)


@pytest.mark.parametrize("kw", [{"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": None}])
def test_iterable_dataset_batches_as_torch(kw):
    got = _lists(pdata.DataLoader(_PgStream(7), **kw))
    want = _lists(tdata.DataLoader(_Stream(7), **kw))
    assert got == want


def test_loader_options_and_their_errors_match_torch():
    t, p = tdata.TensorDataset(torch.arange(10)), pdata.TensorDataset(pg.arange(10))
    # PyTorch's positional order: (dataset, batch_size, shuffle, sampler, batch_sampler,
    # num_workers, collate_fn, pin_memory, drop_last)
    assert len(pdata.DataLoader(p, 4, False, None, None, 0, None, False, True)) == \
        len(tdata.DataLoader(t, 4, False, None, None, 0, None, False, True)) == 2
    got = [b.tolist() for (b,) in pdata.DataLoader(p, sampler=[9, 0, 5, 5], batch_size=3)]
    want = [b.tolist() for (b,) in tdata.DataLoader(t, sampler=[9, 0, 5, 5], batch_size=3)]
    assert got == want
    got = [b.tolist() for (b,) in pdata.DataLoader(p, batch_sampler=[[1, 2], [8]])]
    want = [b.tolist() for (b,) in tdata.DataLoader(t, batch_sampler=[[1, 2], [8]])]
    assert got == want
    assert [x[0].item() for x in pdata.DataLoader(p, batch_size=None)][:3] == [0, 1, 2]
    for kw in ({"sampler": [0], "shuffle": True}, {"batch_sampler": [[0]], "batch_size": 2},
               {"batch_sampler": [[0]], "drop_last": True}, {"batch_size": None, "drop_last": True},
               {"prefetch_factor": 2}, {"persistent_workers": True}, {"timeout": -1}):
        check_raises(lambda L: L.utils.data.DataLoader({torch: t, pg: p}[L], **kw), error=ValueError)
    stream = {torch: _Stream(3), pg: _PgStream(3)}
    check_raises(lambda L: L.utils.data.DataLoader(stream[L], shuffle=True), error=ValueError)
