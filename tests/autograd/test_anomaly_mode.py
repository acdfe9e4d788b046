"""Anomaly mode (torch.autograd.detect_anomaly / set_detect_anomaly), checked against torch:
the forward records where each node was created, a backward producing NaN raises naming the
node after a warning that shows that place, and the mode switches and restores as torch's."""
from __future__ import annotations

import inspect
import warnings

import pytest
import torch

import paragrad as pg

# every detect_anomaly() warns that it slows things down; tests that check it catch it themselves
pytestmark = pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")

NAN_MSG = r"Function '(\w+)' returned nan values in its (\d+)th output\."
LIBS = [pytest.param(pg, id="paragrad"), pytest.param(torch, id="torch")]


@pytest.fixture(autouse=True)
def _mode_off_after():
    yield
    pg.set_anomaly_enabled(False)
    torch.set_anomaly_enabled(False)


def _t(lib, values, device, requires_grad=True):
    kw = {"device": device} if lib is pg else {}
    return lib.tensor(values, requires_grad=requires_grad, **kw)


def _line_below():
    """The line number just after the caller's current line."""
    return inspect.currentframe().f_back.f_lineno + 1


def _backward_error(fn):
    """(exception, anomaly warning text) from running fn, which must raise."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(Exception) as info:
            fn()
    # torch appends where in its C++ the warning came from
    texts = [str(w.message).split(" (Triggered internally")[0] for w in seen
             if "Error detected in" in str(w.message)]
    assert len(texts) == 1, [str(w.message) for w in seen]
    assert all(w.category is UserWarning for w in seen)
    return info.value, texts[0]


@pytest.mark.parametrize("lib", LIBS)
def test_nan_from_sqrt_of_a_negative_names_the_node_and_where_it_was_made(lib, device):
    x = _t(lib, [-1.0, 4.0], device)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        mode = lib.autograd.detect_anomaly()
    with mode:
        line = _line_below()
        y = x.sqrt().sum()
        err, text = _backward_error(y.backward)
    assert isinstance(err, RuntimeError)
    name = pytest.importorskip("re").fullmatch(NAN_MSG, str(err)).group(1)
    assert name == "SqrtBackward0"                                  # torch's class name
    assert text.startswith(f"Error detected in {name}. Traceback of forward call that caused the error:\n")
    # the innermost frame shown is this test's own line, not the framework's internals
    assert text.rstrip("\n").endswith(f'{__file__}", line {line}, in '
                                      f'test_nan_from_sqrt_of_a_negative_names_the_node_and_where_it_was_made\n'
                                      f'    y = x.sqrt().sum()')
    assert y.grad_fn.metadata["traceback_"][-1].startswith(f'  File "{__file__}", line {line}')


@pytest.mark.parametrize("lib", LIBS)
def test_nan_from_zero_over_zero_in_a_custom_function_backward(lib, device):
    class ZeroOverZero(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g * 0 / 0

    x = _t(lib, [1.0, 2.0], device)
    with lib.autograd.detect_anomaly():
        line = _line_below()
        y = ZeroOverZero.apply(x).sum()
        err, text = _backward_error(y.backward)
    assert str(err) == "Function 'ZeroOverZeroBackward' returned nan values in its 0th output."
    assert text.startswith("Error detected in ZeroOverZeroBackward. Traceback of forward call")
    assert f'{__file__}", line {line}' in text


@pytest.mark.parametrize("lib", LIBS)
def test_nan_reported_at_the_output_index_that_has_it(lib, device):
    x = _t(lib, [float("nan"), 1.0], device, requires_grad=False)
    w = _t(lib, [2.0, 3.0], device)
    with lib.autograd.detect_anomaly():
        y = (x * w).sum()
        err, _ = _backward_error(y.backward)
    assert str(err).endswith("returned nan values in its 1th output.")


@pytest.mark.parametrize("lib", LIBS)
def test_autograd_grad_is_checked_too(lib, device):
    x = _t(lib, [-1.0, 4.0], device)
    with lib.autograd.detect_anomaly():
        y = x.sqrt().sum()
        err, _ = _backward_error(lambda: lib.autograd.grad(y, x))
    assert pytest.importorskip("re").fullmatch(NAN_MSG, str(err))


@pytest.mark.parametrize("lib", LIBS)
def test_check_nan_false_lets_nan_through_but_keeps_tracebacks(lib, device):
    x = _t(lib, [-1.0, 4.0], device)
    with lib.autograd.detect_anomaly(check_nan=False):
        assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        y = x.sqrt().sum()
        y.backward()
        assert y.grad_fn.metadata["traceback_"]
    assert x.grad.isnan().tolist() == [True, False]


@pytest.mark.parametrize("lib", LIBS)
def test_off_by_default_nothing_recorded_nothing_raised(lib, device):
    assert not lib.is_anomaly_enabled()
    x = _t(lib, [-1.0, 4.0], device)
    y = x.sqrt().sum()
    y.backward()
    assert y.grad_fn.metadata == {}
    assert x.grad.isnan().tolist() == [True, False]


@pytest.mark.parametrize("lib", LIBS)
def test_error_inside_a_backward_warns_with_the_forward_traceback(lib, device):
    class Broken(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward")

    x = _t(lib, [1.0], device)
    with lib.autograd.detect_anomaly():
        line = _line_below()
        y = Broken.apply(x).sum()
        err, text = _backward_error(y.backward)
    assert isinstance(err, ValueError) and str(err) == "boom in backward"
    assert text.startswith("Error detected in BrokenBackward. Traceback of forward call")
    assert f'{__file__}", line {line}' in text


@pytest.mark.parametrize("lib", LIBS)
def test_second_backward_error_gets_the_traceback(lib, device):
    x = _t(lib, [1.0, 2.0], device)
    with lib.autograd.detect_anomaly():
        y = (x * x).sum()
        y.backward()
        err, text = _backward_error(y.backward)
    assert "backward through the graph a second time" in str(err)
    assert text.startswith("Error detected in Mul")


@pytest.mark.parametrize("lib", LIBS)
def test_forward_outside_the_mode_has_no_traceback_to_show(lib, device):
    x = _t(lib, [-1.0, 4.0], device)
    y = x.sqrt().sum()
    with lib.autograd.detect_anomaly():
        err, text = _backward_error(y.backward)
    assert isinstance(err, RuntimeError)
    assert text.endswith(". No forward pass information available. Enable detect anomaly during "
                         "forward pass for more information.")


@pytest.mark.parametrize("lib", LIBS)
def test_mode_restored_after_contexts_nested_and_raising(lib):
    A = lib.autograd
    state = lambda: (lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled())   # noqa: E731
    assert state() == (False, True)
    with A.detect_anomaly():
        assert state() == (True, True)
        with A.detect_anomaly(check_nan=False):
            assert state() == (True, False)
            with A.set_detect_anomaly(False):
                assert state() == (False, True)
            assert state() == (True, False)
        assert state() == (True, True)
    assert state() == (False, True)
    with pytest.raises(KeyError):
        with A.detect_anomaly():
            raise KeyError("x")
    assert state() == (False, True)
    A.set_detect_anomaly(True, check_nan=False)         # the function form switches at once
    assert state() == (True, False)
    A.set_detect_anomaly(False)
    assert state() == (False, True)
    lib.set_anomaly_enabled(True)
    assert state() == (True, True)


def test_detect_anomaly_as_a_decorator():
    # a paragrad extension: torch's detect_anomaly object is not callable
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        @pg.autograd.detect_anomaly(check_nan=False)
        def inside():
            return pg.is_anomaly_enabled(), pg.is_anomaly_check_nan_enabled()
    assert not pg.is_anomaly_enabled()
    assert inside() == (True, False)
    assert (pg.is_anomaly_enabled(), pg.is_anomaly_check_nan_enabled()) == (False, True)


def test_torch_module_path():
    import paragrad.autograd.anomaly_mode as am
    from paragrad.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
    assert am is pg.autograd.anomaly_mode
    assert detect_anomaly is pg.autograd.detect_anomaly
    assert set_detect_anomaly is pg.autograd.set_detect_anomaly
    assert am.__all__ == torch.autograd.anomaly_mode.__all__


def test_forward_traceback_goes_through_modules_like_torch(device):
    # frames of nn modules show (torch's are Python too); the op machinery's do not
    lin = pg.nn.Linear(3, 2).to(device)
    with pg.autograd.detect_anomaly():
        line = _line_below()
        y = lin(pg.ones(1, 3, device=device))
    tb = y.grad_fn.metadata["traceback_"]
    assert f'{__file__}", line {line}' in "".join(tb)
    assert not any("/paragrad/ops/" in f or "/paragrad/autograd/" in f for f in tb)
    assert any("/paragrad/nn/" in f for f in tb)
