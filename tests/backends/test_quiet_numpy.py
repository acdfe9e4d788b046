"""Ops raise no NumPy floating-point warnings (torch computes inf/nan silently), and leave the
caller's own NumPy error state as it was."""
import importlib
import sys
import warnings

import numpy as np
import pytest

import paragrad as pg
import paragrad.nn.functional as F

INF, NAN = float("inf"), float("nan")


def _edge_cases(device):
    big = pg.tensor([1000.0, -1000.0, 0.0], device=device, requires_grad=True)
    zero = pg.tensor([0.0, 0.0, -1.0], device=device, requires_grad=True)
    inf = pg.tensor([INF, -INF, NAN], device=device)
    m = pg.tensor([[3e38, 3e38], [3e38, 3e38]], device=device)
    return [
        lambda: big.exp(), lambda: big.exp().sum().backward(), lambda: zero.log(),
        lambda: zero.log().sum().backward(), lambda: zero.sqrt().sum().backward(),
        lambda: zero / zero, lambda: 1 / zero, lambda: zero.reciprocal(), lambda: zero.rsqrt(),
        lambda: inf - inf, lambda: inf * 0, lambda: inf.to(pg.int32), lambda: m @ m,
        lambda: m.sum(), lambda: m.prod(), lambda: (m * m).mean(), lambda: m.var(),
        lambda: pg.tensor([NAN, 1.0], device=device).max(), lambda: zero ** -1.0,
        lambda: zero.fmod(0.0), lambda: zero.remainder(0.0), lambda: inf.sigmoid(),
        lambda: inf.tanh(), lambda: big.softmax(0), lambda: big.log_softmax(0),
        lambda: F.layer_norm(pg.zeros(2, 3, device=device), (3,), eps=0.0),
        lambda: F.normalize(pg.zeros(2, 3, device=device), eps=0.0),
        lambda: pg.linalg.inv(pg.tensor([[1e-30, 0], [0, 1e-30]], device=device)),
        lambda: pg.full((3,), 1e30, device=device, dtype=pg.float16),
        lambda: pg.tensor([1e30], device=device).to(pg.float16),
    ]


def test_no_floating_point_warning_from_ops(device):
    """exp(1000), 0/0, log(0), NaN casts, overflowing matmuls and reductions stay silent."""
    for i, case in enumerate(_edge_cases(device)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            try:
                case()
            except RuntimeWarning as w:
                pytest.fail(f"case {i}: {w}")


def test_ops_keep_the_callers_numpy_error_state():
    """The backend silences only its own calls: np.seterr and np.errstate set by the user
    still hold for the user's NumPy code before, during and after paragrad ops."""
    old = np.seterr(over="raise")
    try:
        x = pg.tensor([1000.0])
        x.exp()
        assert np.geterr()["over"] == "raise"
        with pytest.raises(FloatingPointError):
            np.exp(np.float32(1000.0))
        with np.errstate(invalid="raise"):
            (x - x.exp()).exp()
            with pytest.raises(FloatingPointError):
                np.float64(np.inf) - np.float64(np.inf)
    finally:
        np.seterr(**old)


def test_quiet_falls_back_to_errstate_without_numpys_context_variable(monkeypatch):
    """NumPy 1.x has no error-state context variable: quiet then enters np.errstate."""
    monkeypatch.setitem(sys.modules, "numpy._core._ufunc_config", None)     # import fails
    spec = importlib.util.find_spec("paragrad.backends.quiet_numpy")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.IGNORE is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert np.isinf(mod.quiet(np.exp)(np.float32(1000.0)))
        with pytest.raises(RuntimeWarning):
            np.exp(np.float32(1000.0))
