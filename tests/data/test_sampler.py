"""torch.utils.data's samplers (sequential, batch, random, subset-random, weighted, distributed),
against PyTorch where the result is deterministic (random orders come from different generators:
checked as permutations); indices drawn on the CPU and lazily."""
import numpy as np
import pytest
import torch.utils.data as tdata

import paragrad as pg
import paragrad.utils.data as pdata
from tests.helpers import check_raises


def test_sequential_and_batch_samplers_match_torch():
    for bs, drop in ((3, False), (3, True), (10, False), (1, True)):
        got = list(pdata.BatchSampler(pdata.SequentialSampler(range(10)), bs, drop))
        want = list(tdata.BatchSampler(tdata.SequentialSampler(range(10)), bs, drop))
        assert got == want
        assert len(pdata.BatchSampler(pdata.SequentialSampler(range(10)), bs, drop)) == len(want)


@pytest.mark.parametrize("bad", [0, -1, True, 2.0])
def test_batch_sampler_rejects_bad_sizes_as_torch(bad):
    check_raises(lambda L: L.utils.data.BatchSampler(range(4), bad, False), error=ValueError)


def test_random_samplers_draw_permutations_or_with_replacement():
    g = pg.Generator().manual_seed(3)
    a = list(pdata.RandomSampler(range(10), generator=g))
    assert sorted(a) == list(range(10))
    assert a == list(pdata.RandomSampler(range(10), generator=pg.Generator().manual_seed(3)))
    more = list(pdata.RandomSampler(range(4), num_samples=10, generator=g))
    assert len(more) == 10 and sorted(more[:4]) == [0, 1, 2, 3] and sorted(more[4:8]) == [0, 1, 2, 3]
    rep = list(pdata.RandomSampler(range(5), replacement=True, num_samples=50, generator=g))
    assert len(rep) == 50 and set(rep) <= set(range(5)) and len(set(rep)) > 1
    sub = list(pdata.SubsetRandomSampler([7, 3, 9], generator=g))
    assert sorted(sub) == [3, 7, 9]
    for kw in ({"num_samples": 0}, {"replacement": 1}):
        check_raises(lambda L: L.utils.data.RandomSampler(range(3), **kw))


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (11, 4, False), (7, 2, True), (2, 4, False)])
def test_distributed_sampler_matches_torch_without_shuffle(n, replicas, drop_last):
    for rank in range(replicas):
        got = pdata.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        want = tdata.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(got) == list(want) and len(got) == len(want)


def test_distributed_sampler_shuffles_alike_per_epoch():
    parts = [pdata.DistributedSampler(range(10), 2, r, seed=5) for r in range(2)]
    first = [list(p) for p in parts]
    assert sorted(first[0] + first[1]) == list(range(10))             # a partition of the dataset
    assert [list(p) for p in parts] == first                         # same epoch, same order
    for p in parts:
        p.set_epoch(1)
    second = [list(p) for p in parts]
    assert sorted(second[0] + second[1]) == list(range(10)) and second != first
    # without num_replicas/rank the process group answers; none is initialized here
    check_raises(lambda L: L.utils.data.DistributedSampler(range(4)),
                 match="Default process group has not been initialized")
    check_raises(lambda L: L.utils.data.DistributedSampler(range(4), 2, 2), match="Invalid rank 2")


def test_weighted_random_sampler():
    g = pg.Generator().manual_seed(0)
    s = pdata.WeightedRandomSampler([0.1, 0.0, 0.9], 4000, generator=g)
    draws = np.array(list(s))
    assert len(s) == 4000 and set(draws) <= {0, 2} and abs((draws == 2).mean() - 0.9) < 0.03
    once = list(pdata.WeightedRandomSampler(pg.tensor([1.0, 1.0, 1.0, 1.0]), 4, replacement=False, generator=g))
    assert sorted(once) == [0, 1, 2, 3]
    loader = pdata.DataLoader(pdata.TensorDataset(pg.arange(3)), batch_size=2,
                              sampler=pdata.WeightedRandomSampler([0, 0, 1], 4))
    assert [b[0].tolist() for b in loader] == [[2, 2], [2, 2]]
    for args, kw in (([1.0], 0), {}), (([1.0], 2), {"replacement": 1}), (([[1.0]], 2), {}):
        check_raises(lambda L: L.utils.data.WeightedRandomSampler(*args, **kw), error=ValueError)


def test_index_draws_stay_on_the_cpu_under_a_default_device(device):
    """Samplers and random_split draw indices on their generator's device (the CPU without one),
    whatever pg.set_default_device says: the indices are read on the host."""
    pg.set_default_device(device)
    try:
        g = pg.Generator().manual_seed(0)
        assert sorted(pdata.RandomSampler(range(5), generator=g)) == list(range(5))
        assert len(list(pdata.RandomSampler(range(5), replacement=True, num_samples=7))) == 7
        assert sorted(pdata.SubsetRandomSampler([3, 1, 2])) == [1, 2, 3]
        assert sorted(len(s) for s in pdata.random_split(range(10), [3, 7])) == [3, 7]
    finally:
        pg.set_default_device(None)
    from paragrad.data.sampler import index_device
    assert index_device(None) == "cpu" and index_device(pg.Generator()) == pg.device("cpu")


@pytest.mark.parametrize("make", [
    lambda data: pdata.RandomSampler(data, replacement=True, num_samples=int(1e10)),
    lambda data: pdata.RandomSampler(data, num_samples=int(1e10)),
    lambda data: pdata.WeightedRandomSampler([1.0] * len(data), num_samples=int(1e10)),
], ids=["random with replacement", "random permutations", "weighted"])
def test_samplers_draw_lazily_as_torch(make):
    """makemore's RandomSampler(replacement=True, num_samples=int(1e10)): PyTorch draws 32 at a
    time; nothing proportional to num_samples may be made up front."""
    import itertools
    import tracemalloc
    data = list(range(50))
    tracemalloc.start()
    sampler = make(data)
    loader = pdata.DataLoader(data, batch_size=32, sampler=sampler)
    batches = list(itertools.islice(iter(loader), 3))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10 * 2**20, f"{peak / 2**20:.0f} MiB allocated for 3 batches"
    assert len(sampler) == int(1e10) and len(loader) == -(-int(1e10) // 32)
    assert [b.shape for b in batches] == [(32,)] * 3
    assert all(0 <= int(i) < 50 for b in batches for i in b)


def test_random_sampler_without_replacement_covers_each_pass():
    sampler = pdata.RandomSampler(range(10), num_samples=25)
    order = list(sampler)
    assert len(order) == 25
    assert sorted(order[:10]) == list(range(10)) and sorted(order[10:20]) == list(range(10))
    assert len(set(order[20:])) == 5
