"""Optimizers refuse the hyper-parameters torch 2.13 refuses (with its ValueError) and accept the
ones it accepts; load_state_dict checks groups, parameter counts and state shapes before it
changes anything."""
import math

import numpy as np
import pytest
import torch

import paragrad as pg

NAN, INF = math.nan, math.inf
NUMBERS = [NAN, -1.0, -0.0, INF, 0.0, 1.5]
BETAS = [(NAN, 0.9), (0.9, NAN), (1.0, 0.9), (0.9, 1.0), (-0.1, 0.9), (0.0, 0.0), (0.9, INF)]
# optimizer -> its checked hyper-parameters (each tried with every bad value)
HYPER = {
    "SGD": ["lr", "momentum", "weight_decay", "dampening"],
    "Adam": ["lr", "eps", "weight_decay", "betas"],
    "AdamW": ["lr", "eps", "weight_decay", "betas"],
    "RMSprop": ["lr", "eps", "weight_decay", "momentum", "alpha"],
    "Adagrad": ["lr", "eps", "weight_decay", "lr_decay", "initial_accumulator_value"],
    "Adadelta": ["lr", "eps", "weight_decay", "rho"],
    "Adamax": ["lr", "eps", "weight_decay", "betas"],
    "NAdam": ["lr", "eps", "weight_decay", "betas", "momentum_decay"],
    "RAdam": ["lr", "eps", "weight_decay", "betas"],
    "LBFGS": ["lr"],
}
CASES = [(opt, key, v) for opt, keys in HYPER.items() for key in keys
         for v in (BETAS if key == "betas" else NUMBERS)]


def _outcome(lib, opt, key, value):
    p = (torch.zeros(2, requires_grad=True) if lib is torch else pg.zeros(2, requires_grad=True))
    try:
        getattr(lib.optim, opt)([p], **{key: value})
    except Exception as e:  # noqa: BLE001 — the type is compared with torch's
        return e
    return None


@pytest.mark.parametrize("opt,key,value", CASES, ids=[f"{o}-{k}={v}" for o, k, v in CASES])
def test_hyper_parameters_checked_as_torch(opt, key, value):
    want, got = _outcome(torch, opt, key, value), _outcome(pg, opt, key, value)
    if want is None:
        assert got is None, f"torch accepts {opt}({key}={value}), paragrad raised {got!r}"
    else:
        assert type(got) is type(want), f"torch raised {want!r}, paragrad {got!r}"
        assert str(got) == f"{opt}: {want}", "paragrad's message is torch's, naming the optimizer"


def test_nesterov_needs_momentum_as_torch():
    for kw in (dict(nesterov=True), dict(nesterov=True, momentum=0.9, dampening=0.1)):
        with pytest.raises(ValueError):
            torch.optim.SGD([torch.zeros(1, requires_grad=True)], **kw)
        with pytest.raises(ValueError, match="Nesterov"):
            pg.optim.SGD([pg.zeros(1, requires_grad=True)], **kw)


def _trained(opt_cls, **kw):
    """An optimizer over two groups (3 parameters) after one step, so it has state."""
    ps = [pg.ones(2, 3, requires_grad=True), pg.ones(4, requires_grad=True), pg.ones(5, requires_grad=True)]
    opt = opt_cls([{"params": ps[:2]}, {"params": ps[2:], "lr": 0.5}], **kw)
    sum((p * p).sum() for p in ps).backward()
    opt.step()
    return opt


def _snapshot(opt):
    sd = opt.state_dict()
    return ({i: {k: np.asarray(v.detach().cpu().numpy()) if isinstance(v, pg.Tensor) else v
                 for k, v in st.items()} for i, st in sd["state"].items()}, sd["param_groups"])


def _assert_same(a, b):
    (sa, ga), (sb, gb) = a, b
    assert ga == gb and sa.keys() == sb.keys()
    for i in sa:
        assert sa[i].keys() == sb[i].keys()
        for k in sa[i]:
            np.testing.assert_array_equal(sa[i][k], sb[i][k])


def _torch_groups_error(sd_change):
    """torch's error for a state dict with its groups changed by sd_change."""
    ps = [torch.ones(2, 3, requires_grad=True), torch.ones(4, requires_grad=True), torch.ones(5, requires_grad=True)]
    opt = torch.optim.Adam([{"params": ps[:2]}, {"params": ps[2:]}])
    sd = opt.state_dict()
    sd_change(sd)
    with pytest.raises(ValueError) as info:
        opt.load_state_dict(sd)
    return str(info.value)


@pytest.mark.parametrize("change", ["drop a group", "drop a parameter"])
def test_load_state_dict_group_mismatch_as_torch(change):
    def edit(sd):
        if change == "drop a group":
            sd["param_groups"] = sd["param_groups"][:1]
        else:
            sd["param_groups"][1]["params"] = []
    want = _torch_groups_error(edit)
    opt = _trained(pg.optim.Adam)
    sd, before = opt.state_dict(), _snapshot(opt)
    edit(sd)
    with pytest.raises(ValueError) as info:
        opt.load_state_dict(sd)
    assert str(info.value).startswith(want), f"{info.value} (torch: {want})"
    _assert_same(_snapshot(opt), before)


@pytest.mark.parametrize("opt_cls,key", [(pg.optim.Adam, "exp_avg"), (pg.optim.AdamW, "exp_avg_sq"),
                                         (pg.optim.SGD, "momentum_buffer"), (pg.optim.RMSprop, "square_avg"),
                                         (pg.optim.NAdam, "exp_avg"), (pg.optim.Adagrad, "sum")])
def test_load_state_dict_refuses_state_of_another_shape(opt_cls, key):
    kw = {"momentum": 0.9} if opt_cls is pg.optim.SGD else {}
    opt = _trained(opt_cls, **kw)
    sd = _trained(opt_cls, **kw).state_dict()
    sd["param_groups"][0]["lr"] = 123.0                 # would change, if the load went through
    sd["state"][2][key] = pg.zeros(3, 3)                 # parameter 2 (group 1) has shape (5,)
    before = _snapshot(opt)
    with pytest.raises(ValueError, match=rf"{opt_cls.__name__}.load_state_dict: state '{key}' of parameter 2 "
                                         r"\(group 1\) has shape \(3, 3\), but the parameter has shape \(5,\)"):
        opt.load_state_dict(sd)
    _assert_same(_snapshot(opt), before)
    opt.step()                                          # still usable


def test_load_state_dict_refuses_state_of_an_unknown_parameter():
    opt = _trained(pg.optim.Adam)
    sd = opt.state_dict()
    sd["state"][7] = sd["state"][0]
    before = _snapshot(opt)
    with pytest.raises(ValueError, match="state for parameter 7"):
        opt.load_state_dict(sd)
    _assert_same(_snapshot(opt), before)


def test_load_state_dict_round_trip_still_loads():
    opt, other = _trained(pg.optim.Adam), _trained(pg.optim.Adam)
    other.load_state_dict(opt.state_dict())
    _assert_same(_snapshot(other), _snapshot(opt))
