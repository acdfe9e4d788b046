"""pg.compile against torch.compile (torch 2.13's CPU wheel): the objects it returns, their
state_dict keys, its argument errors, and results equal to eager code, through training steps
and a nanoGPT-style checkpoint round trip; and a script calling torch.compile under
`paragrad run`."""
import subprocess
import sys

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_raises


def _pair(seed=0):
    torch.manual_seed(seed)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 3))
    pm = pg.nn.Sequential(pg.nn.Linear(4, 8), pg.nn.GELU(), pg.nn.Linear(8, 3))
    pm.load_state_dict({k: pg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, pm


def test_a_module_comes_back_wrapped_as_torchs():
    tm, pm = _pair()
    tc, pc = torch.compile(tm), pg.compile(pm)
    assert type(pc).__name__ == type(tc).__name__ == "OptimizedModule"
    assert pc._orig_mod is pm and isinstance(pc, pg.nn.Module)
    assert list(pc.state_dict()) == list(tc.state_dict())          # "_orig_mod.0.weight", ...
    assert [n for n, _ in pc.named_parameters()] == [n for n, _ in tc.named_parameters()]
    pm.block_size = 8                                           # the original's attributes
    assert pc.block_size == 8 and pc.forward is not pm.forward and pc.training
    with pytest.raises(AttributeError, match="block"):
        pc.blocks
    pc.eval()
    assert not pm.training and not pm[0].training
    assert pg.compile(pm, disable=True) is pm and torch.compile(tm, disable=True) is tm
    assert type(pg.compile(pm, backend=None)).__name__ == type(torch.compile(tm, backend=None)).__name__


def test_functions_and_the_decorator_forms():
    def double(x):
        return x * 2
    for lib in (torch, pg):     # (torch's compiled functions are not called: that compiles)
        f = lib.compile(double)
        assert f is not double and f.__name__ == "double" and callable(f)
        assert callable(lib.compile(mode="reduce-overhead")) and lib.compile(double, disable=True) is double
    g, h = pg.compile(mode="reduce-overhead")(double), pg.compile()(double)
    assert g(pg.ones(2)).tolist() == h(pg.ones(2)).tolist() == pg.compile(double)(pg.ones(2)).tolist() == [2.0, 2.0]


@pytest.mark.parametrize("kwargs, match", [
    (dict(mode="fast"), "Unrecognized mode=fast, should be one of: default, lite, reduce-overhead"),
    (dict(mode="default", options={"x": 1}), "Either mode or options can be specified"),
    (dict(backend="nope"), "Invalid backend: 'nope'")])
def test_argument_errors_are_torchs(kwargs, match):
    check_raises(lambda lib: lib.compile(lib.nn.Linear(2, 2), **kwargs), match=match)


def test_a_callable_backend_is_refused_naming_why():
    with pytest.raises(RuntimeError, match="torch.fx graph"):
        pg.compile(pg.nn.Linear(2, 2), backend=lambda gm, inputs: gm)


def test_training_through_the_compiled_module_equals_eager():
    _, pm = _pair()
    _, pe = _pair()
    pc = pg.compile(pm, mode="max-autotune")
    opts = [pg.optim.AdamW(m.parameters(), lr=1e-2) for m in (pc, pe)]
    x = pg.tensor(np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32))
    for _ in range(3):
        for m, opt in zip((pc, pe), opts):
            opt.zero_grad()
            m(x).square().mean().backward()
            opt.step()
    for a, b in zip(pm.parameters(), pe.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_a_compiled_checkpoint_loads_as_nanogpt_does(tmp_path):
    _, pm = _pair()
    pg.save(pg.compile(pm).state_dict(), tmp_path / "ckpt.pt")
    state = pg.load(tmp_path / "ckpt.pt")
    prefix = "_orig_mod."          # nanoGPT's sample.py strips it
    fresh = _pair(seed=1)[1]
    fresh.load_state_dict({k[len(prefix):]: v for k, v in state.items()})
    x = pg.ones(2, 4)
    np.testing.assert_array_equal(fresh(x).detach().numpy(), pm(x).detach().numpy())


def test_a_script_calling_torch_compile_runs_under_paragrad_run(tmp_path):
    script = tmp_path / "compiled.py"
    script.write_text(
        "import torch\n"
        "model = torch.compile(torch.nn.Linear(3, 2))\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "loss = model(torch.ones(4, 3)).sum()\n"
        "loss.backward(); opt.step()\n"
        "print(type(model).__name__, sorted(model.state_dict()))\n")
    out = subprocess.run([sys.executable, "-m", "paragrad", "run", str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "OptimizedModule ['_orig_mod.bias', '_orig_mod.weight']"
