"""torch.utils.data's datasets: Subset, ConcatDataset, random_split, ChainDataset and StackDataset,
against PyTorch where the result is deterministic (random splits come from different generators:
checked by sizes and coverage)."""
import pytest
import torch
import torch.utils.data as tdata

import paragrad as pg
import paragrad.utils.data as pdata
from tests.helpers import check_raises


def test_subset_and_concat_index_as_torch():
    t = [torch.arange(10.0) * 2]
    p = [pg.arange(10.0) * 2]
    ts, ps = tdata.Subset(tdata.TensorDataset(*t), [4, 1, 7]), pdata.Subset(pdata.TensorDataset(*p), [4, 1, 7])
    assert len(ps) == len(ts) and [float(ps[i][0]) for i in range(3)] == [float(ts[i][0]) for i in range(3)]
    tc = tdata.ConcatDataset([range(3), range(10, 15)])
    pc = pdata.ConcatDataset([range(3), range(10, 15)])
    assert len(pc) == len(tc) and [pc[i] for i in range(-8, 8)] == [tc[i] for i in range(-8, 8)]
    assert pc.cumulative_sizes == tc.cumulative_sizes
    # a Subset of a TensorDataset batches with one gather; the same values as sample by sample
    fast = [b for (b,) in pdata.DataLoader(ps, batch_size=2)]
    slow = [b for (b,) in pdata.DataLoader(ps, batch_size=2, collate_fn=pdata.default_collate)]
    assert [b.tolist() for b in fast] == [b.tolist() for b in slow] == [[8.0, 2.0], [14.0]]


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.25, 0.25, 0.5], [0.33, 0.33, 0.34], [0.1] * 10])
def test_random_split_sizes_match_torch(lengths):
    n = sum(lengths) if all(isinstance(k, int) for k in lengths) else 13     # fractions: of 13
    got = pdata.random_split(range(n), lengths, generator=pg.Generator().manual_seed(0))
    want = tdata.random_split(range(n), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in got] == [len(s) for s in want]
    items = sorted(i for s in got for i in (s[j] for j in range(len(s))))
    assert items == list(range(sum(len(s) for s in got)))       # disjoint, covering


def test_random_split_errors_match_torch():
    for lengths in ([3, 3], [1.5, -0.5]):
        check_raises(lambda L: L.utils.data.random_split(range(10), lengths), error=ValueError)


def test_chain_and_stack_datasets():
    class Stream(pdata.IterableDataset):
        def __init__(self, items):
            self.items = items

        def __iter__(self):
            return iter(self.items)

        def __len__(self):
            return len(self.items)
    chain = pdata.ChainDataset([Stream([1, 2]), Stream([3])])
    assert list(chain) == [1, 2, 3] and len(chain) == 3
    check_raises(lambda L: list(L.utils.data.ChainDataset([[1, 2]])), match="only supports IterableDataset")
    st = pdata.StackDataset([1, 2, 3], "abc")
    assert st[1] == (2, "b") and len(st) == 3
    assert pdata.StackDataset(x=[1, 2], y=[3, 4])[0] == tdata.StackDataset(x=[1, 2], y=[3, 4])[0]
    check_raises(lambda L: L.utils.data.StackDataset([1], [1, 2]), error=ValueError)
    check_raises(lambda L: L.utils.data.StackDataset([1], y=[1]), error=ValueError)
