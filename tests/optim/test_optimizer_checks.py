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
