"""pg.amp.GradScaler against torch.amp.GradScaler("cpu"): the scale sequence, the skipped steps
and the parameters over a run with injected infs, unscale_ before clipping, the errors of
misuse, the disabled scaler, and state_dict round trips."""
import math
import warnings

import numpy as np
import pytest
import torch

import paragrad as pg
from tests.helpers import check_raises


# SGD and Adam skip a step on the device (the scaler hands them its flag; on the CPU they read
# it); RMSprop gets the step only when the scaler read no inf on the host
_OPTIMIZERS = {"sgd": lambda lib, w: lib.optim.SGD([w], lr=0.1, momentum=0.9),
               "adam": lambda lib, w: lib.optim.Adam([w], lr=0.1),
               "rmsprop": lambda lib, w: lib.optim.RMSprop([w], lr=0.01)}


def _setup(lib, device="cpu", optimizer="sgd", **kw):
    w = lib.tensor([1.0, -2.0, 0.5], requires_grad=True)
    if lib is pg:
        w = pg.tensor([1.0, -2.0, 0.5], device=device, requires_grad=True)
    opt = _OPTIMIZERS[optimizer](lib, w)
    scaler = lib.amp.GradScaler(device if lib is pg else "cpu", **kw)
    return w, opt, scaler


def _iteration(lib, w, opt, scaler, poison, clip=False):
    opt.zero_grad()
    loss = (w * w * w).sum()
    if poison:
        loss = loss * float(poison)
    scaler.scale(loss).backward()
    if clip:
        scaler.unscale_(opt)
        lib.nn.utils.clip_grad_norm_([w], 1.0)
    scaler.step(opt)
    scaler.update()


@pytest.mark.parametrize("clip,optimizer", [(False, "sgd"), (True, "sgd"), (False, "adam"),
                                            (True, "adam"), (False, "rmsprop")])
def test_scale_sequence_and_steps_match_torch(device, clip, optimizer):
    """Growth every 3 clean steps, backoff on inf and NaN, skipped steps (Adam's step counts
    not advanced): step by step as torch."""
    kw = dict(init_scale=2.0**10, growth_factor=4.0, backoff_factor=0.25, growth_interval=3)
    pw, popt, ps = _setup(pg, device, optimizer, **kw)
    tw, topt, ts = _setup(torch, "cpu", optimizer, **kw)
    for poison in [0, 0, 0, math.inf, 0, 0, math.nan, 0, 0, 0, 0, -math.inf, 0]:
        _iteration(pg, pw, popt, ps, poison, clip)
        _iteration(torch, tw, topt, ts, poison, clip)
        assert ps.get_scale() == ts.get_scale()
        assert ps._get_growth_tracker() == ts._get_growth_tracker()
        np.testing.assert_allclose(pw.detach().cpu().numpy(), tw.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert ps.state_dict() == ts.state_dict()
    if optimizer == "adam":     # 13 iterations, 3 of them skipped
        assert float(popt.state[pw]["step"]) == float(topt.state[tw]["step"]) == 10


def test_scale_of_nested_outputs():
    for lib in (pg, torch):
        s = lib.amp.GradScaler("cpu", init_scale=4.0)
        a, b = lib.ones(2), lib.ones(3)
        out = s.scale([a, (b, a)])
        assert isinstance(out, list) and isinstance(out[1], tuple)
        assert out[0].tolist() == [4.0, 4.0] and out[1][0].tolist() == [4.0] * 3


def test_misuse_errors_match_torch():
    def twice_unscaled(lib):
        w, opt, s = _setup(lib)
        s.scale((w * w).sum()).backward()
        s.unscale_(opt)
        s.unscale_(opt)

    def unscale_after_step(lib):
        w, opt, s = _setup(lib)
        s.scale((w * w).sum()).backward()
        s.step(opt)
        s.unscale_(opt)

    def step_twice(lib):
        w, opt, s = _setup(lib)
        s.scale((w * w).sum()).backward()
        s.step(opt)
        s.step(opt)

    def closure(lib):
        w, opt, s = _setup(lib)
        s.scale((w * w).sum()).backward()
        s.step(opt, closure=lambda: None)

    def empty_state_dict(lib):
        lib.amp.GradScaler("cpu").load_state_dict({})

    check_raises(twice_unscaled, match="unscale_\\(\\) has already been called")
    check_raises(unscale_after_step, match="unscale_\\(\\) is being called after step\\(\\)")
    check_raises(step_twice, match="step\\(\\) has already been called since the last update")
    check_raises(closure, match="Closure use is not currently supported")
    check_raises(empty_state_dict, match="The source state dict is empty")


def test_update_without_scale_and_fp16_gradients_raise_as_torch():
    def update_first(lib):
        lib.amp.GradScaler("cpu").update()

    def half_grads(lib):
        w = lib.ones(2, dtype=lib.float16, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        s = lib.amp.GradScaler("cpu")
        s.scale((w * w).sum()).backward()
        s.unscale_(opt)

    check_raises(update_first, match="Attempted update but _scale is None")
    check_raises(half_grads, match="Attempting to unscale FP16 gradients")


def test_disabled_scaler_is_transparent():
    w, opt, s = _setup(pg, enabled=False)
    loss = (w * w).sum()
    assert s.scale(loss) is loss and s.get_scale() == 1.0 and s.state_dict() == {}
    loss.backward()
    s.step(opt)
    s.update()
    assert w.tolist() != [1.0, -2.0, 0.5]        # the step ran


def test_cuda_scaler_without_cuda_warns_and_disables_as_torch():
    if pg.cuda.is_available():          # the GPU machine: the scaler stays on
        assert pg.amp.GradScaler("cuda").is_enabled()
        return
    for lib in (torch, pg):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s = lib.amp.GradScaler("cuda")
        assert not s.is_enabled() and "CUDA is not available" in str(caught[0].message)


def test_state_dict_round_trip_and_a_bad_dict_changes_nothing():
    w, opt, s = _setup(pg, init_scale=8.0, growth_interval=5)
    _iteration(pg, w, opt, s, 0)
    state = s.state_dict()
    other = pg.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.state_dict() == state
    before = s.state_dict()
    with pytest.raises(KeyError):
        s.load_state_dict({"scale": 2.0, "growth_factor": 3.0})
    assert s.state_dict() == before and s.get_scale() == 8.0
