"""LocalSGD and DiLoCo checks, run on every rank under mpirun (see workers/data_parallel_worker.py).

DiLoCo is checked against a NumPy simulation of every rank: one parameter vector w, rank r's
loss sum(c_r * w) + sum(w**2)/2, so its gradient c_r + w is known in closed form and the inner
SGD steps, the averaged pseudo-gradient and the outer Nesterov steps can be replayed exactly.
"""
from __future__ import annotations

import copy

import numpy as np

import paragrad as pg
import paragrad.distributed as dist
from paragrad import nn
from paragrad.nn.parallel import DistributedDataParallel as DDP

from tests.distributed.ddp_checks import (assert_close, assert_same_on_all_ranks, dist_bytes,
                                          global_batch, loss_fn, mlp, params_of, rank, shard, world)

N = 5               # the length of the parameter vector of the DiLoCo checks


def inner_sgd(params):
    return pg.optim.SGD(params, lr=0.1)


def local_steps(model, wrapper, steps, start=0):
    for s in range(start, start + steps):
        x, y = global_batch(s)
        wrapper.zero_grad()
        loss_fn(model, shard(x), shard(y)).backward()
        wrapper.step()


def check_local_sgd_every_step_equals_ddp():
    model, twin = mlp(), mlp()
    ddp = DDP(twin)
    opt = inner_sgd(ddp.parameters())
    wrapper = dist.LocalSGD(model, inner_sgd(model.parameters()), sync_every=1)
    for s in range(10):
        x, y = global_batch(s)
        for m, o in ((model, wrapper), (ddp, opt)):
            o.zero_grad()
            loss_fn(m, shard(x), shard(y)).backward()
            o.step()
    assert_close(params_of(model), params_of(twin), "LocalSGD(sync_every=1) vs DDP")


def check_local_sgd_averages_every_n_steps():
    model = mlp(seed=rank())
    model.register_buffer("stat", pg.full((3,), float(rank())))
    model.register_buffer("count", pg.tensor([rank()]))
    wrapper = dist.LocalSGD(model, inner_sgd(model.parameters()), sync_every=4)
    assert_same_on_all_ranks(model, "LocalSGD construction")     # rank 0's state everywhere
    model.stat.fill_(float(rank()))         # buffers that drift apart between synchronizations
    model.count.fill_(rank())
    param_bytes = sum(p.numel() * 4 for p in model.parameters())
    assert wrapper.sync_bytes == param_bytes + 12
    assert wrapper.bytes_per_step == (param_bytes + 12) / 4
    before = dist_bytes()
    local_steps(model, wrapper, 3)
    assert dist_bytes() == before, "LocalSGD communicated between synchronizations"
    snapshot = params_of(model)
    local_steps(model, wrapper, 1, start=3)
    assert dist_bytes() - before == param_bytes + 12
    assert_same_on_all_ranks(model, "after the 4th step")
    mean = (world() - 1) / 2
    np.testing.assert_allclose(model.stat.numpy(), [mean] * 3, rtol=1e-6)
    assert model.count.tolist() == [rank()], "integer buffers are not averaged"
    # the average of the ranks' local steps from the snapshot
    twin = mlp()
    for p, v in zip(twin.parameters(), snapshot):
        p.detach().copy_(pg.tensor(v))
    one = inner_sgd(twin.parameters())
    x, y = global_batch(3)
    loss_fn(twin, shard(x), shard(y)).backward()
    one.step()
    mine = [p.detach().clone() for p in twin.parameters()]
    for t in mine:
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert_close(params_of(model), [t.numpy() for t in mine], "average of local steps")


def check_local_sgd_state_dict_round_trip():
    straight = mlp()
    w = dist.LocalSGD(straight, pg.optim.SGD(straight.parameters(), lr=0.1, momentum=0.9), sync_every=3)
    local_steps(straight, w, 7)
    resumed = mlp()
    w1 = dist.LocalSGD(resumed, pg.optim.SGD(resumed.parameters(), lr=0.1, momentum=0.9), sync_every=3)
    local_steps(resumed, w1, 4)
    saved, weights = w1.state_dict(), copy.deepcopy(resumed.state_dict())
    assert saved["step_count"] == 4
    fresh = mlp(seed=9)
    fresh.load_state_dict(weights)
    w2 = dist.LocalSGD(fresh, pg.optim.SGD(fresh.parameters(), lr=0.1, momentum=0.9), sync_every=3)
    fresh.load_state_dict(weights)      # (construction broadcast rank 0's: each rank its own again)
    w2.load_state_dict(saved)
    assert w2.step_count == 4
    local_steps(fresh, w2, 3, start=4)
    assert_close(params_of(fresh), params_of(straight), "LocalSGD resumed vs straight")
    try:
        dist.LocalSGD(fresh, pg.optim.SGD(fresh.parameters(), lr=0.1), sync_every=2).load_state_dict(saved)
    except ValueError as e:
        assert "sync_every=3" in str(e), str(e)
    else:
        raise AssertionError("a checkpoint of another sync_every was accepted")


# ---- DiLoCo ------------------------------------------------------------------------------------
class Vector(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(pg.tensor(np.linspace(-1.0, 1.0, N, dtype=np.float32)))


def c(r):
    """Rank r's linear term."""
    return np.arange(N, dtype=np.float64) * (r + 1) / 4 - r


def vector_step(model, wrapper):
    wrapper.zero_grad()
    w = model.w
    ((w * pg.tensor(c(rank()).astype(np.float32))).sum() + (w * w).sum() / 2).backward()
    wrapper.step()


def diloco_reference(steps, H, inner_lr, outer_lr, momentum, nesterov):
    """(global params after each synchronization, final local params of this rank) in float64."""
    theta = np.linspace(-1.0, 1.0, N)
    local = [theta.copy() for _ in range(world())]
    buf, history = None, []
    for s in range(1, steps + 1):
        for r in range(world()):
            local[r] = local[r] - inner_lr * (c(r) + local[r])
        if s % H == 0:
            delta = np.mean([theta - lr_ for lr_ in local], axis=0)
            buf = delta.copy() if buf is None else momentum * buf + delta
            update = delta + momentum * buf if nesterov else buf
            theta = theta - outer_lr * update
            local = [theta.copy() for _ in range(world())]
            history.append(theta.copy())
    return history, local[rank()]


def check_diloco_outer_steps_match_numpy():
    for nesterov, momentum in ((True, 0.9), (False, 0.5)):
        model = Vector()
        wrapper = dist.DiLoCo(model, pg.optim.SGD(model.parameters(), lr=0.1), sync_every=3,
                              outer_lr=0.7, outer_momentum=momentum, nesterov=nesterov)
        history, final = diloco_reference(11, 3, 0.1, 0.7, momentum, nesterov)
        for k in range(3):      # three outer steps: momentum carries over
            for _ in range(3):
                vector_step(model, wrapper)
            np.testing.assert_allclose(wrapper.global_params[0].detach().numpy(), history[k],
                                       rtol=1e-5, atol=1e-6, err_msg=f"outer step {k + 1}")
            np.testing.assert_allclose(model.w.detach().numpy(), history[k], rtol=1e-5, atol=1e-6)
        for _ in range(2):
            vector_step(model, wrapper)
        np.testing.assert_allclose(model.w.detach().numpy(), final, rtol=1e-5, atol=1e-6,
                                   err_msg="local steps after the last synchronization")


def check_diloco_state_dict_round_trip():
    def make(model):
        return dist.DiLoCo(model, pg.optim.Adam(model.parameters(), lr=0.05), sync_every=3)

    straight = Vector()
    w = make(straight)
    for _ in range(10):
        vector_step(straight, w)
    resumed = Vector()
    w1 = make(resumed)
    for _ in range(7):          # two outer steps (momentum buffers set) and one inner step
        vector_step(resumed, w1)
    saved, weights = w1.state_dict(), copy.deepcopy(resumed.state_dict())
    assert set(saved) >= {"optimizer", "outer_optimizer", "global_params", "step_count"}
    fresh = Vector()
    fresh.w.detach().fill_(3.0)
    w2 = make(fresh)
    fresh.load_state_dict(weights)
    w2.load_state_dict(saved)
    for _ in range(3):
        vector_step(fresh, w2)
    np.testing.assert_allclose(fresh.w.detach().numpy(), straight.w.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(w2.global_params[0].detach().numpy(),
                               w.global_params[0].detach().numpy(), rtol=1e-6)


def check_diloco_communicates_h_times_less_than_ddp():
    H, steps = 5, 10
    model = mlp()
    wrapper = dist.DiLoCo(model, pg.optim.AdamW(model.parameters(), lr=1e-2), sync_every=H)
    param_bytes = sum(p.numel() * 4 for p in model.parameters())
    before = dist_bytes()
    local_steps(model, wrapper, steps)
    diloco = dist_bytes() - before
    assert diloco == steps // H * param_bytes, (diloco, param_bytes)
    assert wrapper.bytes_per_step == param_bytes / H
    twin = mlp()
    ddp = DDP(twin, broadcast_buffers=False)
    opt = pg.optim.AdamW(ddp.parameters(), lr=1e-2)
    before = dist_bytes()
    local_steps(ddp, opt, steps)
    synchronous = dist_bytes() - before
    assert synchronous == steps * param_bytes
    assert synchronous == H * diloco
    assert_same_on_all_ranks(model, "DiLoCo after a synchronization")
    third = mlp()
    local = dist.LocalSGD(third, inner_sgd(third.parameters()), sync_every=H)
    if rank() == 0:
        print(f"bytes per step, MLP ({param_bytes // 4} parameters): DDP {ddp.bytes_per_step}, "
              f"LocalSGD(sync_every={H}) {local.bytes_per_step:g}, DiLoCo(sync_every={H}) "
              f"{wrapper.bytes_per_step:g}")


CHECKS = [v for k, v in sorted(globals().items()) if k.startswith("check_")]
