"""Optimizers, schedules and gradient clipping against torch.optim: the same model with the same
initial weights and data is trained 20 steps in paragrad and in PyTorch; the losses must agree
step by step within 1e-5 relative, and so must the final parameters, the learning rates the
schedulers report, and the norms clip_grad_norm_ returns. Then: param groups, state_dict round
trips (an interrupted run continues exactly), and argument errors."""
from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest
import torch

import paragrad as pg
import paragrad.nn as nn
import paragrad.optim as optim
from tests.helpers import _np

LIBS = {"pg": (pg, nn, optim), "torch": (torch, torch.nn, torch.optim)}
RTOL = 1e-5
STEPS = 20

_rng = np.random.default_rng(0)
W1 = (_rng.standard_normal((16, 8)) * 0.3).astype(np.float32)
B1 = (_rng.standard_normal(16) * 0.1).astype(np.float32)
W2 = (_rng.standard_normal((3, 16)) * 0.3).astype(np.float32)
B2 = np.full(3, 0.1, np.float32)
X = _rng.standard_normal((32, 8)).astype(np.float32)
Y = _rng.integers(0, 3, 32)


def make_model(which, device="cpu"):
    lib, nnlib, _ = LIBS[which]
    m = nnlib.Sequential(nnlib.Linear(8, 16), nnlib.Tanh(), nnlib.Linear(16, 3))
    kw = {"device": device} if which == "pg" else {}
    if which == "pg":
        m.to(device)
    with lib.no_grad():
        for p, v in zip(m.parameters(), (W1, B1, W2, B2)):
            p.copy_(lib.tensor(v, **kw))
    return m


def train(which, make_opt, make_sched=None, clip=None, steps=STEPS, device="cpu", groups=False,
          model=None, opt=None, sched=None, double=False):
    """Train `steps` steps; returns the losses, lrs (get_last_lr after each step), the momentum
    or beta1 of group 0 after each step, the clipping norms, and (model, opt, sched)."""
    lib, nnlib, optlib = LIBS[which]
    kw = {"device": device} if which == "pg" else {}
    m = model if model is not None else make_model(which, device)
    if double:
        m.double()
    if opt is None:
        params = ([{"params": m[0].parameters()}, {"params": m[2].parameters(), "lr": 0.003}]
                  if groups else m.parameters())
        opt = make_opt(optlib, params)
    if sched is None and make_sched is not None:
        sched = make_sched(optlib.lr_scheduler, opt)
    x, y = lib.tensor(X.astype(np.float64) if double else X, **kw), lib.tensor(Y, **kw)
    losses, lrs, moms, norms = [], [], [], []
    for _ in range(steps):
        opt.zero_grad()
        loss = nnlib.functional.cross_entropy(m(x), y)
        loss.backward()
        if clip is not None:
            kind, value = clip
            if kind == "value":
                nnlib.utils.clip_grad_value_(m.parameters(), value)
            else:
                norms.append(float(nnlib.utils.clip_grad_norm_(m.parameters(), value, norm_type=kind)))
        opt.step()
        if sched is not None:
            sched.step()
            lrs.append(list(sched.get_last_lr()))
        g = opt.param_groups[0]
        moms.append(g["betas"][0] if "betas" in g else g.get("momentum"))
        losses.append(loss.item())
    return dict(losses=np.array(losses), lrs=lrs, moms=moms, norms=np.array(norms),
                params=[_np(p) if which == "pg" else p.detach().numpy() for p in m.parameters()],
                model=m, opt=opt, sched=sched)


def compare(make_opt, make_sched=None, clip=None, device="cpu", groups=False, double=False):
    a = train("pg", make_opt, make_sched, clip, device=device, groups=groups, double=double)
    b = train("torch", make_opt, make_sched, clip, groups=groups, double=double)
    rtol, atol = (1e-10, 1e-12) if double else (RTOL, 1e-6)
    np.testing.assert_allclose(a["losses"], b["losses"], rtol=rtol, atol=0, err_msg="losses")
    assert abs(a["losses"][-1] - a["losses"][0]) > 1e-3, "the run should actually train"
    for i, (p, t) in enumerate(zip(a["params"], b["params"])):
        assert p.dtype == t.dtype
        np.testing.assert_allclose(p, t, rtol=rtol, atol=atol, err_msg=f"final parameter {i}")
    np.testing.assert_allclose(np.array(a["lrs"]), np.array(b["lrs"]), rtol=1e-9, err_msg="get_last_lr")
    if a["moms"][0] is not None:
        np.testing.assert_allclose(a["moms"], b["moms"], rtol=1e-9, err_msg="momentum / beta1")
    np.testing.assert_allclose(a["norms"], b["norms"], rtol=rtol, err_msg="clip_grad_norm_ total norm")
    return a, b


# ---- the optimizers alone ------------------------------------------------------------------------
OPTIMIZERS = {
    "sgd": lambda o, p: o.SGD(p, lr=0.2),
    "sgd-momentum": lambda o, p: o.SGD(p, lr=0.1, momentum=0.9),
    "sgd-dampening": lambda o, p: o.SGD(p, lr=0.1, momentum=0.9, dampening=0.3),
    "sgd-nesterov": lambda o, p: o.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
    "sgd-nesterov-wd": lambda o, p: o.SGD(p, lr=0.1, momentum=0.8, nesterov=True, weight_decay=1e-2),
    "sgd-wd": lambda o, p: o.SGD(p, lr=0.1, weight_decay=0.05),
    "sgd-maximize": lambda o, p: o.SGD(p, lr=0.05, momentum=0.5, maximize=True),
    "adam": lambda o, p: o.Adam(p, lr=1e-2),
    "adam-wd": lambda o, p: o.Adam(p, lr=1e-2, weight_decay=0.1),
    "adam-amsgrad": lambda o, p: o.Adam(p, lr=1e-2, amsgrad=True),
    "adam-amsgrad-wd": lambda o, p: o.Adam(p, lr=1e-2, amsgrad=True, weight_decay=0.05),
    "adam-betas-eps": lambda o, p: o.Adam(p, lr=5e-3, betas=(0.8, 0.99), eps=1e-6),
    "adam-maximize": lambda o, p: o.Adam(p, lr=1e-2, maximize=True),
    "adamw": lambda o, p: o.AdamW(p, lr=1e-2),
    "adamw-wd": lambda o, p: o.AdamW(p, lr=1e-2, weight_decay=0.1),
    "adamw-amsgrad": lambda o, p: o.AdamW(p, lr=1e-2, weight_decay=0.1, amsgrad=True),
    "adam-decoupled": lambda o, p: o.Adam(p, lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True),
    "adamw-foreach-off": lambda o, p: o.AdamW(p, lr=1e-2, weight_decay=0.1, foreach=False),
    "adam-foreach": lambda o, p: o.Adam(p, lr=1e-2, foreach=True),
    "sgd-foreach-off": lambda o, p: o.SGD(p, lr=0.1, momentum=0.9, foreach=False),
    # PyTorch's single-tensor reference updates (optim.optimizer.SingleTensorOptimizer)
    "rmsprop-centered-momentum-wd": lambda o, p: o.RMSprop(p, lr=5e-3, alpha=0.9, momentum=0.8, centered=True,
                                                          weight_decay=0.05),
    "rmsprop-maximize": lambda o, p: o.RMSprop(p, lr=1e-3, momentum=0.5, maximize=True),
    "adagrad": lambda o, p: o.Adagrad(p, lr=0.1),
    "adagrad-decay-init-wd": lambda o, p: o.Adagrad(p, lr=0.1, lr_decay=0.05, initial_accumulator_value=0.1,
                                                    weight_decay=0.02),
    "adadelta": lambda o, p: o.Adadelta(p),
    "adadelta-wd-maximize": lambda o, p: o.Adadelta(p, lr=0.5, rho=0.8, weight_decay=0.1, maximize=True),
    "adamax": lambda o, p: o.Adamax(p, lr=1e-2),
    "adamax-wd": lambda o, p: o.Adamax(p, lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1),
    "nadam": lambda o, p: o.NAdam(p, lr=1e-2),
    "nadam-decoupled": lambda o, p: o.NAdam(p, lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True),
    "radam": lambda o, p: o.RAdam(p, lr=1e-2),
    "radam-wd": lambda o, p: o.RAdam(p, lr=1e-2, weight_decay=0.1),
    "radam-decoupled-maximize": lambda o, p: o.RAdam(p, lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True,
                                                     maximize=True),
}


# float64 only: in float32, one weight whose gradient is ~0 ends 2.4e-6 (nadam-wd) / 3.5e-6
# (rmsprop: its first step is 10 * lr * sign(grad)) from torch's after 20 steps, as the GEMMs' summation
# order differs (losses agree to 1.5e-7); in float64 the whole run agrees to 1e-10
FLOAT64_ONLY = {"nadam-wd": lambda o, p: o.NAdam(p, lr=1e-2, weight_decay=0.1, momentum_decay=8e-3),
                "rmsprop": lambda o, p: o.RMSprop(p, lr=1e-2)}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_matches_torch(name, device):
    compare(OPTIMIZERS[name], device=device)


@pytest.mark.parametrize("name", ["sgd-nesterov-wd", "sgd-dampening", "adam-amsgrad-wd", "adamw-amsgrad",
                                  "adam-maximize", "rmsprop", "rmsprop-centered-momentum-wd", "adagrad-decay-init-wd",
                                  "adadelta-wd-maximize", "adamax-wd", "nadam-wd", "nadam-decoupled",
                                  "radam-wd"])
def test_optimizer_matches_torch_float64(name, device):
    """In float64 the update rules must agree to ~1e-10: a formula slip can't hide in rounding."""
    compare({**OPTIMIZERS, **FLOAT64_ONLY}[name], device=device, double=True)


def test_clip_and_schedule_float64(device):
    compare(OPTIMIZERS["adamw-wd"], SCHEDULES["onecycle-adamw-linear"][1], clip=(2.0, 0.3), device=device,
            double=True)


# ---- schedules ---------------------------------------------------------------------------------------
SCHEDULES = {
    "step": ("adam", lambda s, o: s.StepLR(o, step_size=5, gamma=0.5)),
    "cosine": ("adam", lambda s, o: s.CosineAnnealingLR(o, T_max=20)),
    "cosine-restart": ("sgd-momentum", lambda s, o: s.CosineAnnealingLR(o, T_max=6, eta_min=1e-3)),
    "linear": ("adamw-wd", lambda s, o: s.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=8)),
    "linear-decay": ("sgd-nesterov", lambda s, o: s.LinearLR(o, start_factor=1.0, end_factor=0.2,
                                                             total_iters=15)),
    "onecycle-adam": ("adam", lambda s, o: s.OneCycleLR(o, max_lr=0.05, total_steps=STEPS)),
    "onecycle-adamw-linear": ("adamw-wd", lambda s, o: s.OneCycleLR(o, max_lr=0.05, total_steps=25,
                                                                    anneal_strategy="linear")),
    "onecycle-sgd": ("sgd-momentum", lambda s, o: s.OneCycleLR(o, max_lr=0.3, total_steps=STEPS,
                                                               pct_start=0.25)),
    "onecycle-sgd-3phase": ("sgd-nesterov", lambda s, o: s.OneCycleLR(
        o, max_lr=0.3, epochs=4, steps_per_epoch=6, three_phase=True, base_momentum=0.8,
        max_momentum=0.9)),
    "onecycle-no-momentum": ("adam", lambda s, o: s.OneCycleLR(o, max_lr=0.02, total_steps=STEPS,
                                                               cycle_momentum=False)),
    "lambda": ("sgd-momentum", lambda s, o: s.LambdaLR(o, lambda e: 0.9 ** e)),
    "multiplicative": ("adam", lambda s, o: s.MultiplicativeLR(o, lambda e: 0.95)),
    "multistep": ("sgd-momentum", lambda s, o: s.MultiStepLR(o, [3, 7, 7, 12], gamma=0.5)),
    "exponential": ("adamw-wd", lambda s, o: s.ExponentialLR(o, 0.9)),
    "polynomial": ("sgd-nesterov", lambda s, o: s.PolynomialLR(o, total_iters=10, power=2.0)),
    "warm-restarts": ("sgd-momentum", lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=1e-3)),
    "sequential-warmup-cosine": ("adamw-wd", lambda s, o: s.SequentialLR(
        o, [s.LinearLR(o, 0.1, total_iters=5), s.CosineAnnealingLR(o, T_max=15)], milestones=[5])),
    "sequential-3": ("sgd-momentum", lambda s, o: s.SequentialLR(
        o, [s.ConstantLR(o, 0.5, total_iters=3), s.ExponentialLR(o, 0.9), s.StepLR(o, 4)], milestones=[4, 10])),
    "chained": ("adam", lambda s, o: s.ChainedScheduler([s.ConstantLR(o, 0.1, total_iters=4),
                                                         s.ExponentialLR(o, 0.9)])),
    "cyclic-sgd": ("sgd-momentum", lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=0.2, step_size_up=4)),
    "cyclic-triangular2": ("sgd-nesterov", lambda s, o: s.CyclicLR(o, 0.01, 0.3, step_size_up=3, step_size_down=5,
                                                                   mode="triangular2", base_momentum=0.7)),
    "cyclic-exp-range-adam": ("adam", lambda s, o: s.CyclicLR(o, 1e-3, 2e-2, step_size_up=5, mode="exp_range",
                                                              gamma=0.95)),
    "cyclic-custom-no-momentum": ("adamw-wd", lambda s, o: s.CyclicLR(
        o, 1e-3, 1e-2, step_size_up=3, scale_fn=lambda x: 0.8 ** x, scale_mode="iterations", cycle_momentum=False)),
}


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_matches_torch(name, device):
    opt_name, sched = SCHEDULES[name]
    a, _ = compare(OPTIMIZERS[opt_name], sched, device=device)
    assert len(set(lr for step in a["lrs"] for lr in step)) > 2, "the schedule should change lr"


@pytest.mark.parametrize("name", ["step", "cosine-restart", "onecycle-sgd"])
def test_schedule_with_param_groups(name, device):
    opt_name, sched = SCHEDULES[name]
    a, _ = compare(OPTIMIZERS[opt_name], sched, device=device, groups=True)
    assert all(len(step) == 2 for step in a["lrs"])
    if not name.startswith("onecycle"):          # OneCycleLR sets every group to its own max_lr cycle
        assert all(step[0] != step[1] for step in a["lrs"][:3])


def test_lr_changed_before_scheduler_is_the_base_lr():
    base = {}
    for which in ("pg", "torch"):
        _, _, optlib = LIBS[which]
        opt = optlib.SGD(make_model(which).parameters(), lr=0.1, momentum=0.9)
        assert "initial_lr" not in opt.param_groups[0]       # only a scheduler adds it
        opt.param_groups[0]["lr"] = 0.02
        sched = optlib.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
        lrs = []
        for _ in range(6):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr()[0])
        base[which] = (list(sched.base_lrs), lrs, opt.param_groups[0]["initial_lr"])
    assert base["pg"][0] == base["torch"][0] == [0.02] and base["pg"][2] == base["torch"][2]
    np.testing.assert_allclose(base["pg"][1], base["torch"][1], rtol=1e-12)


def test_two_schedulers_stepped_together(device):
    """Warmup and decay composed by stepping both (the recursive forms multiply)."""
    def sched(s, o):
        class Both:
            def __init__(self):
                self.a = s.LinearLR(o, start_factor=0.2, total_iters=5)
                self.b = s.StepLR(o, step_size=4, gamma=0.5)

            def step(self):
                self.a.step()
                self.b.step()

            def get_last_lr(self):
                return self.b.get_last_lr()
        return Both()
    compare(OPTIMIZERS["adam"], sched, device=device)


# ---- gradient clipping ----------------------------------------------------------------------------------
CLIPS = {
    "norm2": ("sgd-momentum", (2.0, 0.5)),
    "norm2-adam": ("adam", (2, 0.3)),
    "norm-inf": ("adamw-wd", (math.inf, 0.2)),
    "norm-inf-str": ("sgd", ("inf", 0.2)),
    "norm1.5": ("sgd-nesterov", (1.5, 0.4)),
    "norm-loose": ("sgd", (2.0, 100.0)),     # never clips: the coefficient is clamped to 1
    "value": ("sgd-momentum", ("value", 0.05)),
    "value-adam": ("adam", ("value", 0.01)),
}


@pytest.mark.parametrize("name", CLIPS)
def test_clipping_matches_torch(name, device):
    opt_name, clip = CLIPS[name]
    a, b = compare(OPTIMIZERS[opt_name], clip=clip, device=device)


def test_everything_together(device):
    """The issue's recipe: AdamW with weight decay, a cosine schedule and norm clipping."""
    compare(OPTIMIZERS["adamw-wd"], SCHEDULES["cosine"][1], clip=(2.0, 0.5), device=device, groups=True)


def test_clip_grad_norm_returns_torch_norm(device):
    rng = np.random.default_rng(1)
    gs = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,), (2, 2, 2)]]
    for norm_type in (2.0, 1.0, 3.0, math.inf):
        ps = [nn.Parameter(pg.zeros(*g.shape, device=device)) for g in gs]
        ts = [torch.nn.Parameter(torch.zeros(*g.shape)) for g in gs]
        for p, t, g in zip(ps, ts, gs):
            p.grad, t.grad = pg.tensor(g, device=device), torch.tensor(g)
        n_p = nn.utils.clip_grad_norm_(ps, 1.0, norm_type)
        n_t = torch.nn.utils.clip_grad_norm_(ts, 1.0, norm_type)
        assert isinstance(n_p, pg.Tensor) and n_p.ndim == 0
        np.testing.assert_allclose(float(n_p), float(n_t), rtol=1e-6)
        for p, t in zip(ps, ts):
            np.testing.assert_allclose(_np(p.grad), t.grad.numpy(), rtol=1e-6, atol=1e-7)
    one = nn.Parameter(pg.zeros(3, device=device))
    one.grad = pg.tensor([3.0, 4.0, 0.0], device=device)
    assert float(nn.utils.clip_grad_norm_(one, 1.0)) == pytest.approx(5.0)     # a single tensor
    assert float(nn.utils.clip_grad_norm_([nn.Parameter(pg.zeros(2, device=device))], 1.0)) == 0.0


def test_clip_grad_norm_nonfinite(device):
    p = nn.Parameter(pg.zeros(2, device=device))
    p.grad = pg.tensor([float("nan"), 1.0], device=device)
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    t = torch.nn.Parameter(torch.zeros(2))
    t.grad = torch.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError):
        torch.nn.utils.clip_grad_norm_([t], 1.0, error_if_nonfinite=True)


def test_clip_grad_value(device):
    g = np.array([[-2.0, -0.05, 0.0], [0.05, 0.3, 7.0]], np.float32)
    p, t = nn.Parameter(pg.zeros(2, 3, device=device)), torch.nn.Parameter(torch.zeros(2, 3))
    p.grad, t.grad = pg.tensor(g, device=device), torch.tensor(g)
    nn.utils.clip_grad_value_([p], 0.1)
    torch.nn.utils.clip_grad_value_([t], 0.1)
    np.testing.assert_array_equal(_np(p.grad), t.grad.numpy())


# ---- param groups -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sgd-momentum", "adam-wd", "adamw-amsgrad"])
def test_param_groups_with_different_lr(name, device):
    a, _ = compare(OPTIMIZERS[name], device=device, groups=True)
    assert [g["lr"] for g in a["opt"].param_groups] != [a["opt"].param_groups[0]["lr"]] * 2


def test_param_group_options_override_defaults(device):
    def make(o, params):
        return o.SGD([{"params": params[:2], "momentum": 0.5, "nesterov": True},
                      {"params": params[2:], "lr": 0.02, "weight_decay": 0.1}], lr=0.1, momentum=0.9)
    runs = {}
    for which in ("pg", "torch"):
        m = make_model(which, device if which == "pg" else "cpu")
        opt = make(LIBS[which][2], list(m.parameters()))
        assert [g["momentum"] for g in opt.param_groups] == [0.5, 0.9]
        runs[which] = train(which, None, model=m, opt=opt, device=device)
    np.testing.assert_allclose(runs["pg"]["losses"], runs["torch"]["losses"], rtol=RTOL)


def test_add_param_group(device):
    runs = {}
    for which in ("pg", "torch"):
        m = make_model(which, device if which == "pg" else "cpu")
        opt = LIBS[which][2].Adam(m[0].parameters(), lr=0.01)
        opt.add_param_group({"params": m[2].parameters(), "lr": 0.002})
        assert len(opt.param_groups) == 2 and opt.param_groups[1]["betas"] == (0.9, 0.999)
        runs[which] = train(which, None, model=m, opt=opt, device=device)
    np.testing.assert_allclose(runs["pg"]["losses"], runs["torch"]["losses"], rtol=RTOL)


def test_frozen_parameters_are_skipped(device):
    m = make_model("pg", device)
    m[0].weight.requires_grad_(False)
    opt = optim.Adam(m.parameters(), lr=0.1)
    before = _np(m[0].weight).copy()
    train("pg", None, model=m, opt=opt, steps=3, device=device)
    np.testing.assert_array_equal(_np(m[0].weight), before)
    assert m[0].weight not in opt.state and m[2].weight in opt.state


@pytest.mark.parametrize("set_to_none", [True, False])
def test_optimizer_zero_grad(set_to_none, device):
    m = make_model("pg", device)
    opt = optim.SGD(m.parameters(), lr=0.1)
    m(pg.tensor(X, device=device)).sum().backward()
    opt.zero_grad(set_to_none=set_to_none)
    for p in m.parameters():
        assert (p.grad is None) if set_to_none else not _np(p.grad).any()


def test_step_with_closure(device):
    for which in ("pg", "torch"):
        lib, nnlib, optlib = LIBS[which]
        kw = {"device": device} if which == "pg" else {}
        m = make_model(which, device if which == "pg" else "cpu")
        opt = optlib.SGD(m.parameters(), lr=0.1)
        x, y = lib.tensor(X, **kw), lib.tensor(Y, **kw)

        def closure():
            opt.zero_grad()
            loss = nnlib.functional.cross_entropy(m(x), y)
            loss.backward()
            return loss
        with lib.no_grad():                   # the closure still records a graph
            first = opt.step(closure)
        second = opt.step(closure)
        if which == "pg":
            got = (first.item(), second.item())
        else:
            np.testing.assert_allclose(got, (first.item(), second.item()), rtol=RTOL)
    assert got[1] < got[0]


def test_updates_are_in_place(device):
    """Parameters and optimizer state keep their buffers across steps (CUDA graphs rely on it)."""
    m = make_model("pg", device)
    opt = optim.AdamW(m.parameters(), lr=0.01, amsgrad=True)
    train("pg", None, model=m, opt=opt, steps=1, device=device)
    bufs = [p._data for p in m.parameters()]
    state = [v._data for p in m.parameters() for v in opt.state[p].values() if isinstance(v, pg.Tensor)]
    train("pg", None, model=m, opt=opt, steps=2, device=device)
    assert all(a is p._data for a, p in zip(bufs, m.parameters()))
    assert all(a is b for a, b in zip(state, [v._data for p in m.parameters()
                                               for v in opt.state[p].values() if isinstance(v, pg.Tensor)]))


# ---- state_dict round trips ----------------------------------------------------------------------------
ROUND_TRIPS = {
    "sgd-momentum": (OPTIMIZERS["sgd-nesterov-wd"], None),
    "adam-amsgrad": (OPTIMIZERS["adam-amsgrad-wd"], None),
    "adamw-cosine": (OPTIMIZERS["adamw-wd"], SCHEDULES["cosine-restart"][1]),
    "adam-onecycle": (OPTIMIZERS["adam"], SCHEDULES["onecycle-adam"][1]),
    "sgd-onecycle": (OPTIMIZERS["sgd-momentum"], SCHEDULES["onecycle-sgd"][1]),
    "sgd-linear": (OPTIMIZERS["sgd-momentum"], SCHEDULES["linear"][1]),
    "adamw-step": (OPTIMIZERS["adamw"], SCHEDULES["step"][1]),
    "rmsprop-step": (OPTIMIZERS["rmsprop-centered-momentum-wd"], SCHEDULES["step"][1]),
    "adagrad": (OPTIMIZERS["adagrad-decay-init-wd"], None),
    "nadam": (FLOAT64_ONLY["nadam-wd"], None),
    "radam-cosine": (OPTIMIZERS["radam"], SCHEDULES["cosine-restart"][1]),
}


@pytest.mark.parametrize("name", ROUND_TRIPS)
def test_state_dict_round_trip_continues_identically(name, device):
    """10 steps, save model + optimizer (+ scheduler), restore into fresh objects, 10 more steps:
    the same losses and weights as 20 uninterrupted steps (and as torch doing the same)."""
    make_opt, make_sched = ROUND_TRIPS[name]
    full = train("pg", make_opt, make_sched, device=device, groups=True)
    results = {}
    for which in ("pg", "torch"):
        lib, nnlib, optlib = LIBS[which]
        dev = device if which == "pg" else "cpu"
        first = train(which, make_opt, make_sched, steps=10, device=dev, groups=True)
        model_sd = {k: v.clone() for k, v in first["model"].state_dict().items()}
        opt_sd = first["opt"].state_dict()
        if which == "torch":      # torch's state_dict aliases the live state tensors; paragrad's copies
            opt_sd = copy.deepcopy(opt_sd)
        sched_sd = first["sched"].state_dict() if first["sched"] is not None else None
        # keep training the old objects a little: the saved state must not alias them
        train(which, None, model=first["model"], opt=first["opt"], steps=2, device=dev)

        m = make_model(which, dev)
        for p in m.parameters():               # make sure the weights really come from the load
            with lib.no_grad():
                p.zero_()
        m.load_state_dict(model_sd)
        opt = make_opt(optlib, [{"params": m[0].parameters()}, {"params": m[2].parameters(), "lr": 0.003}])
        sched = make_sched(optlib.lr_scheduler, opt) if make_sched else None
        opt.load_state_dict(opt_sd)
        if sched is not None:
            sched.load_state_dict(sched_sd)
        second = train(which, None, model=m, opt=opt, sched=sched, steps=10, device=dev)
        results[which] = (np.concatenate([first["losses"], second["losses"]]), second)
    np.testing.assert_allclose(results["pg"][0], full["losses"], rtol=1e-6, err_msg="resumed vs uninterrupted")
    np.testing.assert_allclose(results["pg"][0], results["torch"][0], rtol=RTOL, err_msg="vs torch")
    for p, q in zip(results["pg"][1]["params"], full["params"]):
        np.testing.assert_allclose(p, q, rtol=1e-6, atol=1e-7)
    if make_sched is not None:
        np.testing.assert_allclose(results["pg"][1]["lrs"], full["lrs"][10:], rtol=1e-12)


def test_optimizer_state_dict_layout(device):
    for which in ("pg", "torch"):
        run = train(which, OPTIMIZERS["adam-amsgrad"], steps=2, device=device if which == "pg" else "cpu",
                    groups=True)
        sd = run["opt"].state_dict()
        layout = (sorted(sd), [g["params"] for g in sd["param_groups"]], sorted(sd["state"]),
                  sorted(sd["state"][0]), sorted(k for k in sd["param_groups"][0] if k != "params"
                                                 and k in ("lr", "betas", "eps", "weight_decay", "amsgrad")))
        if which == "pg":
            mine = layout
            assert int(sd["state"][0]["step"]) == 2
        else:
            assert mine == layout


def test_optimizer_load_state_dict_mismatch():
    m = make_model("pg")
    sd = optim.SGD(m.parameters(), lr=0.1).state_dict()
    with pytest.raises(ValueError):
        optim.SGD(m[0].parameters(), lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError):
        optim.SGD([{"params": m[0].parameters()}, {"params": m[2].parameters()}], lr=0.1).load_state_dict(sd)


def test_scheduler_state_dict_round_trip():
    for name in ("step", "cosine-restart", "linear", "onecycle-sgd", "lambda", "warm-restarts",
                 "sequential-warmup-cosine", "chained"):
        opt_name, make_sched = SCHEDULES[name]
        m = make_model("pg")
        opt = OPTIMIZERS[opt_name](optim, m.parameters())
        sched = make_sched(optim.lr_scheduler, opt)
        for _ in range(7):
            opt.step()
            sched.step()
        sd = sched.state_dict()     # (a ChainedScheduler has no epoch of its own, as in PyTorch)
        assert "optimizer" not in sd and sd.get("last_epoch", 7) == 7
        opt2 = OPTIMIZERS[opt_name](optim, make_model("pg").parameters())
        sched2 = make_sched(optim.lr_scheduler, opt2)
        opt2.load_state_dict(opt.state_dict())
        sched2.load_state_dict(sd)
        assert sched2.get_last_lr() == sched.get_last_lr()
        assert getattr(sched2, "last_epoch", 7) == 7
        for _ in range(5):
            sched.step()
            sched2.step()
        assert sched2.get_last_lr() == sched.get_last_lr()
        assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]


def test_onecycle_too_many_steps_raises():
    for which in ("pg", "torch"):
        _, _, optlib = LIBS[which]
        opt = optlib.SGD(make_model(which).parameters(), lr=0.1, momentum=0.9)
        sched = optlib.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3)
        for _ in range(3):
            opt.step()
            sched.step()
        with pytest.raises(ValueError):
            sched.step()


# ---- argument errors -------------------------------------------------------------------------------------
def _p(which):
    return [LIBS[which][1].Parameter(LIBS[which][0].zeros(2))]


ERRORS = {
    "sgd-negative-lr": lambda o, w: o.SGD(_p(w), lr=-0.1),
    "sgd-negative-momentum": lambda o, w: o.SGD(_p(w), lr=0.1, momentum=-0.5),
    "sgd-negative-wd": lambda o, w: o.SGD(_p(w), lr=0.1, weight_decay=-1),
    "sgd-nesterov-no-momentum": lambda o, w: o.SGD(_p(w), lr=0.1, nesterov=True),
    "sgd-nesterov-dampening": lambda o, w: o.SGD(_p(w), lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
    "adam-negative-lr": lambda o, w: o.Adam(_p(w), lr=-1e-3),
    "adam-beta1": lambda o, w: o.Adam(_p(w), betas=(1.0, 0.999)),
    "adam-beta2": lambda o, w: o.Adam(_p(w), betas=(0.9, -0.1)),
    "adam-eps": lambda o, w: o.Adam(_p(w), eps=-1e-8),
    "adam-wd": lambda o, w: o.Adam(_p(w), weight_decay=-0.1),
    "adamw-negative-lr": lambda o, w: o.AdamW(_p(w), lr=-1.0),
    "adamw-beta1": lambda o, w: o.AdamW(_p(w), betas=(-0.1, 0.999)),
    "adam-fused-and-foreach": lambda o, w: o.Adam(_p(w), fused=True, foreach=True),
    "sgd-fused-and-foreach": lambda o, w: o.SGD(_p(w), lr=0.1, fused=True, foreach=True),
    "rmsprop-alpha": lambda o, w: o.RMSprop(_p(w), alpha=-0.1),
    "rmsprop-momentum": lambda o, w: o.RMSprop(_p(w), momentum=-0.1),
    "adagrad-lr-decay": lambda o, w: o.Adagrad(_p(w), lr_decay=-1.0),
    "adagrad-initial-accumulator": lambda o, w: o.Adagrad(_p(w), initial_accumulator_value=-1.0),
    "adadelta-rho": lambda o, w: o.Adadelta(_p(w), rho=1.5),
    "adamax-beta": lambda o, w: o.Adamax(_p(w), betas=(0.9, 1.0)),
    "nadam-momentum-decay": lambda o, w: o.NAdam(_p(w), momentum_decay=-1.0),
    "radam-eps": lambda o, w: o.RAdam(_p(w), eps=-1.0),
    "empty-params": lambda o, w: o.Adam([], lr=0.1),
    "empty-generator": lambda o, w: o.SGD(iter([]), lr=0.1),
    "tensor-not-iterable": lambda o, w: o.SGD(_p(w)[0], lr=0.1),
    "duplicate-across-groups": lambda o, w: o.SGD((lambda ps: [{"params": ps}, {"params": ps}])(_p(w)), lr=0.1),
    "non-leaf": lambda o, w: o.SGD([_p(w)[0] * 2], lr=0.1),
    "linear-lr-start-factor": lambda o, w: o.lr_scheduler.LinearLR(o.SGD(_p(w), lr=0.1), start_factor=0),
    "onecycle-no-total": lambda o, w: o.lr_scheduler.OneCycleLR(o.SGD(_p(w), lr=0.1, momentum=0.9), 0.1),
    "scheduler-resume-without-initial-lr": lambda o, w: o.lr_scheduler.StepLR(o.SGD(_p(w), lr=0.1), 3,
                                                                               last_epoch=5),
    "onecycle-bad-anneal": lambda o, w: o.lr_scheduler.OneCycleLR(o.SGD(_p(w), lr=0.1, momentum=0.9), 0.1,
                                                                  total_steps=5, anneal_strategy="exp"),
}


@pytest.mark.parametrize("name", ERRORS)
def test_argument_errors_match_torch(name):
    with pytest.raises(Exception) as torch_err:
        ERRORS[name](torch.optim, "torch")
    with pytest.raises(torch_err.type):
        ERRORS[name](optim, "pg")


def test_defaults_match_torch():
    """The same param-group keys as torch.optim (foreach, fused, capturable, ... included) and
    the same default values."""
    for cls in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"):
        p = getattr(optim, cls)(_p("pg")).param_groups[0]
        t = getattr(torch.optim, cls)(_p("torch")).param_groups[0]
        assert set(p) == set(t), f"{cls}: keys {sorted(set(p) ^ set(t))} differ from torch's"
        for k in t:
            if k != "params":
                assert p[k] == t[k], f"{cls} default {k}: {p[k]} != torch {t[k]}"


def test_differentiable_is_refused_clearly():
    for cls in (optim.SGD, optim.Adam, optim.AdamW):
        with pytest.raises(RuntimeError, match=f"{cls.__name__}: differentiable=True .* not supported"):
            cls(_p("pg"), lr=0.1, differentiable=True)


@pytest.mark.parametrize("kw", [dict(patience=2, factor=0.5, cooldown=1),
                                dict(mode="max", threshold_mode="abs", threshold=0.1, patience=1,
                                     min_lr=0.02)], ids=["min-rel", "max-abs"])
def test_reduce_lr_on_plateau_matches_torch(kw):
    metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.4, 0.4, 0.4, 0.4, 0.4]
    if kw.get("mode") == "max":
        metrics = [float(i % 3) for i in range(16)]
    lrs = {}
    for which in ("pg", "torch"):
        _, _, optlib = LIBS[which]
        opt = optlib.SGD(make_model(which).parameters(), lr=0.1, momentum=0.9)
        sched = optlib.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        lrs[which] = []
        for m in metrics:
            opt.step()
            sched.step(m)
            lrs[which].append(sched.get_last_lr()[0])
    assert lrs["pg"] == lrs["torch"] and len(set(lrs["pg"])) > 1


def test_step_with_an_epoch_uses_the_closed_form():
    """PyTorch's deprecated step(epoch): the closed form where the scheduler has one."""
    got = {}
    for which in ("pg", "torch"):
        _, _, optlib = LIBS[which]
        opt = optlib.SGD(make_model(which).parameters(), lr=0.1)
        scheds = [optlib.lr_scheduler.StepLR(opt, 3, 0.5), optlib.lr_scheduler.ExponentialLR(opt, 0.9),
                  optlib.lr_scheduler.CosineAnnealingLR(opt, 10), optlib.lr_scheduler.MultiStepLR(opt, [2, 5]),
                  optlib.lr_scheduler.PolynomialLR(opt, 8), optlib.lr_scheduler.ConstantLR(opt, 0.5, 4),
                  optlib.lr_scheduler.LinearLR(opt, 0.2, total_iters=6),
                  optlib.lr_scheduler.CosineAnnealingWarmRestarts(opt, 3, 2)]
        got[which] = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # torch warns that step(epoch) is deprecated
            for sch in scheds:
                for epoch in (7, 2, 11):
                    sch.step(epoch)
                    got[which].append(sch.get_last_lr()[0])
    np.testing.assert_allclose(got["pg"], got["torch"], rtol=1e-12)


def test_scheduler_argument_errors_match_torch():
    for make in (lambda o, s: s.ConstantLR(o, factor=2.0),
                 lambda o, s: s.CosineAnnealingWarmRestarts(o, T_0=0),
                 lambda o, s: s.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
                 lambda o, s: s.LambdaLR(o, [lambda e: 1.0, lambda e: 1.0]),
                 lambda o, s: s.SequentialLR(o, [s.ExponentialLR(o, 0.9)], milestones=[3]),
                 lambda o, s: s.SequentialLR(o, [], milestones=[]),
                 lambda o, s: s.ReduceLROnPlateau(o, factor=1.5),
                 lambda o, s: s.ReduceLROnPlateau(o, mode="up"),
                 lambda o, s: s.StepLR(object(), 3)):
        with pytest.raises(Exception) as torch_err:
            make(torch.optim.SGD(make_model("torch").parameters(), lr=0.1), torch.optim.lr_scheduler)
        with pytest.raises(torch_err.type):
            make(optim.SGD(make_model("pg").parameters(), lr=0.1), optim.lr_scheduler)


def test_scheduler_state_survives_json():
    """paragrad checkpoints keep scheduler state as JSON: MultiStepLR's milestone counts (int
    keys) and SequentialLR's nested states must come back working."""
    import json
    for make in (lambda s, o: s.MultiStepLR(o, [3, 5, 5]),
                 lambda s, o: s.SequentialLR(o, [s.MultiStepLR(o, [2]), s.ExponentialLR(o, 0.9)], [4])):
        opt = optim.SGD(make_model("pg").parameters(), lr=0.1)
        sched = make(optim.lr_scheduler, opt)
        for _ in range(2):
            sched.step()
        opt2 = optim.SGD(make_model("pg").parameters(), lr=0.1)
        sched2 = make(optim.lr_scheduler, opt2)
        opt2.load_state_dict(opt.state_dict())
        sched2.load_state_dict(json.loads(json.dumps(sched.state_dict())))
        for _ in range(6):
            sched.step()
            sched2.step()
            assert sched2.get_last_lr() == sched.get_last_lr()


SINGLE_TENSOR = ("RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam")


@pytest.mark.parametrize("cls", SINGLE_TENSOR)
def test_single_tensor_optimizers_refuse_capture(cls, device):
    """Their learning rate and step counts are host numbers, which a CUDA graph would freeze."""
    from paragrad import capture
    p = nn.Parameter(pg.ones(3, device=device))
    opt = getattr(optim, cls)([p], lr=0.1)
    p.grad = pg.ones(3, device=device)
    opt.step()                                         # eager: fine
    with capture.capturing("train_step"):
        with pytest.raises(RuntimeError, match=f"{cls}.step can't be captured by pg.jit"):
            opt.step()


def test_single_tensor_state_layout_matches_torch(device):
    """The same state keys, step counts as float32 CPU tensors, and Adagrad's state from the start."""
    for cls in SINGLE_TENSOR:
        kw = {"momentum": 0.9, "centered": True} if cls == "RMSprop" else {}
        states = []
        for which in ("pg", "torch"):
            lib, nnlib, optlib = LIBS[which]
            q = nnlib.Parameter(lib.ones(3, **({"device": device} if which == "pg" else {})))
            opt = getattr(optlib, cls)([q], lr=0.1, **kw)
            before = sorted(opt.state_dict()["state"])
            q.grad = lib.ones_like(q)
            opt.step()
            st = opt.state_dict()["state"][0]
            states.append((before, sorted(st), st["step"].dtype == lib.float32, st["step"].device.type, float(st["step"])))
        assert states[0] == states[1], f"{cls}: {states[0]} vs torch {states[1]}"


def test_cyclic_lr_state_dict_and_errors():
    def sched(o, lib):
        return lib.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=2, scale_fn=lambda x: 0.5 ** x)
    p = nn.Parameter(pg.zeros(2))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    s = sched(opt, pg)
    for _ in range(3):
        opt.step()
        s.step()
    sd = s.state_dict()
    assert sd["_scale_fn_custom"] is None            # a function stays out of the state, as torch's
    opt2 = optim.SGD([p], lr=0.1, momentum=0.9)
    s2 = sched(opt2, pg)
    s2.load_state_dict(sd)
    assert s2._scale_fn_custom is not None and s2.last_epoch == 3 and s2.scale_fn(2) == 0.25
    for bad in (lambda lib: lib.optim.lr_scheduler.CyclicLR(lib.optim.SGD(_p("torch" if lib is torch else "pg"), lr=0.1,
                                                                           momentum=0.9), 0.01, 0.1, mode="bogus"),
                lambda lib: lib.optim.lr_scheduler.CyclicLR(lib.optim.Adagrad(_p("torch" if lib is torch else "pg")),
                                                             0.01, 0.1)):
        for lib in (torch, pg):
            with pytest.raises(ValueError):
                bad(lib)


def test_get_total_norm_and_clip_grads_with_norm(device):
    rng = np.random.default_rng(2)
    gs = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,)]]
    for norm_type in (2.0, math.inf):
        ps = [nn.Parameter(pg.zeros(*g.shape, device=device)) for g in gs]
        ts = [torch.nn.Parameter(torch.zeros(*g.shape)) for g in gs]
        for p, t, g in zip(ps, ts, gs):
            p.grad, t.grad = pg.tensor(g, device=device), torch.tensor(g)
        n_p = nn.utils.get_total_norm([p.grad for p in ps], norm_type)
        n_t = torch.nn.utils.get_total_norm([t.grad for t in ts], norm_type)
        np.testing.assert_allclose(float(n_p), float(n_t), rtol=1e-6)
        nn.utils.clip_grads_with_norm_(ps, 0.5, n_p)
        torch.nn.utils.clip_grads_with_norm_(ts, 0.5, n_t)
        for p, t in zip(ps, ts):
            np.testing.assert_allclose(_np(p.grad), t.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_single_tensor_state_stays_on_the_cpu_across_load_and_default_device(device):
    p = nn.Parameter(pg.ones(3, device=device))
    pg.set_default_device(device)
    try:
        opt = optim.NAdam([p], lr=0.1)
        p.grad = pg.ones(3, device=device)
        opt.step()
    finally:
        pg.set_default_device(None)
    st = opt.state[p]
    assert st["step"].device == pg.device("cpu") and st["mu_product"].device == pg.device("cpu")
    assert st["exp_avg"].device == p.device
    opt2 = optim.NAdam([p], lr=0.1)
    opt2.load_state_dict(opt.state_dict())
    st2 = opt2.state[p]
    assert st2["step"].device == pg.device("cpu") and st2["exp_avg"].device == p.device
    opt2.step()
    assert float(st2["step"]) == 2.0
