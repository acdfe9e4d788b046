"""Margin, embedding and likelihood losses (F and modules) against PyTorch: values and the
gradients of every floating input, each reduction, and the deprecated size_average/reduce."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
from tests.helpers import check_op

F = pg.nn.functional
rng = np.random.default_rng(0)
A, B, C = (rng.standard_normal((6, 5)).astype(np.float32) for _ in range(3))
SIGN1 = np.where(rng.random(6) > 0.5, 1.0, -1.0).astype(np.float32)
SIGN2 = np.where(rng.random((6, 5)) > 0.5, 1.0, -1.0).astype(np.float32)
MASK = (rng.random((6, 5)) > 0.5).astype(np.float32)
COUNTS = rng.poisson(3, (6, 5)).astype(np.float32)
VAR = (np.abs(rng.standard_normal((6, 5))) + 0.1).astype(np.float32)


def const(x, like):
    return torch.tensor(x) if isinstance(like, torch.Tensor) else pg.tensor(x, device=like.device)


def lib(x):
    return TF if isinstance(x, torch.Tensor) else F


CASES = {   # name: (fn of the float inputs, inputs)
    "margin_ranking": (lambda x, y: lib(x).margin_ranking_loss(x, y, const(SIGN1, x), margin=0.3), [A[:, 0], B[:, 0]]),
    "hinge_embedding": (lambda x: lib(x).hinge_embedding_loss(x, const(SIGN2, x), margin=0.5, reduction="sum"), [A]),
    "soft_margin": (lambda x: lib(x).soft_margin_loss(x, const(SIGN2, x)), [A]),
    "cosine_embedding": (lambda x, y: lib(x).cosine_embedding_loss(x, y, const(SIGN1, x), margin=0.1), [A, B]),
    "triplet": (lambda x, y, z: lib(x).triplet_margin_loss(x, y, z, margin=0.5, p=1.5), [A, B, C]),
    "triplet-swap": (lambda x, y, z: lib(x).triplet_margin_loss(x, y, z, swap=True, reduction="none"), [A, B, C]),
    "multilabel_soft_margin": (lambda x: lib(x).multilabel_soft_margin_loss(x, const(MASK, x)), [A]),
    "poisson": (lambda x: lib(x).poisson_nll_loss(x, const(COUNTS, x)), [A]),
    "poisson-full": (lambda x: lib(x).poisson_nll_loss(x, const(COUNTS, x), log_input=False, full=True), [VAR]),
    "gaussian": (lambda x, v: lib(x).gaussian_nll_loss(x, const(B, x), v), [A, VAR]),
    "gaussian-per-sample": (lambda x, v: lib(x).gaussian_nll_loss(x, const(B, x), v, full=True, reduction="sum"),
                            [A, VAR[:, :1]]),
    "legacy-size-average": (lambda x: lib(x).soft_margin_loss(x, const(SIGN2, x), size_average=False), [A]),
}


@pytest.mark.parametrize("name", CASES)
def test_loss_matches_torch(name, device):
    fn, inputs = CASES[name]
    check_op(fn, None, inputs=inputs, device=device)


def test_modules_match_torch():
    for name, kw, args in [("MarginRankingLoss", {"margin": 0.2}, (A[:, 0], B[:, 0], SIGN1)),
                           ("HingeEmbeddingLoss", {"margin": 2.0}, (A, SIGN2)),
                           ("SoftMarginLoss", {}, (A, SIGN2)), ("CosineEmbeddingLoss", {}, (A, B, SIGN1)),
                           ("TripletMarginLoss", {"swap": True}, (A, B, C)),
                           ("MultiLabelSoftMarginLoss", {}, (A, MASK)),
                           ("PoissonNLLLoss", {"full": True}, (A, COUNTS)),
                           ("GaussianNLLLoss", {"full": True}, (A, B, VAR))]:
        p, t = getattr(pg.nn, name)(**kw), getattr(torch.nn, name)(**kw)
        assert repr(p) == repr(t), name
        np.testing.assert_allclose(p(*(pg.tensor(a) for a in args)).numpy(),
                                   t(*(torch.tensor(a) for a in args)).numpy(), rtol=1e-5, err_msg=name)


def test_gaussian_nll_errors_match_torch():
    for make in (lambda f, lib: f.gaussian_nll_loss(lib.ones(3, 2), lib.ones(3, 2), lib.ones(2, 2)),
                 lambda f, lib: f.gaussian_nll_loss(lib.ones(3, 2), lib.ones(3, 2), -lib.ones(3, 2))):
        with pytest.raises(Exception) as e:
            make(TF, torch)
        with pytest.raises(e.type):
            make(F, pg)


def _cls(x, data):
    return torch.tensor(data) if isinstance(x, torch.Tensor) else pg.tensor(data, device=x.device)


@pytest.mark.parametrize("p,margin,weighted,reduction", [(1, 1.0, False, "mean"), (2, 0.7, True, "sum"),
                                                          (1, 0.5, True, "none")])
def test_multi_margin_loss_matches_torch(p, margin, weighted, reduction, device):
    w = [0.5, 1.0, 2.0, 0.7, 1.3]

    def fn(x):
        F = torch.nn.functional if isinstance(x, torch.Tensor) else pg.nn.functional
        return F.multi_margin_loss(x, _cls(x, [1, 0, 4, 2]), p=p, margin=margin,
                                   weight=_cls(x, w) if weighted else None, reduction=reduction)
    check_op(fn, [(4, 5)], device=device)
    check_op(lambda x, w: (torch.nn.functional if isinstance(x, torch.Tensor) else pg.nn.functional)
             .multi_margin_loss(x, _cls(x, 3)), [(5,), (5,)], device=device)


def test_multilabel_margin_loss_matches_torch(device):
    targets = [[3, 0, -1, 1, 2], [1, 2, 3, -1, 0], [4, -1, 2, 2, 2], [-1, 1, 1, 1, 1]]
    for reduction in ("mean", "sum", "none"):
        check_op(lambda x: (torch.nn.functional if isinstance(x, torch.Tensor) else pg.nn.functional)
                 .multilabel_margin_loss(x, _cls(x, targets), reduction=reduction), [(4, 5)], device=device)


def test_triplet_margin_with_distance_loss_matches_torch(device):
    for kw in ({}, {"swap": True, "margin": 0.5},):
        check_op(lambda a, b, c: (torch.nn.functional if isinstance(a, torch.Tensor) else pg.nn.functional)
                 .triplet_margin_with_distance_loss(a, b, c, **kw), [(4, 6)] * 3, device=device)
    cos = lambda lib: (lambda u, v: 1 - lib.nn.functional.cosine_similarity(u, v))  # noqa: E731
    check_op(lambda a, b, c: (torch.nn.functional if isinstance(a, torch.Tensor) else pg.nn.functional)
             .triplet_margin_with_distance_loss(a, b, c, distance_function=cos(torch if isinstance(a, torch.Tensor) else pg),
                                                reduction="none"), [(4, 6)] * 3, device=device)


def test_margin_loss_modules_and_errors():
    for make in (lambda nn: nn.MultiMarginLoss(p=2, margin=0.5), lambda nn: nn.MultiLabelMarginLoss(),
                 lambda nn: nn.TripletMarginWithDistanceLoss(margin=2.0)):
        assert repr(make(pg.nn)) == repr(make(torch.nn))
    x, y = pg.randn(3, 4), pg.tensor([0, 1, 2])
    assert abs(pg.nn.MultiMarginLoss()(x, y).item() -
               torch.nn.MultiMarginLoss()(torch.tensor(x.numpy()), torch.tensor([0, 1, 2])).item()) < 1e-6
    with pytest.raises(ValueError):
        pg.nn.functional.multi_margin_loss(x, y, p=3)
    with pytest.raises(RuntimeError):
        pg.nn.functional.multi_margin_loss(x, y.float())
    with pytest.raises(ValueError):
        pg.nn.functional.triplet_margin_with_distance_loss(x, x, x, margin=0.0)
    with pytest.raises(RuntimeError, match="not differentiable"):
        pg.nn.functional.multi_margin_loss(x, y, weight=pg.ones(4, requires_grad=True))
