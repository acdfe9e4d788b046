"""F's activations against PyTorch: values and gradients (check_op), float64 finite differences
for the smooth ones, the functional forms' torch arguments and in-place forms, rrelu's slopes,
gumbel_softmax, the argument errors, and the unary forms' and modules' PyTorch signatures."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
from tests.helpers import check_op, fd_check, lib


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
    w = pg.tensor([-2.0, 3.0, 0.0], requires_grad=True)
    pg.nn.functional.rrelu(w, 0.1, 0.3, training=True).sum().backward()
    assert 0.1 <= w.grad[0].item() <= 0.3 and w.grad[1].item() == 1.0
    assert 0.1 <= w.grad[2].item() <= 0.3          # (0 takes a drawn slope, as torch's kernel)
    t = torch.tensor([0.0], requires_grad=True)
    torch.nn.functional.rrelu(t, 0.1, 0.3, training=True).sum().backward()
    assert 0.1 <= t.grad.item() <= 0.3


rng = np.random.default_rng(0)


def F_of(x):
    return lib(x).nn.functional


@pytest.mark.parametrize("dim", [-1, 1])
def test_gumbel_softmax(device, dim):
    logits = pg.tensor(rng.standard_normal((4, 5, 3)).astype(np.float32), device=device, requires_grad=True)
    w = pg.tensor(rng.standard_normal((4, 5, 3)).astype(np.float32), device=device)
    pg.manual_seed(1)
    soft = F_of(logits).gumbel_softmax(logits, tau=0.5, dim=dim)
    assert tuple(soft.shape) == (4, 5, 3)
    s = soft.detach().cpu().numpy()
    np.testing.assert_allclose(s.sum(dim), 1.0, rtol=1e-5)
    assert (s >= 0).all()
    (soft * w).sum().backward()
    g_soft = logits.grad.cpu().numpy().copy()
    logits.grad = None
    pg.manual_seed(1)      # the same noise: the hard sample is the one-hot of the soft one's argmax
    hard = F_of(logits).gumbel_softmax(logits, tau=0.5, hard=True, dim=dim)
    h = hard.detach().cpu().numpy()
    np.testing.assert_array_equal(h, (s == s.max(dim, keepdims=True)).astype(np.float32))
    np.testing.assert_allclose(h.sum(dim), 1.0)
    (hard * w).sum().backward()          # straight-through: the soft sample's gradient
    np.testing.assert_allclose(logits.grad.cpu().numpy(), g_soft, rtol=1e-4, atol=1e-5)


def test_activation_signatures():
    for inplace in (False, True):
        assert repr(pg.nn.SiLU(inplace)) == repr(torch.nn.SiLU(inplace))
        x = pg.tensor([-1.0, 2.0])
        y = pg.nn.SiLU(inplace)(x)
        assert (y is x) == inplace
    with pytest.warns(FutureWarning, match="deprecated"):
        h = pg.nn.Hardtanh(min_value=-2.0, max_value=3.0)
    assert (h.min_val, h.max_val) == (-2.0, 3.0)
    assert pg.exp(input=pg.zeros(1)).tolist() == [1.0]
    assert pg.nn.functional.pad(input=pg.ones(2), pad=(1, 0)).tolist() == [0.0, 1.0, 1.0]
    assert pg.nn.functional.softmin(pg.ones(2), 0, 3).tolist() == [0.5, 0.5]


@pytest.mark.parametrize("args", [(), (-2.5, 2.5), (0.0, 6.0)])
def test_hardtanh_of_integers_stays_integer(args, device):
    """On an int tensor the bounds are taken in its dtype (truncated), as torch's: int64 in,
    int64 out (relu6 too)."""
    x = np.array([-5, 0, 3, 9], np.int64)
    got = pg.nn.functional.hardtanh(pg.tensor(x, device=device), *args)
    want = torch.nn.functional.hardtanh(torch.tensor(x), *args)
    assert got.dtype is pg.int64
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    assert pg.nn.functional.relu6(pg.tensor(x, device=device)).cpu().numpy().tolist() == [0, 0, 3, 6]


def test_threshold_in_place_takes_torchs_keywords(device):
    for lib_ in (pg, torch):
        x = lib_.tensor([1.0, -1.0, 0.5], device=device if lib_ is pg else "cpu")
        assert lib_.nn.functional.threshold_(x, threshold=0.75, value=5.0) is x
        assert x.tolist() == [1.0, 5.0, 5.0]
