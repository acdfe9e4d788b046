"""F.embedding / nn.Embedding, F.embedding_bag / nn.EmbeddingBag and F.one_hot against PyTorch:
values and weight gradients with padding_idx, scale_grad_by_freq and max_norm, second
derivatives, every bag mode with offsets and per_sample_weights, the modules'
init/repr/state/from_pretrained, and the errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import paragrad as pg
import paragrad.nn.functional as F
from tests.helpers import _np, assert_close, check_op, fd_check


IDX = np.array([[1, 2, 2, 7], [9, 1, 0, 2]], dtype=np.int64)


@pytest.mark.parametrize("kw", [{}, {"padding_idx": 2}, {"padding_idx": -1}, {"scale_grad_by_freq": True},
                                {"padding_idx": 1, "scale_grad_by_freq": True}],
                         ids=["plain", "pad", "pad-negative", "freq", "pad-freq"])
def test_embedding_matches_torch(kw, device):
    w = np.random.default_rng(0).standard_normal((10, 5)).astype(np.float32)

    def fn(idx, weight):
        lib = torch.nn.functional if isinstance(weight, torch.Tensor) else pg.nn.functional
        return lib.embedding(idx, weight, **kw)
    check_op(fn, None, inputs=[IDX, w], device=device)


def test_embedding_finite_differences(device):
    # (padding_idx and scale_grad_by_freq change the gradient on purpose: the plain op here)
    fd_check(lambda w: pg.nn.functional.embedding(pg.tensor(IDX, device=device), w), [(10, 3)],
             device=device)


@pytest.mark.parametrize("vocab", [10, 100], ids=["few-rows", "many-rows"])
def test_embedding_gradient_of_unused_rows_is_positive_zero(vocab, device):
    """Rows no index picks get +0. (torch adds into zeros), even when every incoming
    gradient is negative; a used row sums its gradients."""
    idx = np.array([[1, 2, 2], [1, 1, 2]], np.int64)
    w = pg.zeros(vocab, 4, device=device, requires_grad=True)
    out = pg.nn.functional.embedding(pg.tensor(idx, device=device), w)
    out.backward(pg.full((2, 3, 4), -0.5, device=device))
    g = _np(w.grad)
    assert not np.signbit(g[[0] + list(range(3, vocab))]).any()
    np.testing.assert_array_equal(g[1], np.full(4, -1.5, np.float32))
    np.testing.assert_array_equal(g[2], np.full(4, -1.5, np.float32))


@pytest.mark.parametrize("vocab", [10, 100], ids=["few-rows", "many-rows"])
def test_embedding_backward_fast_path_agrees_with_the_composition(vocab, device):
    from paragrad.backends.base import fast_paths
    rng = np.random.default_rng(3)
    idx = rng.integers(0, vocab, (6, 9))
    gout = rng.standard_normal((6, 9, 4)).astype(np.float32)
    grads = []
    for enabled in (True, False):
        with fast_paths(enabled):
            w = pg.zeros(vocab, 4, device=device, requires_grad=True)
            pg.nn.functional.embedding(pg.tensor(idx, device=device), w).backward(pg.tensor(gout, device=device))
        grads.append(_np(w.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


def test_embedding_gradient_with_an_infinite_entry_stays_in_its_row(device):
    """An inf in the incoming gradient reaches only its own row (no 0 * inf spill)."""
    idx = np.array([0, 3, 3], np.int64)
    gout = np.ones((3, 2), np.float32)
    gout[1, 0] = np.inf
    wt = torch.zeros(5, 2, requires_grad=True)
    torch.nn.functional.embedding(torch.tensor(idx), wt).backward(torch.tensor(gout))
    wp = pg.zeros(5, 2, device=device, requires_grad=True)
    pg.nn.functional.embedding(pg.tensor(idx, device=device), wp).backward(pg.tensor(gout, device=device))
    np.testing.assert_array_equal(_np(wp.grad), wt.grad.numpy())


@pytest.mark.parametrize("kw", [{}, {"padding_idx": 2}], ids=["plain", "pad"])
def test_embedding_double_backward_matches_torch(kw, device):
    """(With scale_grad_by_freq PyTorch's second derivative ignores the scaling — a convention
    of its double-backward formula — so that option is left out here.)"""
    w = pg.randn(10, 3, dtype=pg.float64, device=device, requires_grad=True)
    out = pg.nn.functional.embedding(pg.tensor(IDX, device=device), w, **kw)
    (g,) = pg.autograd.grad((out ** 3).sum(), w, create_graph=True)
    (gg,) = pg.autograd.grad(g.sum(), w)
    tw = torch.tensor(w.detach().cpu().numpy(), requires_grad=True)
    tout = torch.nn.functional.embedding(torch.tensor(IDX), tw, **kw)
    (tg,) = torch.autograd.grad((tout ** 3).sum(), tw, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tw)
    np.testing.assert_allclose(g.detach().cpu().numpy(), tg.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(gg.cpu().numpy(), tgg.numpy(), rtol=1e-10)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_max_norm_renormalizes_the_used_rows_in_place(norm_type, device):
    w = (np.random.default_rng(1).standard_normal((10, 4)) * 3).astype(np.float32)
    pw, tw = pg.tensor(w, device=device), torch.tensor(w)
    out = pg.nn.functional.embedding(pg.tensor(IDX, device=device), pw, max_norm=1.5, norm_type=norm_type)
    tout = torch.nn.functional.embedding(torch.tensor(IDX), tw, max_norm=1.5, norm_type=norm_type)
    np.testing.assert_allclose(out.cpu().numpy(), tout.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pw.cpu().numpy(), tw.numpy(), rtol=1e-5, atol=1e-6)   # unused rows unchanged


def test_module_init_repr_and_from_pretrained(device):
    pg.manual_seed(0)
    m = pg.nn.Embedding(6, 3, padding_idx=-2, device=device)
    t = torch.nn.Embedding(6, 3, padding_idx=-2)
    assert repr(m) == repr(t) and m.padding_idx == t.padding_idx == 4
    w = m.weight.detach().cpu().numpy()
    assert not w[4].any() and w.std() > 0.3
    for kw in ({"max_norm": 2.0, "norm_type": 1.0}, {"scale_grad_by_freq": True}):
        assert repr(pg.nn.Embedding(6, 3, **kw)) == repr(torch.nn.Embedding(6, 3, **kw))
    pre = pg.nn.Embedding.from_pretrained(pg.ones(4, 2, device=device))
    assert not pre.weight.requires_grad and pre(pg.tensor([3], device=device)).shape == (1, 2)
    assert pg.nn.Embedding.from_pretrained(pg.ones(4, 2), freeze=False).weight.requires_grad
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]


def test_embedding_errors_match_torch():
    for make in (lambda lib: lib.nn.Embedding(4, 2, padding_idx=4),
                 lambda lib: lib.nn.functional.embedding(lib.tensor([0.5]), lib.ones(4, 2)),
                 lambda lib: lib.nn.functional.embedding(lib.tensor([4]), lib.ones(4, 2)),
                 lambda lib: lib.nn.functional.embedding(lib.tensor([-1]), lib.ones(4, 2)),
                 lambda lib: lib.nn.Embedding(4, 2)(lib.tensor([[0, -4]])),
                 lambda lib: lib.nn.EmbeddingBag(4, 2)(lib.tensor([[0, -1]])),
                 lambda lib: lib.nn.functional.embedding_bag(lib.tensor([1, 4]), lib.ones(4, 2), lib.tensor([0]))):
        with pytest.raises(Exception) as e:
            make(torch)
        with pytest.raises(e.type):
            make(pg)


W = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)


INPUTS = {
    "offsets": (np.array([1, 2, 0, 4, 0]), np.array([0, 2, 2, 4]), {}),
    "last-offset": (np.array([1, 2, 0, 4, 0]), np.array([0, 2, 2, 4, 5]), {"include_last_offset": True}),
    "2d": (np.array([[1, 2, 3], [0, 5, 5]]), None, {}),
}


@pytest.mark.parametrize("padding_idx", [None, 0])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("case", INPUTS)
def test_embedding_bag_matches_torch(case, mode, padding_idx, device):
    x, off, kw = INPUTS[case]
    tw, pw = torch.tensor(W, requires_grad=True), pg.tensor(W, device=device, requires_grad=True)
    t = torch.nn.functional.embedding_bag(torch.tensor(x), tw, None if off is None else torch.tensor(off),
                                          mode=mode, padding_idx=padding_idx, **kw)
    p = pg.nn.functional.embedding_bag(pg.tensor(x, device=device), pw,
                                       None if off is None else pg.tensor(off, device=device),
                                       mode=mode, padding_idx=padding_idx, **kw)
    assert_close(p, t, 1e-6, 1e-5)
    g = np.random.default_rng(1).standard_normal(tuple(t.shape)).astype(np.float32)
    t.backward(torch.tensor(g))
    p.backward(pg.tensor(g, device=device))
    assert_close(pw.grad, tw.grad, 1e-6, 1e-5)


def test_per_sample_weights(device):
    x, off = np.array([1, 2, 3, 4]), np.array([0, 3])
    psw = np.random.default_rng(2).standard_normal(4).astype(np.float32)
    tp, pp = torch.tensor(psw, requires_grad=True), pg.tensor(psw, device=device, requires_grad=True)
    t = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(W), mode="sum")(torch.tensor(x), torch.tensor(off), tp)
    p = pg.nn.EmbeddingBag.from_pretrained(pg.tensor(W, device=device), mode="sum")(
        pg.tensor(x, device=device), pg.tensor(off, device=device), pp)
    assert_close(p, t, 1e-6, 1e-5)
    t.sum().backward()
    p.sum().backward()
    assert_close(pp.grad, tp.grad, 1e-6, 1e-5)


def test_module_repr_state_and_errors():
    for kw in ({}, {"mode": "max", "padding_idx": 0}, {"mode": "sum", "max_norm": 1.0}):
        assert repr(pg.nn.EmbeddingBag(5, 3, **kw)) == repr(torch.nn.EmbeddingBag(5, 3, **kw))
    bag = pg.nn.EmbeddingBag(5, 3, padding_idx=2)
    assert list(bag.state_dict()) == ["weight"] and not bag.weight[2].detach().numpy().any()
    assert not pg.nn.EmbeddingBag.from_pretrained(pg.tensor(W)).weight.requires_grad
    x, off = pg.tensor([1, 2, 3]), pg.tensor([0, 1])
    for call, exc in ((lambda: pg.nn.functional.embedding_bag(x, pg.tensor(W), off, mode="max",
                                                               per_sample_weights=pg.ones(3)), NotImplementedError),
                      (lambda: pg.nn.functional.embedding_bag(x, pg.tensor(W)), ValueError),
                      (lambda: pg.nn.functional.embedding_bag(x.reshape(1, 3), pg.tensor(W), off), ValueError),
                      (lambda: pg.nn.functional.embedding_bag(x, pg.tensor(W), pg.tensor([1, 2])), ValueError),
                      (lambda: pg.nn.EmbeddingBag(5, 3, mode="median"), ValueError)):
        with pytest.raises(exc):
            call()


@pytest.mark.parametrize("values,num_classes", [([0, 2, 1, 2], -1), ([[1, 0], [3, 3]], -1),
                                                ([0, 2, 1], 5), (3, 4), ([], 3)])
def test_one_hot(values, num_classes, device):
    a = np.array(values, dtype=np.int64)
    p = F.one_hot(pg.tensor(a, device=device), num_classes)
    t = TF.one_hot(torch.tensor(a), num_classes)
    assert_close(p, t, 0, 0)


def test_one_hot_errors(device):
    with pytest.raises(RuntimeError):
        F.one_hot(pg.tensor([0, 3], device=device), 3)
    with pytest.raises(RuntimeError):
        F.one_hot(pg.tensor([-1, 0], device=device))
    with pytest.raises(RuntimeError):
        F.one_hot(pg.tensor([0.0, 1.0], device=device))
