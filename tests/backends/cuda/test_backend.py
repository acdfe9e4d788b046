"""CUDA-only behaviour (memory statistics, errors, device moves, TF32, seeding, allocator
choice). Marked `gpu`: deselected by default, run by scripts/gpu-check on a GPU machine."""
import os
import subprocess
import sys

import numpy as np
import pytest

import paragrad as pg
import torch

pytestmark = pytest.mark.gpu


def test_device_queries():
    assert pg.cuda.device_count() >= 1
    assert isinstance(pg.cuda.get_device_name(0), str)
    assert pg.cuda.is_bf16_supported() and pg.cuda.is_bf16_supported(including_emulation=False)   # (H100/H200)
    pg.cuda.synchronize()


def test_memory_statistics():
    pg.cuda.empty_cache()
    before = pg.cuda.memory_allocated()
    x = pg.empty(1024, 1024, device="cuda")       # 4 MiB
    assert pg.cuda.memory_allocated() >= before + 4 * 2**20
    assert pg.cuda.max_memory_allocated() >= pg.cuda.memory_allocated()
    del x
    assert pg.cuda.memory_allocated() <= before + 4096
    assert "peak allocated" in pg.cuda.memory_summary()
    pg.cuda.empty_cache()


def test_out_of_memory_error_names_the_request():
    with pytest.raises(RuntimeError, match=r"out of memory: tried to allocate .*GiB"):
        pg.empty(2**45, dtype=pg.uint8, device="cuda")     # 32 TiB


def test_mixing_devices_is_a_clear_error():
    with pytest.raises(RuntimeError, match="same device"):
        pg.ones(3, device="cuda") + pg.ones(3)
    assert (pg.ones(3, device="cuda") + pg.tensor(2.0)).tolist() == [3.0, 3.0, 3.0]   # 0-d CPU joins
    logits, target = pg.zeros(2, 3, device="cuda"), pg.tensor([0, 1])
    for loss in (pg.nn.functional.cross_entropy, pg.nn.functional.nll_loss):
        with pytest.raises(RuntimeError, match="same device"):
            loss(logits, target)


def test_moves_between_devices_keep_values_and_gradients():
    x = pg.randn(4, 5, requires_grad=True)
    y = (x.cuda() * 2).cpu().sum()
    y.backward()
    assert x.grad.device.type == "cpu" and np.allclose(x.grad.numpy(), 2.0)
    m = pg.nn.Linear(5, 3).to("cuda")
    assert all(p.device.type == "cuda" for p in m.parameters())
    assert m(pg.randn(2, 5, device="cuda")).device == pg.device("cuda:0")


def test_tf32_switch():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((512, 512)), rng.standard_normal((512, 512))
    ref = a @ b
    x, y = pg.tensor(a, dtype=pg.float32, device="cuda"), pg.tensor(b, dtype=pg.float32, device="cuda")
    err = lambda: np.abs((x @ y).cpu().numpy() - ref).max() / np.abs(ref).max()  # noqa: E731
    exact = err()
    pg.backends.cuda.matmul.allow_tf32 = True
    try:
        tf32 = err()
    finally:
        pg.backends.cuda.matmul.allow_tf32 = False
    assert exact < 1e-5 and 1e-5 < tf32 < 1e-2


def test_seeded_draws_repeat():
    pg.manual_seed(3)
    a = pg.rand(1000, device="cuda").tolist()
    b = pg.randn(10, device="cuda").tolist()
    pg.manual_seed(3)
    assert pg.rand(1000, device="cuda").tolist() == a and pg.randn(10, device="cuda").tolist() == b
    u = np.array(a)
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.05
    g = pg.Generator("cuda").manual_seed(1)
    state = g.get_state()
    first = pg.rand(5, generator=g, device="cuda").tolist()
    g.set_state(state)
    assert pg.rand(5, generator=g, device="cuda").tolist() == first


@pytest.mark.parametrize("name", ["adam", "adamw-amsgrad", "sgd-nesterov"])
def test_fused_optimizers_equal_the_composite_bit_for_bit(name):
    from paragrad.backends.base import fast_paths
    make = {"adam": lambda p: pg.optim.Adam(p, lr=1e-2),
            "adamw-amsgrad": lambda p: pg.optim.AdamW(p, lr=1e-2, weight_decay=0.1, amsgrad=True),
            "sgd-nesterov": lambda p: pg.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True,
                                                   weight_decay=1e-3)}[name]
    results = []
    for fast in (True, False):
        pg.manual_seed(0)
        params = [pg.randn(300, 20, device="cuda").requires_grad_(), pg.randn(300, device="cuda").requires_grad_(),
                  pg.randn(5, 300, device="cuda").requires_grad_()]
        opt = make(params)
        gen = pg.Generator("cuda").manual_seed(1)
        with fast_paths(fast):      # the same gradients each run: only the update differs
            for _ in range(5):
                for p in params:
                    p.grad = pg.randn(*p.shape, generator=gen, device="cuda")
                opt.step()
        results.append([p.detach().cpu().numpy() for p in params])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_async_allocator():
    code = ("import paragrad as pg; x = pg.ones(1000, device='cuda'); "
            "assert pg.cuda.memory_allocated() >= 4000; print((x * 2).sum().item())")
    env = dict(os.environ, PARAGRAD_CUDA_ALLOCATOR="async")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "2000.0", r.stderr


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_one_kernel_many_blocks(reduction):
    """The fused forward reduces in its last block: more rows than run at once, an ignored
    row, the same bits on every call (the block counter resets itself), and PyTorch's values."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((70000, 10)).astype(np.float32)
    t = rng.integers(0, 10, 70000)
    t[5] = -100
    px = pg.tensor(x, device="cuda", requires_grad=True)
    pt = pg.tensor(t, device="cuda")
    losses = [pg.nn.functional.cross_entropy(px, pt, reduction=reduction) for _ in range(3)]
    assert len({float(v.item()) for v in losses}) == 1
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ref = torch.nn.functional.cross_entropy(tx, torch.tensor(t), reduction=reduction)
    np.testing.assert_allclose(losses[0].item(), ref.item(), rtol=1e-5)
    losses[0].backward()
    ref.backward()
    np.testing.assert_allclose(px.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-9)


def test_cross_entropy_all_ignored_mean_is_nan_with_zero_gradient():
    x = pg.randn(4, 3, device="cuda", requires_grad=True)
    loss = pg.nn.functional.cross_entropy(x, pg.full((4,), -100, dtype=pg.int64, device="cuda"))
    assert np.isnan(loss.item())
    loss.backward()
    assert not x.grad.cpu().numpy().any()


def test_a_view_that_alone_holds_its_base_counts_as_owned():
    """owns_memory decides whether a gradient becomes a leaf's .grad as it is (and is later
    added into in place): a reshape of a fresh buffer may, a view beside another may not."""
    import cupy
    k = pg.empty(1, device="cuda")._backend
    fresh = cupy.arange(6, dtype=cupy.float32).reshape(2, 3)      # its base: held by it alone
    assert k.owns_memory(fresh)
    base = cupy.arange(6, dtype=cupy.float32)
    shared = base.reshape(2, 3)
    assert not k.owns_memory(shared)
    del base
    other = shared.reshape(6)                                       # a second view of one base
    assert not k.owns_memory(shared) and not k.owns_memory(other)


def test_bias_gradients_accumulate_privately_over_steps():
    """A Linear bias's .grad (column sums, reshaped) is adopted without a copy; a second
    backward adds into it in place and into nothing else."""
    torch.manual_seed(0)
    ref = torch.nn.Linear(5, 3)
    lin = pg.nn.Linear(5, 3).to("cuda")
    with pg.no_grad():
        lin.weight.copy_(pg.tensor(ref.weight.detach().numpy()))
        lin.bias.copy_(pg.tensor(ref.bias.detach().numpy()))
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    kept = None
    for step in range(2):
        lin(pg.tensor(x, device="cuda")).pow(2).sum().backward()
        ref(torch.tensor(x)).pow(2).sum().backward()
        if step == 0:
            kept = lin.bias.grad.detach().clone()
    np.testing.assert_allclose(lin.bias.grad.cpu().numpy(), ref.bias.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(kept.cpu().numpy() * 2, lin.bias.grad.cpu().numpy(), rtol=1e-5, atol=1e-5)
