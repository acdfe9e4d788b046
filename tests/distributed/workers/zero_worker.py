"""ZeroRedundancyOptimizer against the unsharded optimizer on every rank (`zero_worker.py`: mpi,
CPU tensors; `zero_worker.py nccl`: CUDA tensors, one GPU a rank): the same averaged gradients,
bit-for-bit equal parameters after each step (AdamW and SGD with momentum, two parameter groups,
in one run the second added by add_param_group, a scheduler's lr), each rank holding the state of
its own parameters only, the consolidated state dict equal to the unsharded one, a load of that
dict continuing as the unsharded optimizer does, and the refused options. Prints "rank R: zero
checks ok"."""
import datetime
import sys

import numpy as np

import paragrad as pg
import paragrad.distributed as dist
from paragrad.distributed.coalesced import all_reduce_coalesced
from paragrad.distributed.optim import ZeroRedundancyOptimizer

BACKEND = sys.argv[1] if len(sys.argv) > 1 else "mpi"
dist.init_process_group(BACKEND, timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
DEVICE = "cpu" if BACKEND == "mpi" else f"cuda:{rank % pg.cuda.device_count()}"


def model():
    pg.manual_seed(0)
    return pg.nn.Sequential(pg.nn.Linear(6, 16), pg.nn.Tanh(), pg.nn.Linear(16, 16), pg.nn.Tanh(),
                            pg.nn.Linear(16, 3)).to(DEVICE)


def groups(m):
    return [{"params": m[0].parameters(), "lr": 0.02}, {"params": list(m[2].parameters()) + list(m[4].parameters())}]


def step(m, opt, sched, seed):
    rng = np.random.default_rng(100 * seed + rank)         # each rank its own batch
    x = pg.tensor(rng.standard_normal((8, 6)).astype(np.float32), device=DEVICE)
    opt.zero_grad()
    m(x).square().mean().backward()
    all_reduce_coalesced([p.grad for p in m.parameters()])  # the data-parallel average
    opt.step()
    sched.step()


def same(a, b, what):
    a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    assert np.array_equal(a, b), f"rank {rank}: {what}: {a} != {b}"


def check(optimizer_class, added=False, **hyper):
    """added: the sharded optimizer gets its second group from add_param_group."""
    ref_model, zero_model = model(), model()
    ref = optimizer_class(groups(ref_model), **hyper)
    zero = ZeroRedundancyOptimizer(groups(zero_model)[:1] if added else groups(zero_model), optimizer_class, **hyper)
    if added:
        zero.add_param_group(groups(zero_model)[1])
    scheds = [pg.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5) for o in (ref, zero)]
    for s in range(5):
        step(ref_model, ref, scheds[0], s)
        step(zero_model, zero, scheds[1], s)
        for a, b in zip(ref_model.parameters(), zero_model.parameters()):
            same(a, b, f"{optimizer_class.__name__} step {s}")
    # each rank keeps the state of its own share, and the shares cover the model once
    owned = len(zero.optim.state)
    assert 0 < owned < len(list(zero_model.parameters())) and all(p in zero.state for p in zero.optim.state)
    total = pg.tensor([float(owned)], device=DEVICE)
    dist.all_reduce(total)
    assert int(total.item()) == len(list(zero_model.parameters())), total
    assert zero.param_groups[0]["lr"] == ref.param_groups[0]["lr"] == 0.02 * 0.25
    # consolidated on rank 0: the unsharded state dict; elsewhere state_dict() says what to call
    zero.consolidate_state_dict(to=0)
    want = ref.state_dict()
    if rank == 0:
        got = zero.state_dict()
        assert got["param_groups"] == want["param_groups"], (got["param_groups"], want["param_groups"])
        assert sorted(got["state"]) == sorted(want["state"])
        for i in want["state"]:
            for k, v in want["state"][i].items():
                same(got["state"][i][k], v, f"state {i} {k}") if isinstance(v, pg.Tensor) else None
    else:
        try:
            zero.state_dict()
            raise AssertionError("state_dict() without consolidation did not raise")
        except RuntimeError as e:
            assert f"consolidate_state_dict(to={rank})" in str(e), e
    # a new sharded optimizer loaded with the full dict continues as the unsharded one
    resumed = ZeroRedundancyOptimizer(groups(zero_model), optimizer_class, **hyper)
    resumed.load_state_dict(want)
    assert len(resumed.optim.state) == owned
    sched = pg.optim.lr_scheduler.StepLR(resumed, step_size=2, gamma=0.5)
    sched.load_state_dict(scheds[0].state_dict())
    for s in range(5, 7):
        step(ref_model, ref, scheds[0], s)
        step(zero_model, resumed, sched, s)
        for a, b in zip(ref_model.parameters(), zero_model.parameters()):
            same(a, b, f"{optimizer_class.__name__} resumed step {s}")


check(pg.optim.AdamW, lr=0.01, weight_decay=0.1)
for refused, words in (({"overlap_with_ddp": True}, "overlap_with_ddp=True"), ({"process_group": object()}, "default")):
    try:
        ZeroRedundancyOptimizer(model().parameters(), pg.optim.SGD, lr=0.1, **refused)
        raise AssertionError(f"{refused} was accepted")
    except RuntimeError as e:
        assert words in str(e), e
check(pg.optim.SGD, lr=0.05, momentum=0.9)
check(pg.optim.AdamW, added=True, lr=0.01)
print(f"rank {rank}: zero checks ok", flush=True)
dist.destroy_process_group()
