"""The forms composed from Tensor ops across three families, checked together in each test: the
SmoothL1 / Huber / KL losses, cosine similarity and pairwise distance, RMSNorm and GroupNorm
(values and gradients, float64 finite differences, the modules' reprs and parameters, and the
argument errors)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
from tests.helpers import check_op, fd_check, needs_torch_2_13


F = pg.nn.functional


def lib_of(x):
    return TF if isinstance(x, torch.Tensor) else F


CASES = {   # name: (fn(x, y), shapes)
    "smooth_l1": (lambda x, y: lib_of(x).smooth_l1_loss(x, y, beta=0.5), [(4, 5), (4, 5)]),
    "smooth_l1-beta0-sum": (lambda x, y: lib_of(x).smooth_l1_loss(x, y, reduction="sum", beta=0.0), [(4, 5), (4, 5)]),
    "huber": (lambda x, y: lib_of(x).huber_loss(x, y, delta=0.7), [(4, 5), (4, 5)]),
    "huber-none": (lambda x, y: lib_of(x).huber_loss(x, y, reduction="none", delta=2.0), [(3, 2), (3, 2)]),
    "kl-log-target": (lambda x, y: lib_of(x).kl_div(x, y, reduction="batchmean", log_target=True), [(4, 5), (4, 5)]),
    "cosine": (lambda x, y: lib_of(x).cosine_similarity(x, y), [(4, 5), (4, 5)]),
    "cosine-broadcast-dim": (lambda x, y: lib_of(x).cosine_similarity(x, y, dim=-1), [(3, 4, 5), (1, 5)]),
    "cosine-broadcast-rank": (lambda x, y: lib_of(x).cosine_similarity(x, y), [(2, 3), (3,)]),
    "pairwise": (lambda x, y: lib_of(x).pairwise_distance(x, y), [(4, 5), (4, 5)]),
    "pairwise-p1-keepdim": (lambda x, y: lib_of(x).pairwise_distance(x, y, p=1.0, keepdim=True), [(4, 5), (4, 5)]),
}


@pytest.mark.parametrize("name", CASES)
def test_matches_torch(name, device):
    fn, shapes = CASES[name]
    check_op(fn, shapes, device=device)


def test_finite_differences(device):
    fd_check(lambda x, y: F.huber_loss(x, y, delta=0.7), [(3, 4), (3, 4)], device=device)
    fd_check(lambda x, y: F.cosine_similarity(x, y), [(3, 4), (3, 4)], device=device)
    fd_check(lambda x, w: F.rms_norm(x, (4,), w), [(3, 4), (4,)], device=device)
    fd_check(lambda x, w, b: F.group_norm(x, 2, w, b), [(2, 4, 3), (4,), (4,)], device=device)


@needs_torch_2_13   # GroupNorm(bias=False)
def test_modules_match_torch():
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal((4, 6)).astype(np.float32) for _ in range(2))
    for name, args, kw, n_in in [("SmoothL1Loss", (), {"beta": 0.5}, 2), ("HuberLoss", (), {"delta": 2.0}, 2),
                                 ("KLDivLoss", (), {"reduction": "sum", "log_target": True}, 2),
                                 ("CosineSimilarity", (), {"dim": 0}, 2), ("PairwiseDistance", (), {"p": 3.0}, 2),
                                 ("RMSNorm", (6,), {}, 1), ("GroupNorm", (3, 6), {"bias": False}, 1)]:
        p, t = getattr(pg.nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
        assert repr(p) == repr(t), name
        assert [n for n, _ in p.named_parameters()] == [n for n, _ in t.named_parameters()], name
        ins = (x, y)[:n_in]
        a = p(*(pg.tensor(v) for v in ins)).detach().numpy()
        b = t(*(torch.tensor(v) for v in ins)).detach().numpy()
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)


def test_errors_match_torch():
    for make in (lambda lib, f: f.smooth_l1_loss(lib.ones(2), lib.ones(2), beta=-1.0),
                 lambda lib, f: f.huber_loss(lib.ones(2), lib.ones(2), delta=0.0),
                 lambda lib, f: f.group_norm(lib.ones(2, 5, 3), 2),
                 lambda lib, f: f.rms_norm(lib.ones(2, 5), (4,)),
                 lambda lib, f: lib.nn.GroupNorm(4, 6),
                 lambda lib, f: f.kl_div(lib.ones(2), lib.ones(2), reduction="avg")):
        with pytest.raises(Exception) as e:
            make(torch, TF)
        with pytest.raises(e.type):
            make(pg, F)
