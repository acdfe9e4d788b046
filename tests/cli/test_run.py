"""`paragrad run script.py`: unmodified PyTorch scripts (tests/cli/scripts/) run on paragrad.

Everything runs in a subprocess, so the torch mapping never reaches this test process; the
scripts run once more under real `python` (torch 2.13) where their output is compared."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"
SUFFIX = "(paragrad run maps torch to paragrad; docs/compatibility.md lists what each namespace lacks)"
NOTICE = "paragrad run: torch.utils.tensorboard is not supported; SummaryWriter calls do nothing"


def paragrad_run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "paragrad", "run", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def python(*args, cwd=None):
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def _numbers(out):
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    losses = [float(v) for v in lines["losses"].split()]
    words = lines["eval"].split()       # loss L accuracy A lr R
    return losses, [float(words[1]), float(words[3]), float(words[5])]


def test_training_script_matches_pytorch():
    ours, theirs = paragrad_run(SCRIPTS / "mlp_adamw.py"), python(SCRIPTS / "mlp_adamw.py")
    assert ours.returncode == 0, ours.stderr
    assert theirs.returncode == 0, theirs.stderr
    (our_losses, our_eval), (their_losses, their_eval) = _numbers(ours.stdout), _numbers(theirs.stdout)
    assert len(our_losses) == len(their_losses) == 20
    assert our_losses[-1] < 0.5 * our_losses[0]         # it trained
    assert our_losses == pytest.approx(their_losses, rel=1e-4, abs=1e-5)
    assert our_eval == pytest.approx(their_eval, rel=1e-4, abs=1e-5)


def test_argv_main_path_and_exit_code_as_python_gives_them():
    args = ["--lr", "3e-4", "-h", "--", "x y", "3"]
    ours = paragrad_run("argv_exit.py", *args, cwd=SCRIPTS)
    theirs = python("argv_exit.py", *args, cwd=SCRIPTS)
    assert ours.returncode == theirs.returncode == 3, (ours.stderr, theirs.stderr)
    seen = json.loads(ours.stdout)
    assert seen == json.loads(theirs.stdout)
    assert seen["argv"] == ["argv_exit.py", *args] and seen["name"] == "__main__" and seen["tensor"]
    assert seen["file"] == str(SCRIPTS / "argv_exit.py") and seen["path0"] == str(SCRIPTS)
    assert paragrad_run(SCRIPTS / "argv_exit.py", "0").returncode == 0


def _paragrad_has(module):
    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize("way, api", [("attribute", "torch.vmap"), ("from-import", "torch.nn.NotAModule"),
                                      ("import", "torch.distributions"),
                                      ("nested-import", "torch.utils.checkpoint")])
def test_missing_api_fails_naming_it(way, api):
    assert not _paragrad_has(api.replace("torch", "paragrad", 1)), f"paragrad has {api} now: pick another"
    r = paragrad_run(SCRIPTS / "missing_api.py", way)
    assert r.returncode == 1 and "unreachable" not in r.stdout, (r.stdout, r.stderr)
    error = "AttributeError" if way == "attribute" else "ModuleNotFoundError"
    assert r.stderr.rstrip().splitlines()[-1] == f"{error}: paragrad has no {api} {SUFFIX}"
    # the script's traceback, as `python missing_api.py` prints it: no frames of the command line
    assert r.stderr.startswith("Traceback (most recent call last):\n")
    assert r.stderr.splitlines()[1].startswith(f'  File "{SCRIPTS / "missing_api.py"}"'), r.stderr
    assert "paragrad/cli" not in r.stderr


def test_tensorboard_stub_does_nothing_and_says_so_once(tmp_path):
    r = paragrad_run(SCRIPTS / "tensorboard_log.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "logged\n"
    assert r.stderr == NOTICE + "\n"
    assert list(tmp_path.iterdir()) == []           # no event files, no runs/ folder


def test_torch_onnx_imports_and_fails_by_name_when_used(tmp_path):
    r = paragrad_run(SCRIPTS / "onnx_import.py", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == "imported\n"
    assert r.stderr.startswith("paragrad run: torch.onnx is not supported; using any of it fails\n")
    assert r.stderr.rstrip().endswith(f"AttributeError: paragrad has no torch.onnx.export {SUFFIX}")


@pytest.mark.parametrize("what", ["missing", "folder"])
def test_missing_script_is_one_line_exit_2(tmp_path, what):
    script = tmp_path / "nope.py" if what == "missing" else tmp_path
    r = paragrad_run(script, "--flag")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("paragrad run: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert str(script) in r.stderr


def test_help_explains_run():
    r = paragrad_run("--help")
    assert r.returncode == 0 and "PyTorch script" in r.stdout and "sys.argv" in r.stdout
    assert " run " in subprocess.run([sys.executable, "-m", "paragrad", "--help"], capture_output=True,
                                     text=True).stdout


def test_refused_when_real_torch_is_already_imported():
    script = str(SCRIPTS / "argv_exit.py")
    code = f"import sys, torch; from paragrad.cli import main; sys.exit(main(['run', {script!r}, '0']))"
    r = python("-c", code)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("paragrad run: error: torch is already imported") and r.stderr.count("\n") == 1


def _in_subprocess(code):
    r = python("-c", textwrap.dedent(code))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_plain_paragrad_leaves_torch_alone():
    out = _in_subprocess("""
        import sys
        import paragrad, paragrad.cli
        assert "paragrad.as_torch" not in sys.modules
        import torch
        print(torch.__file__)
    """)
    assert "site-packages" in out and "paragrad" not in out


def test_mapping_after_install():
    _in_subprocess("""
        import paragrad as pg
        from paragrad.as_torch import TorchFinder, install
        install()
        install()                                   # once is enough; twice changes nothing
        import sys
        assert sum(isinstance(f, TorchFinder) for f in sys.meta_path) == 1
        import torch, torch.nn.functional as F
        from torch.nn import functional as F2
        from torch.utils.data import DataLoader, Dataset, RandomSampler
        from torch.utils.data.dataloader import DataLoader as DataLoader2
        import torch.optim.lr_scheduler, torch.backends.cudnn, torch.backends.cuda
        assert torch.Tensor is pg.Tensor and isinstance(torch.ones(2), torch.Tensor)
        assert torch.float32 is pg.float32 and torch.device("cpu") == pg.device("cpu")
        assert F is F2 is torch.nn.functional and F.relu is pg.nn.functional.relu
        assert DataLoader is DataLoader2 is pg.data.DataLoader and RandomSampler is pg.data.RandomSampler
        assert torch.optim.lr_scheduler.StepLR is pg.optim.lr_scheduler.StepLR
        from torch.utils.data.distributed import DistributedSampler
        assert DistributedSampler is pg.data.DistributedSampler
        # torch's module paths to paragrad's modules that moved in the regroup
        import torch.serialization, torch.autograd.anomaly_mode
        assert torch.serialization.load is pg.load and torch.serialization.save is pg.save
        assert torch.autograd.anomaly_mode.detect_anomaly is pg.autograd.detect_anomaly
        from torch.cuda.amp import GradScaler
        assert GradScaler is pg.cuda.amp.GradScaler and torch.amp.autocast is pg.autocast
        # torch.nn.modules.<file>.<Class> is torch.nn.<Class>: paragrad.nn's, whatever paragrad's files
        from torch.nn.modules.loss import CrossEntropyLoss
        assert CrossEntropyLoss is pg.nn.CrossEntropyLoss and torch.nn.modules.linear.Linear is pg.nn.Linear
        try:
            torch.nn.modules.linear.NonDynamicallyQuantizableLinear
            raise AssertionError("a torch class paragrad lacks was found")
        except AttributeError as e:
            assert "paragrad has no torch.nn.modules.linear.NonDynamicallyQuantizableLinear " in str(e)
        assert torch.cuda.is_available() == pg.cuda.is_available() and torch.no_grad is pg.no_grad
        # a script's settings are paragrad's, not a copy's
        torch.backends.cudnn.benchmark = True
        assert pg.backends.cudnn.benchmark is True
        torch.backends.cuda.matmul.allow_tf32 = True
        assert pg.backends.cuda.matmul.allow_tf32 is True
        # missing: named, and hasattr says no
        for name in ("vmap", "jit"):                # paragrad's jit is not torch.jit
            assert not hasattr(torch, name)
            try:
                getattr(torch, name)
            except AttributeError as e:
                assert str(e).startswith(f"paragrad has no torch.{name} "), e
        ns = {}
        exec("from torch import *", ns)
        assert ns["tanh"] is pg.tanh and "jit" not in ns
    """)


def test_cached_reads_follow_writes_and_deletes():
    """Functions and classes read through the proxy are kept on it (a dict hit the next time);
    a script's assignment or del must still be what the next read sees."""
    out = _in_subprocess("""
        import paragrad.as_torch as as_torch; as_torch.install()
        import paragrad, torch
        assert torch.zeros is torch.zeros is paragrad.zeros
        torch.zeros = lambda *size: "replaced"
        assert torch.zeros(1) == "replaced" and paragrad.zeros(1) == "replaced"
        del torch.zeros
        try:
            torch.zeros
        except AttributeError as e:
            print(e)
        import torch.nn
        del torch.nn
        print(hasattr(paragrad, "nn"))
    """)
    assert out == f"paragrad has no torch.zeros {SUFFIX}\nTrue\n"
