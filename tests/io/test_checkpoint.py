import os

import numpy as np
import pytest
import torch

import paragrad as pg
from paragrad import nn, optim
from paragrad.io import checkpoint
from paragrad.io.safetensors import SafetensorsError


def _model():
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))


def _train(model, opt, sched=None, steps=3, seed=0):
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(steps):
        x = pg.tensor(rng.standard_normal((5, 6)).astype(np.float32))
        y = pg.tensor(rng.integers(0, 3, 5))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched:
            sched.step()
        losses.append(loss.item())
    return losses


def test_round_trip_restores_everything(tmp_path):
    m, o = _model(), None
    o = optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)
    s = optim.lr_scheduler.CosineAnnealingLR(o, 10)
    _train(m, o, s)
    path = tmp_path / "ck.safetensors"
    checkpoint.save(path, m, o, s, step=3, epoch=1, extra={"note": "x"})
    m2 = _model()
    o2 = optim.AdamW(m2.parameters(), lr=1e-2, weight_decay=0.1)
    s2 = optim.lr_scheduler.CosineAnnealingLR(o2, 10)
    meta = checkpoint.load(path, m2, o2, s2)
    assert meta == {"step": 3, "epoch": 1, "extra": {"note": "x"}}
    for (k, a), (_, b) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert np.array_equal(a.numpy(), b.numpy()), k
    assert s2.last_epoch == s.last_epoch and o2.param_groups[0]["lr"] == o.param_groups[0]["lr"]
    assert _train(m, o, s, seed=1) == _train(m2, o2, s2, seed=1)   # continues identically


def test_weights_load_with_safetensors_and_into_torch(tmp_path):
    from safetensors.numpy import load_file
    from safetensors.torch import load_file as load_torch
    m = _model()
    path = tmp_path / "w.safetensors"
    checkpoint.save(path, m)
    arrays = load_file(str(path))
    assert set(arrays) == set(m.state_dict())
    tm = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    tm.load_state_dict(load_torch(str(path)), strict=True)
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(tm(torch.tensor(x)).detach().numpy(), m(pg.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_killed_write_leaves_previous_checkpoint(tmp_path, monkeypatch):
    m = _model()
    o = optim.Adam(m.parameters())
    path = tmp_path / "ck.safetensors"
    checkpoint.save(path, m, o, epoch=1)
    before = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    with pg.no_grad():
        for p in m.parameters():
            p.add_(1.0)

    real_write = os.write

    def dying_replace(src, dst):
        raise KeyboardInterrupt("killed mid-save")
    monkeypatch.setattr(os, "replace", dying_replace)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save(path, m, o, epoch=2)
    monkeypatch.undo()
    assert os.write is real_write
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.safetensors", "ck.safetensors.train.safetensors"]
    m2 = _model()
    assert checkpoint.load(path, m2, optim.Adam(m2.parameters()))["epoch"] == 1
    for k, v in m2.state_dict().items():
        assert np.array_equal(v.numpy(), before[k])


class _Killed(BaseException):
    pass


@pytest.mark.parametrize("when", ["before", "after"])
@pytest.mark.parametrize("kill_at", range(3))
def test_a_save_killed_at_any_rename_leaves_a_checkpoint_that_loads_whole(tmp_path, monkeypatch, kill_at, when):
    """A save renames three files into place (the pending weights, the training state, the
    weights). Killed just before or after any of them, load gives the old checkpoint or the new
    one, its weights and optimizer state from the same save, never a refusal."""
    m = _model()
    o = optim.Adam(m.parameters())
    _train(m, o, steps=1)
    path = tmp_path / "ck.safetensors"
    checkpoint.save(path, m, o, epoch=1)
    saved = {1: (m.state_dict(), o.state_dict())}
    saved[1] = ({k: v.numpy().copy() for k, v in saved[1][0].items()},
                {i: {k: np.array(v.tolist()) for k, v in e.items()} for i, e in saved[1][1]["state"].items()})
    _train(m, o, steps=1, seed=1)
    saved[2] = ({k: v.numpy().copy() for k, v in m.state_dict().items()},
                {i: {k: np.array(v.tolist()) for k, v in e.items()} for i, e in o.state_dict()["state"].items()})

    real_replace, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) - 1 == kill_at and when == "before":
            raise _Killed
        real_replace(src, dst)
        if len(calls) - 1 == kill_at:
            raise _Killed
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(_Killed):
        checkpoint.save(path, m, o, epoch=2)
    monkeypatch.undo()
    m2 = _model()
    o2 = optim.Adam(m2.parameters())
    epoch = checkpoint.load(path, m2, o2)["epoch"]
    expect_new = kill_at >= 1 + (when == "before")     # the training state's rename commits
    assert epoch == (2 if expect_new else 1)
    weights, state = saved[epoch]
    for k, v in m2.state_dict().items():
        assert np.array_equal(v.numpy(), weights[k]), k
    for i, entry in o2.state_dict()["state"].items():
        for k, v in entry.items():
            assert np.array_equal(np.array(v.tolist()), state[i][k]), (i, k)
    checkpoint.save(path, m2, o2, epoch=3)      # the next save tidies up: a plain pair again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.safetensors", "ck.safetensors.train.safetensors"]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupt_file_gives_clear_error(tmp_path, damage):
    m = _model()
    path = tmp_path / "ck.safetensors"
    checkpoint.save(path, m)
    data = path.read_bytes()
    path.write_bytes({"truncate": data[: len(data) // 2], "garbage": b"\xff" * 64, "empty": b""}[damage])
    with pytest.raises(SafetensorsError, match="ck.safetensors"):
        checkpoint.load(path, _model())


def test_mismatched_pair_is_refused(tmp_path):
    m = _model()
    a, b = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    checkpoint.save(a, m, optim.SGD(m.parameters()))
    checkpoint.save(b, m, optim.SGD(m.parameters()))
    os.replace(checkpoint.train_state_path(b), checkpoint.train_state_path(a))
    with pytest.raises(SafetensorsError, match="different saves"):
        checkpoint.load(a, _model(), optim.SGD(_model().parameters()))


def test_rng_state_is_restored(tmp_path):
    m = _model()
    pg.manual_seed(5)
    checkpoint.save(tmp_path / "r.safetensors", m)
    expected = pg.rand(4).tolist()
    pg.manual_seed(99)
    checkpoint.load(tmp_path / "r.safetensors", _model())
    assert pg.rand(4).tolist() == expected


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_files_get_the_umask_permissions_like_open(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        checkpoint.save(tmp_path / "ck.safetensors", _model(), optim.SGD(_model().parameters()))
        with open(tmp_path / "plain", "w"):
            pass
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "plain").st_mode & 0o777 == mode
    for name in ["ck.safetensors", "ck.safetensors.train.safetensors"]:
        assert os.stat(tmp_path / name).st_mode & 0o777 == mode, name


def test_a_stale_temp_file_of_a_killed_save_is_removed_by_the_next_save(tmp_path):
    # a kill -9 mid-save can't clean up: plant what it leaves, from a writer process now gone
    import subprocess
    import sys

    from paragrad.io.atomic_write import temp_name
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    stale = temp_name(tmp_path / "a.safetensors").replace(f"-{os.getpid()}-", f"-{dead}-")
    open(stale, "wb").close()
    checkpoint.save(tmp_path / "b.safetensors", _model())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.safetensors", "b.safetensors.train.safetensors"]


def test_old_module_path_still_works():
    # the README documented paragrad.checkpoint before checkpoints moved into paragrad.io
    import paragrad.checkpoint
    from paragrad.checkpoint import load_weights
    assert paragrad.checkpoint is checkpoint and pg.checkpoint is checkpoint
    assert load_weights is checkpoint.load_weights
