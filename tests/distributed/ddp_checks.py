"""DistributedDataParallel checks, run on every rank under mpirun (see workers/data_parallel_worker.py).

Each check_* function raises AssertionError (or anything) on failure. The reference for
training is one process training a copy of the model on the concatenated global batch: DDP on
N ranks with per-rank batches of B must give the same parameters up to float32 rounding.
"""
from __future__ import annotations

import copy

import numpy as np

import paragrad as pg
import paragrad.distributed as dist
from paragrad import nn
from paragrad.nn.parallel import DistributedDataParallel as DDP

PER_RANK = 4        # samples per rank per step
IN, OUT = 6, 3


def rank():
    return dist.get_rank()


def world():
    return dist.get_world_size()


def mlp(seed=0):
    pg.manual_seed(seed)
    return nn.Sequential(nn.Linear(IN, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, OUT))


def global_batch(step, per_rank=PER_RANK):
    """The same (x, y) on every rank: the whole global batch of this step."""
    rng = np.random.default_rng(1000 + step)
    n = per_rank * world()
    return (pg.tensor(rng.normal(size=(n, IN)).astype(np.float32)),
            pg.tensor(rng.normal(size=(n, OUT)).astype(np.float32)))


def shard(t):
    """This rank's part of a global batch."""
    n = t.shape[0] // world()
    return t[rank() * n:(rank() + 1) * n]


def loss_fn(model, x, y):
    return nn.functional.mse_loss(model(x), y)      # a mean: averaging it over ranks is exact


def params_of(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def assert_close(got, want, what, atol=2e-6, rtol=2e-5):
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, atol=atol, rtol=rtol, err_msg=f"{what}: parameter {i}")


def assert_same_on_all_ranks(model, what):
    """Every rank holds rank 0's parameters, bit for bit."""
    for i, p in enumerate(model.parameters()):
        mine = p.detach().reshape(-1).clone()
        first = mine.clone()
        dist.broadcast(first, src=0)
        np.testing.assert_array_equal(mine.numpy(), first.numpy(), err_msg=f"{what}: parameter {i}")


def train_reference(model, make_opt, steps, start=0):
    model = copy.deepcopy(model)
    opt = make_opt(model.parameters())
    for s in range(start, start + steps):
        x, y = global_batch(s)
        opt.zero_grad()
        loss_fn(model, x, y).backward()
        opt.step()
    return params_of(model)


def train_ddp(ddp, make_opt, steps, start=0):
    opt = make_opt(ddp.parameters())
    for s in range(start, start + steps):
        x, y = global_batch(s)
        opt.zero_grad()
        loss_fn(ddp, shard(x), shard(y)).backward()
        opt.step()
    return params_of(ddp.module)


def sgd(params):
    return pg.optim.SGD(params, lr=0.1, momentum=0.9)


def adam(params):
    return pg.optim.Adam(params, lr=1e-2)


# ---- the checks --------------------------------------------------------------------------------
def check_sgd_matches_one_process_on_the_global_batch():
    model = mlp()
    want = train_reference(model, sgd, 20)
    got = train_ddp(DDP(model), sgd, 20)
    assert_close(got, want, "DDP+SGD vs one process")
    assert_same_on_all_ranks(model, "DDP+SGD")


def check_adam_matches_one_process_on_the_global_batch():
    model = mlp()
    want = train_reference(model, adam, 20)
    got = train_ddp(DDP(model), adam, 20)
    assert_close(got, want, "DDP+Adam vs one process", atol=1e-5, rtol=1e-4)
    assert_same_on_all_ranks(model, "DDP+Adam")


def check_small_buckets_give_the_same_result():
    model = mlp()
    want = train_reference(model, sgd, 5)
    ddp = DDP(model, bucket_cap_mb=50 / 2**20)      # 50 bytes: a bucket per parameter, but the first
    buckets = ddp.reducer.buckets
    assert len(buckets) >= 4, f"expected several buckets, got {len(buckets)}"
    # reverse registration order: the last layer's bias comes first
    names = [n for n, _ in model.named_parameters()]
    order = [ddp.reducer.names[i] for b in buckets for i in b.indices]
    assert order == names[::-1], order
    # when the first layer's gradients arrive, at the end of backward, the buckets of the later
    # layers are already on their way (communication overlaps backward)
    launched = []
    model[0].weight.register_hook(lambda g: launched.append(ddp.reducer.next_bucket))
    assert_close(train_ddp(ddp, sgd, 5), want, "small buckets")
    assert len(launched) == 5 and min(launched) >= len(buckets) - 2, launched
    one = DDP(mlp())
    assert len(one.reducer.buckets) == 1


def check_construction_broadcasts_rank0_state():
    model = mlp(seed=rank())                # every rank starts with other weights
    model.register_buffer("counts", pg.full((2,), float(rank())))
    want = params_of(mlp(seed=0))
    ddp = DDP(model)
    assert_close(params_of(model), want, "after construction", atol=0, rtol=0)
    assert model.counts.tolist() == [0.0, 0.0]
    train_ddp(ddp, sgd, 3)
    assert_same_on_all_ranks(model, "after training")


def check_no_sync_accumulates_then_averages_the_sum():
    model = mlp()
    ref = copy.deepcopy(model)
    ddp = DDP(model)
    opt = sgd(ddp.parameters())
    ref_opt = sgd(ref.parameters())
    for s in range(3):
        micro = [global_batch(10 * s + k) for k in range(3)]
        opt.zero_grad()
        before = dist_bytes()
        with ddp.no_sync():
            for x, y in micro[:2]:
                loss_fn(ddp, shard(x), shard(y)).backward()
        assert dist_bytes() == before, "no_sync communicated"
        # the local sums differ across ranks (each saw its own shard)
        g = ddp.module[0].weight.grad.reshape(-1).clone()
        g0 = g.clone()
        dist.broadcast(g0, src=0)
        if rank() != 0:
            assert not np.allclose(g.numpy(), g0.numpy()), "no_sync gradients were averaged"
        x, y = micro[2]
        loss_fn(ddp, shard(x), shard(y)).backward()
        opt.step()
        ref_opt.zero_grad()
        for x, y in micro:
            loss_fn(ref, x, y).backward()
        ref_opt.step()
    assert_close(params_of(model), params_of(ref), "no_sync accumulation")


def check_unused_parameter_without_the_flag_raises_naming_it():
    model = Branches()
    model.use_sometimes = True
    ddp = DDP(model)
    x, y = global_batch(0)
    try:
        loss_fn(ddp, shard(x), shard(y)).backward()
    except RuntimeError as e:
        msg = str(e)
        assert "Expected to have finished reduction" in msg, msg
        assert "unused.weight" in msg and "unused.bias" in msg, msg
        assert "find_unused_parameters=True" in msg, msg
    else:
        raise AssertionError("no error for an unused parameter")
    # the wrapper recovers: a backward through every parameter works again
    loss = loss_fn(ddp, shard(x), shard(y)) + 0 * sum(p.sum() for p in model.unused.parameters())
    loss.backward()


def check_find_unused_parameters():
    """`unused` is used on no rank: its .grad stays None. `sometimes` is used on rank 0 only:
    it gets rank 0's gradient averaged with zeros from the others."""
    model = Branches()
    ref = copy.deepcopy(model)
    ddp = DDP(model, find_unused_parameters=True, bucket_cap_mb=80 / 2**20)    # a bucket a layer
    assert len(ddp.reducer.buckets) == 3
    opt = sgd(ddp.parameters())
    for s in range(3):
        x, y = global_batch(s)
        opt.zero_grad()
        loss_fn(ddp, shard(x), shard(y)).backward()
        assert model.unused.weight.grad is None
        # reference: the used branch on every shard, `sometimes` on rank 0's shard only
        ref.load_state_dict(model.state_dict())
        ref.zero_grad()
        loss = 0
        for r in range(world()):
            n = x.shape[0] // world()
            ref.use_sometimes = r == 0
            loss = loss + loss_fn(ref, x[r * n:(r + 1) * n], y[r * n:(r + 1) * n])
        (loss / world()).backward()
        assert_close([p.grad.numpy() for p in model.used.parameters()],
                     [p.grad.numpy() for p in ref.used.parameters()], "used branch gradient")
        assert_close([p.grad.numpy() for p in model.sometimes.parameters()],
                     [p.grad.numpy() for p in ref.sometimes.parameters()], "rank-0 branch gradient")
        opt.step()
    assert_same_on_all_ranks(model, "find_unused_parameters")


class Branches(nn.Module):
    """`used` always, `sometimes` on rank 0 only (use_sometimes), `unused` never."""

    def __init__(self):
        super().__init__()
        pg.manual_seed(0)
        self.used = nn.Linear(IN, OUT)
        self.sometimes = nn.Linear(IN, OUT)
        self.unused = nn.Linear(IN, OUT)
        self.use_sometimes = dist.get_rank() == 0

    def forward(self, x):
        out = self.used(x)
        return out + self.sometimes(x) if self.use_sometimes else out


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(IN, OUT)
        self.register_buffer("scale", pg.ones(1))

    def forward(self, x):
        return self.lin(x) * self.scale


def check_buffers_are_broadcast_before_each_forward():
    ddp = DDP(Scaled())
    ddp.module.scale.fill_(float(rank() + 2))       # only rank 0's value counts
    x = pg.ones(1, IN)
    out = ddp(x)
    np.testing.assert_allclose(ddp.module.scale.numpy(), [2.0])
    np.testing.assert_allclose(out.detach().numpy(), (ddp.module.lin(x) * 2).detach().numpy())
    off = DDP(Scaled(), broadcast_buffers=False)
    off.module.scale.fill_(float(rank() + 2))
    off(x)
    np.testing.assert_allclose(off.module.scale.numpy(), [rank() + 2.0])


def check_state_dict_has_the_module_prefix():
    model = mlp()
    ddp = DDP(model)
    sd = ddp.state_dict()
    assert list(sd) == ["module." + k for k in model.state_dict()], list(sd)
    plain = mlp(seed=5)
    plain.load_state_dict({k[len("module."):]: v for k, v in sd.items()})
    assert_close(params_of(plain), params_of(model), "state_dict round trip", atol=0, rtol=0)
    assert ddp.module is model


def check_bytes_per_step_are_the_gradient_bytes():
    model = mlp()
    model.register_buffer("steps", pg.zeros(3))
    ddp = DDP(model, bucket_cap_mb=400 / 2**20)
    grad_bytes = sum(p.numel() * 4 for p in model.parameters())
    rank0_buffers = 12 if rank() == 0 else 0       # a broadcast counts on its source only
    assert ddp.bytes_per_step == grad_bytes + rank0_buffers
    x, y = global_batch(0)
    before, mine = dist_bytes(), ddp.bytes_communicated
    for _ in range(2):
        loss_fn(ddp, shard(x), shard(y)).backward()
    sent = dist_bytes() - before
    assert sent == 2 * ddp.bytes_per_step, (sent, grad_bytes)
    assert ddp.bytes_communicated - mine == sent
    if rank() == 0:
        print(f"DDP bytes per step, MLP {IN}-16-16-{OUT} ({grad_bytes // 4} parameters): "
              f"{grad_bytes} bytes of gradients in {len(ddp.reducer.buckets)} buckets")


def check_an_interrupted_backward_is_reported_at_the_next_forward():
    model = mlp()
    ddp = DDP(model, bucket_cap_mb=50 / 2**20)

    def fail(p):
        raise ValueError("stop")
    handle = model[2].weight.register_post_accumulate_grad_hook(fail)
    x, y = global_batch(0)
    try:
        loss_fn(ddp, shard(x), shard(y)).backward()
    except ValueError:
        pass
    handle.remove()
    try:
        ddp(shard(x))
    except RuntimeError as e:
        assert "Expected to have finished reduction" in str(e) and "0.weight" in str(e), str(e)
    else:
        raise AssertionError("the interrupted reduction went unnoticed")
    want = train_reference(model, sgd, 2)
    assert_close(train_ddp(ddp, sgd, 2), want, "training after the error")


def check_bad_arguments():
    model = mlp()
    for kwargs, error, match in (({"bucket_cap_mb": 0}, ValueError, "bucket_cap_mb"),
                                 ({"device_ids": [0]}, ValueError, "device_ids")):
        try:
            DDP(model, **kwargs)
        except error as e:
            assert match in str(e), str(e)
        else:
            raise AssertionError(f"DDP accepted {kwargs}")
    frozen = nn.Linear(2, 2).requires_grad_(False)
    try:
        DDP(frozen)
    except RuntimeError as e:
        assert "doesn't have any parameter that requires a gradient" in str(e)
    else:
        raise AssertionError("DDP accepted a module without trainable parameters")
    opt = sgd(model.parameters())
    for bad in (0, -1, 1.5, True):
        for wrapper in (dist.LocalSGD, dist.DiLoCo):
            try:
                wrapper(model, opt, sync_every=bad)
            except ValueError as e:
                assert "sync_every must be a positive int" in str(e), str(e)
            else:
                raise AssertionError(f"{wrapper.__name__} accepted sync_every={bad!r}")


def check_modules_that_differ_across_ranks_are_refused():
    if world() == 1:
        return              # (nothing to differ from)
    model = nn.Linear(IN, OUT + rank())
    try:
        DDP(model)
    except RuntimeError as e:
        assert "different parameters" in str(e), str(e)
    else:
        raise AssertionError("no error for modules of different sizes")


def dist_bytes():
    """This rank's payload bytes so far, by paragrad.distributed's own count."""
    return dist.bytes_communicated()


CHECKS = [v for k, v in sorted(globals().items()) if k.startswith("check_")]
