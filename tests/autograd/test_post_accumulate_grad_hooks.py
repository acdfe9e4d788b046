"""Tensor.register_post_accumulate_grad_hook and autograd.queue_callback, against torch: the two
points where code acting on finished gradients (DistributedDataParallel) joins the backward."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import paragrad as pg

from tests.helpers import check_raises

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=np.float32)


def both(device="cpu"):
    return pg.tensor(X, device=device, requires_grad=True), torch.tensor(X, requires_grad=True)


def torch_queue_callback(fn):
    torch.autograd.Variable._execution_engine.queue_callback(fn)


def test_hook_sees_the_accumulated_grad(device):
    """The hook runs after .grad holds the sum of this backward's gradient and the old .grad,
    and after the tensor's own (pre-accumulation) hooks."""
    seen = {pg: [], torch: []}
    for x, lib in zip(both(device), (pg, torch)):
        x.register_hook(lambda g: g * 3)
        x.register_post_accumulate_grad_hook(lambda t, lib=lib: seen[lib].append(t.grad.detach().clone()))
        (x * x).sum().backward()
        (x.exp()).sum().backward()
    assert len(seen[pg]) == len(seen[torch]) == 2
    for a, b in zip(seen[pg], seen[torch]):
        np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), rtol=1e-6)


def test_hook_may_update_grad_in_place(device):
    def halve(p):
        p.grad.mul_(0.5)

    def add_one(p):
        p.grad.add_(1.0)

    x, t = both(device)
    for v in (x, t):
        v.register_post_accumulate_grad_hook(halve)
        h = v.register_post_accumulate_grad_hook(add_one)       # run in registration order
        (v * v).sum().backward()
        h.remove()
        (v * 2).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), t.grad.numpy(), rtol=1e-6)


def test_hook_runs_once_per_backward_for_a_leaf_used_twice(device):
    counts = {pg: 0, torch: 0}
    for x, lib in zip(both(device), (pg, torch)):
        def hook(p, lib=lib):
            counts[lib] += 1
        x.register_post_accumulate_grad_hook(hook)
        (x * x + x.sin()).sum().backward()
    assert counts[pg] == counts[torch] == 1


def test_hook_not_run_by_autograd_grad_and_only_for_backward_inputs():
    calls = {pg: [], torch: []}
    for lib in (pg, torch):
        a = lib.tensor(X, requires_grad=True)
        b = lib.tensor(X, requires_grad=True)
        a.register_post_accumulate_grad_hook(lambda p, lib=lib: calls[lib].append("a"))
        b.register_post_accumulate_grad_hook(lambda p, lib=lib: calls[lib].append("b"))
        lib.autograd.grad((a * b).sum(), [a, b])
        (a * b).sum().backward(inputs=[b])
    assert calls[pg] == calls[torch] == ["b"]


def test_hook_errors():
    check_raises(lambda L, x: x.register_post_accumulate_grad_hook(lambda p: None), X,
                 match="doesn't require gradient")
    check_raises(lambda L, x: (x * 2).register_post_accumulate_grad_hook(lambda p: None), X,
                 requires_grad=True, match="non-leaf")
    check_raises(lambda L, x: (x.register_post_accumulate_grad_hook(lambda p: p.grad * 2),
                               (x * 2).sum().backward()), X, requires_grad=True, match="should return None")
    check_raises(lambda L, x: (x.register_post_accumulate_grad_hook(lambda p: 1),
                               (x * 2).sum().backward()), X, requires_grad=True, error=TypeError)


def test_queued_callback_runs_after_every_gradient():
    order = {pg: [], torch: []}
    queue = {pg: pg.autograd.queue_callback, torch: torch_queue_callback}
    for lib in (pg, torch):
        a = lib.tensor(X, requires_grad=True)
        b = lib.tensor(X, requires_grad=True)
        log = order[lib]

        def hook(p, name, lib=lib, log=log):
            log.append(name)
            if name == "b":         # queued from a hook; one callback queues another
                queue[lib](lambda: (log.append("end"), queue[lib](lambda: log.append("end2"))))
        a.register_post_accumulate_grad_hook(lambda p: hook(p, "a"))
        b.register_post_accumulate_grad_hook(lambda p: hook(p, "b"))
        (a * b.exp()).sum().backward()
        (a * b).sum().backward()        # a new backward: no callback left over from the last one
    assert sorted(order[pg][:2]) == ["a", "b"] and order[pg][2:4] == ["end", "end2"]
    assert sorted(order[pg]) == sorted(order[torch])
    assert order[pg].count("end") == 2


def test_queue_callback_outside_backward_raises():
    check_raises(lambda L: (pg.autograd.queue_callback if L is pg else torch_queue_callback)(lambda: None),
                 match="only be installed during backward pass")


def test_failed_backward_runs_no_callback():
    x = pg.tensor(X, requires_grad=True)
    ran = []

    def hook(p):
        pg.autograd.queue_callback(lambda: ran.append(1))
        raise ValueError("boom")
    x.register_post_accumulate_grad_hook(hook)
    with pytest.raises(ValueError):
        (x * 2).sum().backward()
    assert ran == []
    with pytest.raises(RuntimeError, match="during backward"):
        pg.autograd.queue_callback(lambda: None)      # the failed backward left nothing queued
