"""LBFGS against torch.optim.LBFGS: the same problems from the same start in float64, several
steps, with and without the strong-Wolfe line search. The losses each step returns, the final
parameters and the evaluation counts must be torch's; the iterates agree to about 1e-12 (torch's
add with alpha is a fused multiply-add, NumPy's two roundings, so the last bits differ and grow
slowly). Then the errors torch raises, and state_dict round trips."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_raises

_rng = np.random.default_rng(0)
X = _rng.standard_normal((20, 4))
Y = _rng.standard_normal((20, 3))
W0, B0 = _rng.standard_normal((3, 4)) * 0.5, _rng.standard_normal(3) * 0.1
H0, C0 = _rng.standard_normal((8, 4)) * 0.5, _rng.standard_normal(8) * 0.1
V0 = _rng.standard_normal((1, 8)) * 0.5
Y_MLP = np.sin(2 * X[:, :1])


def problem(lib, name):
    """(parameters, loss function) of a float64 problem, with lib's tensors."""
    t = lambda a: lib.tensor(a, dtype=lib.float64)  # noqa: E731
    if name == "rosenbrock":
        x, y = t([-1.5]).requires_grad_(), t([2.0]).requires_grad_()
        return [x, y], lambda: ((1 - x) ** 2 + 100 * (y - x ** 2) ** 2).sum()
    if name == "least_squares":
        w, b = t(W0).requires_grad_(), t(B0).requires_grad_()
        return [w, b], lambda: ((t(X) @ w.T + b - t(Y)) ** 2).mean()
    h, c, v = t(H0).requires_grad_(), t(C0).requires_grad_(), t(V0).requires_grad_()
    return [h, c, v], lambda: ((lib.tanh(t(X) @ h.T + c) @ v.T - t(Y_MLP)) ** 2).mean()


def steps(lib, ps, loss_fn, opt, n):
    """n LBFGS steps; -> the losses step() returned, then the loss at the end."""
    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss
    losses = [opt.step(closure).item() for _ in range(n)]
    with lib.no_grad():
        losses.append(loss_fn().item())
    return np.array(losses)


def train(lib, name, n, **kw):
    """n steps from the start; -> (losses, final parameters as arrays, the optimizer)."""
    ps, loss_fn = problem(lib, name)
    opt = lib.optim.LBFGS(ps, **kw)
    losses = steps(lib, ps, loss_fn, opt, n)
    return losses, [p.detach().numpy().copy() for p in ps], opt


CASES = [   # (problem, line search, LBFGS arguments): 3 steps of each
    ("rosenbrock", None, dict(max_iter=5)),
    ("rosenbrock", "strong_wolfe", dict(max_iter=5)),
    ("rosenbrock", None, dict(max_iter=8, history_size=3)),     # the history fills and shifts
    ("rosenbrock", "strong_wolfe", dict()),                     # converges (loss 2e-10)
    ("least_squares", None, dict(max_iter=3, history_size=2)),
    ("least_squares", "strong_wolfe", dict(max_iter=3, history_size=2)),
    ("mlp", None, dict(max_iter=10, history_size=3)),
    ("mlp", "strong_wolfe", dict(max_iter=10, history_size=3)),
    ("mlp", None, dict(lr=0.5, history_size=4, max_iter=10)),
    ("mlp", "strong_wolfe", dict(lr=0.5, history_size=4, max_iter=10)),
    ("mlp", "strong_wolfe", dict(lr=0.5, history_size=4, max_eval=30)),   # evaluations run out
]
# (Rosenbrock without a line search, 20 iterations a step, is chaotic: the last-bit
# differences reach 1e-6 by the third step, so it has fewer iterations here.)


@pytest.mark.parametrize("name,line_search_fn,kw", CASES, ids=[
    "-".join([n, ls or "fixed-step"] + [f"{k}={v}" for k, v in kw.items()]) for n, ls, kw in CASES])
def test_iterates_as_torch(name, line_search_fn, kw):
    want, want_params, t_opt = train(torch, name, 3, line_search_fn=line_search_fn, **kw)
    got, got_params, p_opt = train(pg, name, 3, line_search_fn=line_search_fn, **kw)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13, err_msg="losses")
    assert want[-1] < want[0], "the run should actually train"
    for i, (p, t) in enumerate(zip(got_params, want_params)):
        np.testing.assert_allclose(p, t, rtol=1e-10, atol=1e-10, err_msg=f"parameter {i}")
    t_state, p_state = t_opt.state_dict()["state"][0], p_opt.state_dict()["state"][0]
    assert list(p_state) == list(t_state), "the state's keys, in torch's order"
    for key in ("func_evals", "n_iter"):
        assert p_state[key] == t_state[key], key
    assert len(p_state["old_dirs"]) == len(t_state["old_dirs"]) <= kw.get("history_size", 100)
    np.testing.assert_allclose(p_state["d"].numpy(), t_state["d"].numpy(), rtol=1e-7, atol=1e-10)
    assert p_opt.param_groups[0].keys() == t_opt.param_groups[0].keys()
    assert {k: v for k, v in p_opt.param_groups[0].items() if k != "params"} == \
           {k: v for k, v in t_opt.param_groups[0].items() if k != "params"}


def test_float32_stays_float32_and_close_to_torch():
    def run(lib):
        w = lib.tensor(W0.astype(np.float32), requires_grad=True)
        x, y = lib.tensor(X.astype(np.float32)), lib.tensor(Y[:, :1].astype(np.float32))
        opt = lib.optim.LBFGS([w], max_iter=5, history_size=2, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = ((x @ w[:1].T - y) ** 2).mean()
            loss.backward()
            return loss
        return [opt.step(closure).item() for _ in range(3)], opt.state[w]
    want, _ = run(torch)
    got, state = run(pg)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert state["d"].dtype == state["prev_flat_grad"].dtype == pg.float32


def test_stationary_start_returns_after_one_evaluation():
    for lib in (torch, pg):
        x = lib.zeros(3, dtype=lib.float64, requires_grad=True)
        opt = lib.optim.LBFGS([x])
        loss = opt.step(lambda: (opt.zero_grad(), (x ** 2).sum().backward(), (x ** 2).sum())[-1])
        assert loss.item() == 0 and opt.state[x] == {"func_evals": 1, "n_iter": 0}


# ---- errors, as torch's --------------------------------------------------------------------------
def test_step_needs_a_closure():
    _, err = check_raises(lambda lib, x: lib.optim.LBFGS([x.requires_grad_()]).step(), [1.0, 2.0],
                          error=TypeError)
    assert "LBFGS.step() missing 1 required positional argument: 'closure'" in str(err)


def test_one_param_group_only():
    t_err, p_err = check_raises(lambda lib, x, y: lib.optim.LBFGS(
        [{"params": [x.requires_grad_()]}, {"params": [y.requires_grad_()], "lr": 0.1}]), [1.0], [2.0],
        error=ValueError)
    assert str(p_err) == str(t_err) == "LBFGS doesn't support per-parameter options (parameter groups)"


def test_only_strong_wolfe_line_search():
    def step(lib, x):
        opt = lib.optim.LBFGS([x.requires_grad_()], line_search_fn="backtracking")
        opt.step(lambda: (opt.zero_grad(), (x ** 2).sum().backward(), (x ** 2).sum())[-1])
    check_raises(step, [1.0, 2.0], match="only 'strong_wolfe' is supported", error=RuntimeError)


def test_tensor_lr_must_have_one_element():
    check_raises(lambda lib, x, lr: lib.optim.LBFGS([x.requires_grad_()], lr=lr), [1.0], [0.1, 0.2],
                 match="Tensor lr must be 1-element", error=ValueError)


# ---- state_dict ----------------------------------------------------------------------------------
@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_state_dict_round_trip_continues_identically(line_search_fn, tmp_path):
    """2 steps, save (through pg.save), 3 more: a fresh optimizer loading the saved state
    continues exactly as the uninterrupted one; and state_dict() is a copy (the later steps
    change the live history lists in place)."""
    kw = dict(max_iter=5, history_size=3, line_search_fn=line_search_fn)
    ps, loss_fn = problem(pg, "mlp")
    opt = pg.optim.LBFGS(ps, **kw)
    steps(pg, ps, loss_fn, opt, 2)
    sd = opt.state_dict()
    pg.save({"params": [p.detach() for p in ps], "opt": sd}, tmp_path / "ckpt.pt")
    saved_dirs = [d.numpy().copy() for d in sd["state"][0]["old_dirs"]]
    straight = steps(pg, ps, loss_fn, opt, 3)
    assert [d.numpy().tolist() for d in sd["state"][0]["old_dirs"]] == [d.tolist() for d in saved_dirs]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ckpt = pg.load(tmp_path / "ckpt.pt")
    ps2, loss_fn2 = problem(pg, "mlp")
    with pg.no_grad():
        for p, v in zip(ps2, ckpt["params"]):
            p.copy_(v)
    fresh = pg.optim.LBFGS(ps2, **kw)
    fresh.load_state_dict(ckpt["opt"])
    again = steps(pg, ps2, loss_fn2, fresh, 3)
    np.testing.assert_array_equal(again, straight)
    for p, q in zip(ps2, ps):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert fresh.state_dict()["state"][0]["n_iter"] == opt.state_dict()["state"][0]["n_iter"] > 10
