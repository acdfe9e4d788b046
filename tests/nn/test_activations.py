"""The activations of nn/activation.py and nn/functional_activation.py against PyTorch:
values and gradients (check_op), float64 finite differences for the smooth ones, the modules'
in-place forms and reprs, PReLU's learned slopes, and the argument errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
from tests.helpers import check_op, fd_check

F = pg.nn.functional

# name: (kwargs, smooth (finite differences apply), input range)
CASES = {
    "elu": ({"alpha": 0.7}, True, (-3, 3)), "selu": ({}, True, (-3, 3)), "celu": ({"alpha": 1.5}, True, (-3, 3)),
    "hardtanh": ({"min_val": -0.5, "max_val": 2.0}, False, (-3, 3)), "relu6": ({}, False, (-3, 8)),
    "hardsigmoid": ({}, False, (-5, 5)), "hardswish": ({}, False, (-5, 5)), "mish": ({}, True, (-4, 4)),
    "logsigmoid": ({}, True, (-6, 6)), "softsign": ({}, False, (-3, 3)),
    "softshrink": ({"lambd": 0.3}, False, (-2, 2)), "hardshrink": ({"lambd": 0.4}, False, (-2, 2)),
    "tanhshrink": ({}, True, (-3, 3)), "threshold": ({"threshold": 0.2, "value": -3.0}, False, (-2, 2)),
    "glu": ({"dim": 1}, True, (-3, 3)), "softmin": ({"dim": 1}, True, (-3, 3)),
}


@pytest.mark.parametrize("name", CASES)
def test_activation_matches_torch(name, device):
    kw, _, (lo, hi) = CASES[name]
    check_op(lambda x: (getattr(TF, name) if isinstance(x, torch.Tensor) else getattr(F, name))(x, **kw),
             [(4, 6)], low=lo, high=hi, device=device)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c[1]])
def test_smooth_activation_finite_differences(name, device):
    kw, _, (lo, hi) = CASES[name]
    fd_check(lambda x: getattr(F, name)(x, **kw), [(3, 4)], low=lo, high=hi, device=device)


@pytest.mark.parametrize("shape,n", [((4, 3, 5), 3), ((4, 3, 5), 1), ((6,), 1), ((), 1), ((2, 4), 4)])
def test_prelu_matches_torch(shape, n, device):
    check_op(lambda x, w: (TF if isinstance(x, torch.Tensor) else F).prelu(x, w), [shape, (n,)],
             device=device)


@pytest.mark.parametrize("name,args", [("ELU", (0.5,)), ("CELU", (0.8,)), ("SELU", ()), ("Hardtanh", (-1.0, 0.5)),
                                       ("ReLU6", ()), ("Hardsigmoid", ()), ("Hardswish", ()), ("Mish", ()),
                                       ("Threshold", (0.1, -1.0))])
def test_inplace_modules_write_the_input_and_keep_gradients(name, args):
    x0 = np.random.default_rng(0).uniform(-4, 7, (3, 5)).astype(np.float32)
    outs = []
    for inplace in (False, True):
        x = pg.tensor(x0, requires_grad=True)
        h = x * 1.0                       # a non-leaf to write into
        y = getattr(pg.nn, name)(*args, inplace=inplace)(h)
        (y * pg.arange(15.0).reshape(3, 5)).sum().backward()
        outs.append((y.detach().numpy(), x.grad.numpy()))
        if inplace:
            assert y is h
    np.testing.assert_allclose(outs[0][0], outs[1][0])
    np.testing.assert_allclose(outs[0][1], outs[1][1])


def test_prelu_module_learns_its_slopes_as_torch():
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    p, t = pg.nn.PReLU(3, init=0.1), torch.nn.PReLU(3, init=0.1)
    assert repr(p) == repr(t) and [n for n, _ in p.named_parameters()] == ["weight"]
    p(pg.tensor(x)).sum().backward()
    t(torch.tensor(x)).sum().backward()
    np.testing.assert_allclose(p.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-6)


def test_activation_errors_match_torch():
    for make in (lambda lib, f: f.glu(lib.ones(2, 3), dim=1),
                 lambda lib, f: f.hardtanh(lib.ones(2), 1.0, 0.0),
                 lambda lib, f: f.softshrink(lib.ones(2), -0.5),
                 lambda lib, f: f.prelu(lib.ones(2, 3), lib.ones(2)),
                 lambda lib, f: f.prelu(lib.ones(6), lib.ones(6)),
                 lambda lib, f: lib.nn.Hardtanh(2.0, 1.0)):
        with pytest.raises(Exception) as e:
            make(torch, TF)
        with pytest.raises(e.type):
            make(pg, F)


def test_functional_forms_take_torch_arguments_and_inplace():
    """F.relu / leaky_relu / silu with input= and inplace=, softmax's _stacklevel position, and
    the in-place F forms (relu_, elu_, ...) modify their input like torch's."""
    x = np.array([-1.5, -0.2, 0.0, 0.7, 2.0], dtype=np.float32)
    for name, args in [("relu_", ()), ("leaky_relu_", (0.2,)), ("elu_", (0.5,)), ("selu_", ()),
                       ("celu_", (0.7,)), ("hardtanh_", (-0.5, 0.5)), ("threshold_", (0.1, -3.0)),
                       ("rrelu_", (0.1, 0.3, False))]:
        p, t = pg.tensor(x), torch.tensor(x)
        rp, rt = getattr(pg.nn.functional, name)(p, *args), getattr(TF, name)(t, *args)
        assert rp is p
        np.testing.assert_allclose(p.numpy(), t.numpy(), rtol=1e-6, atol=1e-7, err_msg=name)
    for name in ("relu", "leaky_relu", "silu"):
        p, t = pg.tensor(x), torch.tensor(x)
        getattr(pg.nn.functional, name)(input=p, inplace=True)
        getattr(TF, name)(input=t, inplace=True)
        np.testing.assert_allclose(p.numpy(), t.numpy(), rtol=1e-6, atol=1e-7, err_msg=name)
    np.testing.assert_allclose(pg.nn.functional.softmax(pg.tensor(x), 0, 3, dtype=pg.float64).numpy(),
                               TF.softmax(torch.tensor(x), 0, 3, dtype=torch.float64).numpy(), rtol=1e-12)


def test_rrelu_training_draws_slopes_in_range_and_eval_uses_the_mean():
    m = pg.nn.RReLU(0.1, 0.3)
    assert repr(m) == repr(torch.nn.RReLU(0.1, 0.3))
    x = -pg.ones(1000)
    y = m(x)                                          # training: slopes ~ U(0.1, 0.3)
    assert 0.1 <= -y.max().item() and -y.min().item() <= 0.3 and y.std().item() > 0.03
    m.eval()
    np.testing.assert_allclose(m(x).numpy(), -0.2 * np.ones(1000), rtol=1e-6)
    w = pg.tensor([-2.0, 3.0], requires_grad=True)
    pg.nn.functional.rrelu(w, 0.1, 0.3, training=True).sum().backward()
    assert 0.1 <= w.grad[0].item() <= 0.3 and w.grad[1].item() == 1.0


def test_parameters_to_vector_and_back_match_torch():
    p, t = pg.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    torch.nn.utils.vector_to_parameters(torch.arange(8.0), t.parameters())
    pg.nn.utils.vector_to_parameters(pg.arange(8.0), p.parameters())
    for a, b in zip(p.parameters(), t.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    v = pg.nn.utils.parameters_to_vector(p.parameters())
    assert v.tolist() == torch.nn.utils.parameters_to_vector(t.parameters()).tolist()
    v.sum().backward()                                # differentiable, as torch's
    assert all(a.grad is not None for a in p.parameters())
    with pytest.raises(RuntimeError):
        pg.nn.utils.vector_to_parameters(pg.arange(2.0), p.parameters())
    with pytest.raises(TypeError):
        pg.nn.utils.vector_to_parameters([1.0] * 8, p.parameters())
