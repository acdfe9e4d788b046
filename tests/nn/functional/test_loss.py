"""F's losses and the loss modules against torch.nn.functional / torch.nn: forward values and
gradients for every option (weights, ignore_index, label smoothing, reductions, input
layouts), float64 finite differences and second derivatives; the KL divergence with zero
probabilities; the losses' PyTorch argument lists (positional order, the deprecated
size_average / reduce flags, mse / l1's per-element weight)."""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
import paragrad.nn as nn
import paragrad.nn.functional as F
from tests.helpers import _np, assert_close, check_op, check_raises, fd_check, make_input


REDUCTIONS = ["none", "sum", "mean"]


def run_both(fname, args, kwargs=None, grad=(0,), device="cpu", atol=1e-5, rtol=1e-4, module=None):
    """Call F.<fname> and torch's on the same values (NumPy arrays in args/kwargs become
    tensors; args whose index is in `grad` require grad), compare the result, then
    backpropagate one random cotangent and compare those inputs' gradients."""
    kwargs = kwargs or {}

    def conv(lib, a, rg):
        if not isinstance(a, np.ndarray):
            return a
        if lib is torch:
            return torch.tensor(a, requires_grad=rg)
        return pg.tensor(a, device=device, requires_grad=rg)

    t_args = [conv(torch, a, i in grad) for i, a in enumerate(args)]
    p_args = [conv(pg, a, i in grad) for i, a in enumerate(args)]
    t_kw = {k: conv(torch, v, False) for k, v in kwargs.items()}
    p_kw = {k: conv(pg, v, False) for k, v in kwargs.items()}
    if module is None:
        yt = getattr(TF, fname)(*t_args, **t_kw)
        yp = getattr(F, fname)(*p_args, **p_kw)
    else:
        yt = getattr(torch.nn, module)(**t_kw)(*t_args)
        yp = getattr(nn, module)(**p_kw)(*p_args)
    assert_close(yp, yt, atol, rtol, f"{fname} output")
    if not grad:
        return yp, yt
    w = make_input(tuple(yt.shape), str(args[0].dtype), -1, 1, np.random.default_rng(7))
    (yt * torch.tensor(w)).sum().backward()
    (yp * pg.tensor(w, device=device)).sum().backward()
    for i in grad:
        assert_close(p_args[i].grad, t_args[i].grad, atol * 10, rtol * 10, f"{fname} gradient of arg {i}")
    return yp, yt


# ---- cross_entropy / nll_loss with class indices ---------------------------------------------------
LAYOUTS = {"NC": ((5, 4), (5,)), "C": ((4,), ()), "NCd1d2": ((2, 4, 3, 2), (2, 3, 2))}


def class_case(layout, ignore, seed=0):
    """Input values and integer targets; `ignore` is None, or the ignore_index whose class some
    targets (one in three) take."""
    rng = np.random.default_rng(seed)
    xshape, tshape = LAYOUTS[layout]
    x = rng.uniform(-3, 3, xshape).astype(np.float32)
    target = rng.integers(0, xshape[0 if layout == "C" else 1], tshape).astype(np.int64)
    if ignore is not None:
        mask = (np.arange(target.size) % 3 == 1).reshape(tshape)
        if layout == "C":
            mask = np.array(False)
        target = np.where(mask, ignore, target)
    weight = rng.uniform(0.2, 2.0, xshape[0 if layout == "C" else 1]).astype(np.float32)
    return x, target, weight


CE_CASES = list(itertools.product(LAYOUTS, [False, True], [None, -100, 2], [0.0, 0.15], REDUCTIONS))


@pytest.mark.parametrize("layout,weighted,ignore,smoothing,reduction", CE_CASES)
def test_cross_entropy_class_indices(layout, weighted, ignore, smoothing, reduction, device):
    x, target, weight = class_case(layout, ignore)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    if weighted:
        kw["weight"] = weight
    if ignore is not None:
        kw["ignore_index"] = ignore
    run_both("cross_entropy", [x, target], kw, device=device)


NLL_CASES = list(itertools.product(LAYOUTS, [False, True], [None, -100, 2], REDUCTIONS))


@pytest.mark.parametrize("layout,weighted,ignore,reduction", NLL_CASES)
def test_nll_loss(layout, weighted, ignore, reduction, device):
    x, target, weight = class_case(layout, ignore, seed=1)
    kw = dict(reduction=reduction)
    if weighted:
        kw["weight"] = weight
    if ignore is not None:
        kw["ignore_index"] = ignore
    run_both("nll_loss", [x, target], kw, device=device)


@pytest.mark.parametrize("ignore", [-100, 3])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_targets_of_known_range(ignore, reduction, device):
    """Targets whose range paragrad knows without reading them (randint's): with ignore_index
    outside that range nll_loss takes a shorter path; both paths match torch, with gradients."""
    x = make_input((2, 6, 5), rng=np.random.default_rng(3))    # (N, C, d)
    pg.manual_seed(0)
    target = pg.randint(0, 6, (2, 5), device=device)
    xp, xt = pg.tensor(x, device=device, requires_grad=True), torch.tensor(x, requires_grad=True)
    yp = F.nll_loss(xp, target, ignore_index=ignore, reduction=reduction)
    yt = TF.nll_loss(xt, torch.tensor(_np(target)), ignore_index=ignore, reduction=reduction)
    assert_close(yp, yt, 1e-6, 1e-5, "nll_loss")
    cot = np.random.default_rng(1).standard_normal(tuple(yt.shape)).astype(np.float32)
    yp.backward(pg.tensor(cot, device=device))
    yt.backward(torch.tensor(cot))
    assert_close(xp.grad, xt.grad, 1e-6, 1e-5, "nll_loss gradient")


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_all_targets_ignored(smoothing, weighted, reduction, device):
    """torch: mean is 0/0 = nan, sum is 0, none is zeros; the gradient is zero everywhere."""
    x = make_input((3, 4))
    target = np.full(3, -100, np.int64)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    if weighted:
        kw["weight"] = np.array([1.0, 2.0, 0.5, 1.5], np.float32)
    yp, _ = run_both("cross_entropy", [x, target], kw, device=device)
    if reduction == "mean":
        assert np.isnan(_np(yp))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_all_targets_ignored(reduction, device):
    run_both("nll_loss", [make_input((3, 4)), np.full(3, 1, np.int64)],
             dict(reduction=reduction, ignore_index=1), device=device)


def test_cross_entropy_zero_weight_sum(device):
    """Every target's class weighs 0: mean is 0/0 as in torch."""
    x = make_input((3, 4))
    run_both("cross_entropy", [x, np.array([0, 0, 1], np.int64)],
             dict(weight=np.array([0.0, 0.0, 1.0, 1.0], np.float32)), device=device)


def test_cross_entropy_large_logits_stable(device):
    x = np.array([[1000.0, -1000.0, 0.0], [-500.0, 500.0, 499.0]], np.float32)
    yp, _ = run_both("cross_entropy", [x, np.array([1, 2], np.int64)], device=device)
    assert np.isfinite(_np(yp))


def test_cross_entropy_ignored_row_with_infinite_logit(device):
    """An ignored row adds nothing to the loss, even an inf logit's nan (torch skips it)."""
    x = np.array([[np.inf, 0.0, 1.0], [0.5, -1.0, 2.0], [0.1, 0.2, 0.3]], np.float32)
    yp, _ = run_both("cross_entropy", [x, np.array([-1, 2, 0], np.int64)], dict(ignore_index=-1),
                     device=device)
    assert np.isfinite(_np(yp))


@pytest.mark.parametrize("target", [[-100, 1, -5], [-100, 7, 0], [-5, 0, 1]], ids=["negative", "high", "no-ignore"])
def test_cross_entropy_bad_target_next_to_ignored_ones(target, device):
    """A bad target is found whether or not ignore_index (outside [0, C)) is among them."""
    x = pg.tensor(make_input((3, 4)), device=device)
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(x, pg.tensor(target, device=device))


def test_cross_entropy_of_a_non_tensor_is_torchs_type_error():
    with pytest.raises(TypeError, match="argument 'input' must be Tensor, not list"):
        F.cross_entropy([[1.0, 2.0]], pg.tensor([0]))
    with pytest.raises(TypeError, match="argument 'target' must be Tensor, not list"):
        F.cross_entropy(pg.ones(1, 2), [0])


@pytest.mark.parametrize("dtype", ["int32", "int16", "int8", "bool", "uint8"])
@pytest.mark.parametrize("fname,shape", [("nll_loss", (3, 4)), ("nll_loss", (3, 4, 2)), ("cross_entropy", (4,)),
                                         ("cross_entropy", (3, 4, 2, 2))])
def test_class_index_targets_are_int64_or_uint8(fname, shape, dtype, device):
    """torch's nll_loss kernels take int64 class indices, and uint8 for a (C,) or (N, C)
    input (its nll_loss2d, for more dims, int64 only); they refuse the others."""
    x = make_input(shape)
    target = np.ones((shape[0],) + shape[2:] if len(shape) > 1 else (), np.int64)
    if dtype == "uint8" and len(shape) <= 2:
        run_both(fname, [x, target.astype(np.uint8)], device=device)
        return
    want = "expected scalar type Long but found Byte" if dtype == "uint8" else \
        "expected target dtype to be Long or Byte, but got " + dict(int32="Int", int16="Short", int8="Char",
                                                                     bool="Bool")[dtype]
    check_raises(lambda lib, x, t: getattr(lib.nn.functional, fname)(x, t.to(getattr(lib, dtype))), x, target,
                 device=device, match=want)


def test_cross_entropy_bfloat16_logits_match_torch(device):
    x = make_input((6, 5))
    target = np.array([0, 4, -100, 2, 1, 3], np.int64)
    xt = torch.tensor(x).to(torch.bfloat16).requires_grad_()
    xp = pg.tensor(x, device=device).to(pg.bfloat16).requires_grad_()
    yt, yp = TF.cross_entropy(xt, torch.tensor(target)), F.cross_entropy(xp, pg.tensor(target, device=device))
    assert yp.dtype is pg.bfloat16
    assert_close(yp.float(), yt.float(), 1e-2, 1e-2, "bfloat16 cross_entropy")
    yt.backward()
    yp.backward()
    assert xp.grad.dtype is pg.bfloat16
    assert_close(xp.grad.float(), xt.grad.float(), 1e-2, 1e-2, "bfloat16 cross_entropy gradient")


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_fast_path_agrees_with_the_composition(reduction, device):
    from paragrad.backends.base import fast_paths
    x = make_input((7, 5))
    target = np.array([0, 4, -1, 2, 1, -1, 3], np.int64)
    results = []
    for enabled in (True, False):
        with fast_paths(enabled):
            xp = pg.tensor(x, device=device, requires_grad=True)
            loss = F.cross_entropy(xp, pg.tensor(target, device=device), ignore_index=-1, reduction=reduction)
            loss.backward()
        results.append((_np(loss), _np(xp.grad)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("classes", [10, 27, 300])
def test_cross_entropy_many_rows_match_torch(classes, device):
    """512 rows (the CPU fast path's transposed row maximum and its sums by a product with
    ones), some ignored, against torch."""
    rng = np.random.default_rng(11)
    x = rng.uniform(-5, 5, (512, classes)).astype(np.float32)
    target = rng.integers(-1, classes, 512)
    run_both("cross_entropy", [x, target], dict(ignore_index=-1), device=device)


def test_cross_entropy_float64(device):
    x, target, weight = class_case("NCd1d2", -100)
    run_both("cross_entropy", [x.astype(np.float64), target],
             dict(weight=weight.astype(np.float64), label_smoothing=0.1), device=device,
             atol=1e-10, rtol=1e-9)


# ---- cross_entropy with class probabilities ---------------------------------------------------------
def prob_case(layout, seed=0):
    rng = np.random.default_rng(seed)
    xshape, _ = LAYOUTS[layout]
    x = rng.uniform(-3, 3, xshape).astype(np.float32)
    logits = rng.uniform(-2, 2, xshape)
    cdim = 0 if layout == "C" else 1
    probs = (np.exp(logits) / np.exp(logits).sum(cdim, keepdims=True)).astype(np.float32)
    weight = rng.uniform(0.2, 2.0, xshape[cdim]).astype(np.float32)
    return x, probs, weight


@pytest.mark.parametrize("layout,weighted,smoothing,reduction",
                         list(itertools.product(LAYOUTS, [False, True], [0.0, 0.25], REDUCTIONS)))
def test_cross_entropy_probabilities(layout, weighted, smoothing, reduction, device):
    x, probs, weight = prob_case(layout)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    if weighted:
        kw["weight"] = weight
    run_both("cross_entropy", [x, probs], kw, grad=(0, 1), device=device)


def test_cross_entropy_errors(device):
    x = pg.tensor(make_input((3, 4)), device=device)
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(x, pg.tensor([0, 1, 2], device=device), reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(x, pg.tensor([0, 1, 2], device=device), label_smoothing=1.5)
    with pytest.raises(IndexError):
        F.cross_entropy(x, pg.tensor([0, 1, 4], device=device))
    with pytest.raises((ValueError, RuntimeError)):
        F.cross_entropy(x, pg.tensor([0, 1], device=device))
    with pytest.raises(RuntimeError):
        F.cross_entropy(x, pg.zeros(3, 5, device=device))


# ---- regression and binary losses -------------------------------------------------------------------
@pytest.mark.parametrize("fname", ["mse_loss", "l1_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4)])
def test_regression_losses(fname, reduction, shape, device):
    rng = np.random.default_rng(3)
    a, b = rng.uniform(-2, 2, (2,) + shape).astype(np.float32)
    run_both(fname, [a, b], dict(reduction=reduction), grad=(0, 1), device=device)


def bce_case(shape=(6, 4), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-4, 4, shape).astype(np.float32)
    y = rng.uniform(0, 1, shape).astype(np.float32)
    y[0] = np.round(y[0])                     # some hard labels too
    w = rng.uniform(0.5, 2, shape[-1:]).astype(np.float32)
    pw = rng.uniform(0.5, 3, shape[-1:]).astype(np.float32)
    return x, y, w, pw


@pytest.mark.parametrize("weighted,pos_weighted,reduction",
                         list(itertools.product([False, True], [False, True], REDUCTIONS)))
def test_bce_with_logits(weighted, pos_weighted, reduction, device):
    x, y, w, pw = bce_case()
    kw = dict(reduction=reduction)
    if weighted:
        kw["weight"] = w
    if pos_weighted:
        kw["pos_weight"] = pw
    run_both("binary_cross_entropy_with_logits", [x, y], kw, grad=(0, 1), device=device)


@pytest.mark.parametrize("pos_weighted", [False, True])
def test_bce_with_logits_extreme_logits(pos_weighted, device):
    x = np.array([-100.0, -30.0, -1.0, 0.0, 1.0, 30.0, 100.0] * 2, np.float32)
    y = np.array([0.0] * 7 + [1.0] * 7, np.float32)
    kw = dict(reduction="none")
    if pos_weighted:
        kw["pos_weight"] = np.full(14, 2.5, np.float32)
    yp, _ = run_both("binary_cross_entropy_with_logits", [x, y], kw, grad=(0, 1), device=device)
    assert np.isfinite(_np(yp)).all()


@pytest.mark.parametrize("weighted,reduction", list(itertools.product([False, True], REDUCTIONS)))
def test_binary_cross_entropy(weighted, reduction, device):
    rng = np.random.default_rng(4)
    p = rng.uniform(0.02, 0.98, (5, 3)).astype(np.float32)
    y = rng.uniform(0, 1, (5, 3)).astype(np.float32)
    kw = dict(reduction=reduction)
    if weighted:
        kw["weight"] = rng.uniform(0.5, 2, (3,)).astype(np.float32)
    run_both("binary_cross_entropy", [p, y], kw, grad=(0, 1), device=device)


def test_binary_cross_entropy_saturated_inputs(device):
    """log(0) is clamped at -100, as torch: probabilities of exactly 0 and 1 give finite losses."""
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.5], np.float32)
    y = np.array([0.0, 1.0, 1.0, 0.0, 1.0], np.float32)
    yp, _ = run_both("binary_cross_entropy", [p, y], dict(reduction="none"), grad=(), device=device)
    np.testing.assert_allclose(_np(yp), [0.0, 0.0, 100.0, 100.0, np.log(2)], rtol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_gradient_at_saturated_inputs(reduction, device):
    """At probabilities of exactly 0 and 1 the input's gradient is torch's clamped formula,
    (x - t) / max(x (1 - x), 1e-12): finite (+-1e12), not the NaN of the composed logs; the
    target's is -logit(x), infinite there as torch's."""
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.5], np.float32)
    y = np.array([0.0, 1.0, 1.0, 0.0, 0.25], np.float32)
    got = [pg.tensor(a, device=device, requires_grad=True) for a in (p, y)]
    want = [torch.tensor(a, requires_grad=True) for a in (p, y)]
    pg.nn.functional.binary_cross_entropy(*got, reduction=reduction).sum().backward()
    torch.nn.functional.binary_cross_entropy(*want, reduction=reduction).sum().backward()
    for g, w in zip(got, want):
        np.testing.assert_allclose(_np(g.grad), w.grad.numpy(), rtol=1e-6)
    assert np.isfinite(_np(got[0].grad)).all()


# ---- loss modules ------------------------------------------------------------------------------------
def _ce():
    x, t, w = class_case("NC", -100)
    return [x, t], dict(weight=w, label_smoothing=0.1)


MODULE_CASES = {
    "CrossEntropyLoss": (lambda: ([class_case("NC", None)[0], class_case("NC", None)[1]], {})),
    "CrossEntropyLoss-options": _ce,
    "CrossEntropyLoss-ignore-sum": (lambda: (class_case("NCd1d2", 3)[:2], dict(ignore_index=3, reduction="sum"))),
    "CrossEntropyLoss-probs": (lambda: (list(prob_case("NC")[:2]), dict(reduction="none"))),
    "NLLLoss": (lambda: (class_case("NC", -100)[:2], dict(weight=class_case("NC", -100)[2]))),
    "MSELoss": (lambda: (list(np.random.default_rng(0).uniform(-1, 1, (2, 4, 3)).astype(np.float32)), {})),
    "L1Loss": (lambda: (list(np.random.default_rng(0).uniform(-1, 1, (2, 4, 3)).astype(np.float32)),
                        dict(reduction="sum"))),
    "BCEWithLogitsLoss": (lambda: (bce_case()[:2], dict(weight=bce_case()[2], pos_weight=bce_case()[3]))),
    "BCELoss": (lambda: ([np.full((3, 2), 0.3, np.float32), np.eye(3, 2, dtype=np.float32)], {})),
}


@pytest.mark.parametrize("name", MODULE_CASES)
def test_loss_modules(name, device):
    args, kw = MODULE_CASES[name]()
    args = [np.asarray(a) for a in args]
    module = name.split("-")[0]
    run_both(module, args, kw, device=device, module=module)


def test_loss_module_attributes_and_buffers():
    w = pg.tensor([1.0, 2.0])
    m = nn.CrossEntropyLoss(weight=w, ignore_index=3, label_smoothing=0.1)
    assert m.weight is w and m.ignore_index == 3 and m.label_smoothing == 0.1 and m.reduction == "mean"
    assert list(m.state_dict()) == list(torch.nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0])).state_dict())
    assert list(nn.BCEWithLogitsLoss(pos_weight=pg.ones(2)).state_dict()) == \
        list(torch.nn.BCEWithLogitsLoss(pos_weight=torch.ones(2)).state_dict())
    with pytest.raises(ValueError):
        nn.MSELoss(reduction="bogus")


# ---- finite differences in float64 ------------------------------------------------------------------
def _fd_cases(device):
    x, t, w = class_case("NCd1d2", -100)
    t_idx = pg.tensor(t, device=device)
    w64 = pg.tensor(w.astype(np.float64), device=device)
    _, probs, _ = prob_case("NC")
    probs64 = pg.tensor(probs.astype(np.float64), device=device)
    bx, by, bw, bpw = bce_case((3, 4))
    by64, bpw64, bw64 = (pg.tensor(a.astype(np.float64), device=device) for a in (by, bpw, bw))
    return {
        "ce-idx-weight-smooth": (lambda a: F.cross_entropy(a, t_idx, w64, label_smoothing=0.1), [x]),
        "ce-idx-sum": (lambda a: F.cross_entropy(a, t_idx, reduction="sum"), [x]),
        "ce-probs-weight": (lambda a: F.cross_entropy(a, probs64, w64[:4], label_smoothing=0.2),
                            [prob_case("NC")[0]]),
        "ce-probs-target-grad": (lambda a, p: F.cross_entropy(a, p), [prob_case("NC")[0], probs]),
        "nll-weight-none": (lambda a: F.nll_loss(a, t_idx, w64, reduction="none"), [x]),
        "mse": (lambda a, b: F.mse_loss(a, b), [x, x[::-1].copy()]),
        "l1": (lambda a, b: F.l1_loss(a, b, reduction="sum"), [x, x[::-1].copy() + 0.05]),
        "bce-logits": (lambda a, y: F.binary_cross_entropy_with_logits(a, y, bw64, pos_weight=bpw64), [bx, by]),
        "bce": (lambda a: F.binary_cross_entropy(a, by64, bw64), [np.clip(bx / 10 + 0.5, 0.05, 0.95)]),
    }


FD_NAMES = ["ce-idx-weight-smooth", "ce-idx-sum", "ce-probs-weight", "ce-probs-target-grad",
            "nll-weight-none", "mse", "l1", "bce-logits", "bce"]


@pytest.mark.parametrize("name", FD_NAMES)
def test_losses_finite_differences(name, device):
    fn, inputs = _fd_cases(device)[name]
    fd_check(fn, None, device=device, inputs=[np.array(a, np.float64) for a in inputs])


@pytest.mark.parametrize("fname", ["binary_cross_entropy", "binary_cross_entropy_with_logits"])
def test_binary_losses_reject_mismatched_target(fname, device):
    x = np.full((2,), 0.5, np.float32)
    with pytest.raises(ValueError):
        getattr(TF, fname)(torch.tensor(x), torch.ones(1, 2))
    with pytest.raises(ValueError):
        getattr(F, fname)(pg.tensor(x, device=device), pg.ones(1, 2, device=device))


SECOND_ORDER = {
    "cross_entropy": (lambda F_, x, y: F_.cross_entropy(x, y, label_smoothing=0.1),
                      lambda: np.array([0, 2, 1], np.int64)),
    "bce_with_logits": (lambda F_, x, y: F_.binary_cross_entropy_with_logits(x, y, pos_weight=y * 0 + 2.0),
                        lambda: np.random.default_rng(2).uniform(0, 1, (3, 4)).astype(np.float32)),
    "mse": (lambda F_, x, y: F_.mse_loss(x.tanh(), y), lambda: np.zeros((3, 4), np.float32)),
}


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_loss_double_backward(name, device):
    """A gradient penalty: d/dx |d loss/dx|^2, through create_graph=True."""
    fn, target = SECOND_ORDER[name]
    x = make_input((3, 4), "float64")
    y = target()
    y = y.astype(np.float64) if y.dtype.kind == "f" else y
    xt, xp = torch.tensor(x, requires_grad=True), pg.tensor(x, device=device, requires_grad=True)
    (gt,) = torch.autograd.grad(fn(TF, xt, torch.tensor(y)), xt, create_graph=True)
    (gp,) = pg.autograd.grad(fn(F, xp, pg.tensor(y, device=device)), xp, create_graph=True)
    assert_close(gp, gt, 1e-10, 1e-8, "first derivative")
    (gt * gt).sum().backward()
    (gp * gp).sum().backward()
    assert_close(xp.grad, xt.grad, 1e-10, 1e-8, "second derivative")


# ---- KL divergence with zero probabilities ---------------------------------------------------------
def lib_of(x):
    return TF if isinstance(x, torch.Tensor) else F


def test_kl_div_probabilities_with_zeros_match_torch(device):
    rng = np.random.default_rng(0)
    p = np.abs(rng.standard_normal((4, 5))).astype(np.float32)
    p[0, 1] = p[2, 3] = 0
    p /= p.sum(1, keepdims=True)
    logq = np.log(np.abs(rng.standard_normal((4, 5))) + 0.1).astype(np.float32)
    # (the target is a constant here: PyTorch's gradient for it is NaN where it is 0)
    for reduction in ("batchmean", "sum", "mean", "none"):
        check_op(lambda x: lib_of(x).kl_div(x, (torch.tensor(p) if isinstance(x, torch.Tensor)
                                                else pg.tensor(p, device=device)), reduction=reduction),
                 None, inputs=[logq], device=device)


# ---- PyTorch's argument lists ---------------------------------------------------------------------
LEGACY = [(None, None), (True, None), (False, None), (None, False), (False, False), (True, True)]


def _data(shape=(4, 3), seed=0, lo=-1.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)


@pytest.mark.parametrize("size_average,reduce", LEGACY)
@pytest.mark.parametrize("name,make", [
    ("MSELoss", lambda: (_data(), _data(seed=1))), ("L1Loss", lambda: (_data(), _data(seed=1))),
    ("SmoothL1Loss", lambda: (_data(), _data(seed=1))), ("SoftMarginLoss", lambda: (_data(), np.sign(_data(seed=1)))),
    ("BCELoss", lambda: (_data(lo=0.1, hi=0.9), _data(seed=1, lo=0, hi=1))),
    ("BCEWithLogitsLoss", lambda: (_data(), _data(seed=1, lo=0, hi=1))),
    ("KLDivLoss", lambda: (np.log(_data(lo=0.1, hi=0.9)), _data(seed=1, lo=0.1, hi=0.9))),
    ("CrossEntropyLoss", lambda: (_data(), np.array([0, 2, 1, 2]))), ("NLLLoss", lambda: (_data(), np.array([0, 2, 1, 2]))),
    ("HingeEmbeddingLoss", lambda: (_data(), np.sign(_data(seed=1)))),
    ("MultiLabelSoftMarginLoss", lambda: (_data(), (_data(seed=1) > 0).astype(np.float32))),
])
def test_legacy_flags_in_modules_match_torch(name, make, size_average, reduce):
    x, y = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = getattr(torch.nn, name)(size_average=size_average, reduce=reduce)
        p = getattr(pg.nn, name)(size_average=size_average, reduce=reduce)
    assert p.reduction == t.reduction
    assert_close(p(pg.tensor(x), pg.tensor(y)), t(torch.tensor(x), torch.tensor(y)), 1e-5, 1e-5)


def test_functional_losses_take_torchs_positional_order():
    x, y = _data(), np.array([0, 2, 1, 2])
    tx, ty, px, py = torch.tensor(x), torch.tensor(y), pg.tensor(x), pg.tensor(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args in ((None, None, 1), (None, False, 1, None), (None, None, -100, None, "sum"),
                     (None, None, 2, None, "none")):
            assert_close(pg.nn.functional.cross_entropy(px, py, *args),
                         torch.nn.functional.cross_entropy(tx, ty, *args), 1e-5, 1e-5)
            assert_close(pg.nn.functional.nll_loss(px, py, *args), torch.nn.functional.nll_loss(tx, ty, *args),
                         1e-5, 1e-5)
        for name in ("mse_loss", "l1_loss"):
            for args in ((False,), (None, False), (None, None, "sum")):
                assert_close(getattr(pg.nn.functional, name)(px, pg.tensor(_data(seed=2)), *args),
                             getattr(torch.nn.functional, name)(tx, torch.tensor(_data(seed=2)), *args), 1e-5, 1e-5)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_mse_and_l1_match_torch(name, reduction, device):
    x, y, w = _data(), _data(seed=1), _data(seed=2, lo=0.1, hi=2.0)
    tx = torch.tensor(x, requires_grad=True)
    px = pg.tensor(x, device=device, requires_grad=True)
    t = getattr(torch.nn.functional, name)(tx, torch.tensor(y), reduction=reduction, weight=torch.tensor(w))
    p = getattr(pg.nn.functional, name)(px, pg.tensor(y, device=device), reduction=reduction,
                                        weight=pg.tensor(w, device=device))
    assert_close(p, t, 1e-5, 1e-5)
    t.sum().backward()
    p.sum().backward()
    assert_close(px.grad, tx.grad, 1e-5, 1e-5)
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        getattr(pg.nn.functional, name)(px, pg.tensor(y, device=device), weight=pg.ones(3, device=device))
