"""The parts of DistributedDataParallel, LocalSGD and DiLoCo that need no process group:
bucket assignment, and the errors raised before any communication (torch's where it has them)."""
from __future__ import annotations

import pytest
import torch

import paragrad as pg
import paragrad.distributed as dist
from paragrad import nn
from paragrad.nn.parallel.reducer import assign_buckets


def sizes(buckets, params):
    return [[params[i].numel() for i in b] for b in buckets]


def test_buckets_close_once_they_reach_the_cap():
    params = [pg.zeros(n) for n in (10, 10, 30, 5, 5, 5)]          # float32: 4 bytes each
    assert sizes(assign_buckets(params, 80), params) == [[10, 10], [30], [5, 5, 5]]
    assert sizes(assign_buckets(params, 10**6), params) == [[10, 10, 30, 5, 5, 5]]
    assert sizes(assign_buckets(params, 1), params) == [[n] for n in (10, 10, 30, 5, 5, 5)]


def test_buckets_hold_one_dtype_each():
    params = [pg.zeros(4), pg.zeros(4, dtype=pg.float64), pg.zeros(4), pg.zeros(4, dtype=pg.float64)]
    assert assign_buckets(params, 10**6) == [[0, 2], [1, 3]]


def test_ddp_is_reachable_under_torch_names():
    assert pg.nn.parallel.DistributedDataParallel is nn.parallel.distributed.DistributedDataParallel
    assert dist.LocalSGD and dist.DiLoCo


def test_wrappers_need_a_process_group():
    with pytest.raises(ValueError) as t:
        torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="Default process group has not been initialized") as p:
        nn.parallel.DistributedDataParallel(model)
    assert str(t.value) in str(p.value)
    opt = pg.optim.SGD(model.parameters(), lr=0.1)
    for wrapper in (dist.LocalSGD, dist.DiLoCo):
        with pytest.raises(ValueError, match="init_process_group"):
            wrapper(model, opt, sync_every=2)
