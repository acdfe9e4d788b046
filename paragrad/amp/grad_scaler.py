"""GradScaler (torch.amp.GradScaler): loss scaling for float16 training.

The loss is multiplied by a scale before backward, so small float16 gradients don't flush to
zero; `unscale_` divides the gradients by it again and records whether any is inf or NaN;
`step` skips the optimizer step when one was; `update` halves the scale after a skipped step
and doubles it after `growth_interval` clean steps in a row. The same scale sequence as torch's
for the same sequence of overflows. The scale, the growth tracker and the found-inf flags are
tensors on the device. SGD, Adam and AdamW get the flag with the step and skip it on the device
(torch's fused path), so a scaled step reads nothing on the host and pg.jit can capture it
whole; for other optimizers `step` reads the flag on the host, as torch does.
"""
from __future__ import annotations

import warnings
from collections import abc

from .. import dtypes
from ..autograd import no_grad
from ..backends import is_available
from ..ops import full
from ..tensor import Tensor, bump_version

_READY, _UNSCALED, _STEPPED = 0, 1, 2


def _fresh_optimizer_state():
    return {"stage": _READY, "found_inf_per_device": {}}


class GradScaler:
    """Loss scaling for float16 training, as torch.amp.GradScaler: scale(loss) multiplies the loss
    by the current scale before backward; step(optimizer) unscales the gradients (unscale_ may be
    called first, e.g. to clip them), skips the optimizer's step if any gradient is inf or NaN,
    and update() then multiplies the scale by backoff_factor after a skipped step, or by
    growth_factor after growth_interval steps without one. enabled=False (or device "cuda"
    without CUDA, with a warning) makes every method a pass-through."""
    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._enabled and device == "cuda" and not is_available("cuda")[0]:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.")
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._scale = None          # made on the first scale(), on the device of the outputs
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker = None
        self._per_optimizer_states = {}

    def _lazy_init_scale_growth_tracker(self, dev):
        self._scale = full((), self._init_scale, dtype=dtypes.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=dtypes.int32, device=dev)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        assert self._scale is not None, f"Attempted {funcname} but _scale is None.  " + fix
        assert self._growth_tracker is not None, f"Attempted {funcname} but _growth_tracker is None.  " + fix
        return self._scale, self._growth_tracker

    def _optimizer_state(self, optimizer):
        return self._per_optimizer_states.setdefault(id(optimizer), _fresh_optimizer_state())

    def scale(self, outputs):
        """outputs (a tensor, or an iterable of them, nested) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(outputs.device)

        def apply(value):
            if isinstance(value, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(value.device)
                return value * self._scale.to(value.device)
            if isinstance(value, abc.Iterable):
                mapped = map(apply, value)
                return type(value)(mapped) if isinstance(value, (list, tuple)) else mapped
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        """Every gradient times inv_scale, in place; found_inf (one per device) becomes 1 where
        any gradient held an inf or NaN. One multi-tensor launch per device where the backend
        has one, else a few ops per gradient."""
        grads = [p.grad for group in optimizer.param_groups for p in group["params"]
                 if p.grad is not None]
        if not allow_fp16 and any(g.dtype is dtypes.float16 for g in grads):
            raise ValueError("Attempting to unscale FP16 gradients.")
        per_device = {}
        for g in grads:
            per_device.setdefault(str(g.device), []).append(g)
        flags = {}
        with no_grad():
            for key, same_device in per_device.items():
                dev = same_device[0].device
                flag = flags[key] = found_inf.to(dev)
                inv = inv_scale.to(dev)
                fast = same_device[0]._backend.fast("unscale_grads")
                if fast is not None and fast([g._data for g in same_device], flag._data, inv._data):
                    for g in same_device:
                        bump_version(g)
                    continue
                for g in same_device:
                    flag.copy_(flag.maximum((~g.isfinite()).any().to(dtypes.float32)))
                    g.mul_(inv.to(g.dtype))
        return flags

    def unscale_(self, optimizer):
        """Divide optimizer's gradients by the scale, in place (before clipping them, say)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._optimizer_state(optimizer)
        if state["stage"] is _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()      # as torch: 1/scale in float64
        found_inf = full((), 0.0, dtype=dtypes.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(*args, **kwargs) unless the unscaled gradients held an inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._optimizer_state(optimizer)
        if state["stage"] is _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is _READY:
            self.unscale_(optimizer)
        assert len(state["found_inf_per_device"]) > 0, "No inf checks were recorded for this optimizer."
        retval = None
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            # the optimizer skips on the device: nothing here reads the flag
            flags = [f.to(self._scale.device) for f in state["found_inf_per_device"].values()]
            optimizer.found_inf = flags[0] if len(flags) == 1 else sum(flags[1:], flags[0])
            try:
                retval = optimizer.step(*args, **kwargs)
            finally:
                del optimizer.found_inf
        elif not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return retval

    def update(self, new_scale=None):
        """The next iteration's scale: backoff_factor times after an overflow, growth_factor
        times after growth_interval clean steps (or new_scale, a float or a one-element tensor)."""
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        with no_grad():
            if new_scale is not None:
                if isinstance(new_scale, float):
                    scale.fill_(new_scale)
                else:
                    reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                              "torch.FloatTensor with requires_grad=False.")
                    assert new_scale.device.type == self._device, reason
                    assert new_scale.numel() == 1, reason
                    assert new_scale.requires_grad is False, reason
                    scale.copy_(new_scale)
            else:
                found_infs = [f.to(scale.device) for state in self._per_optimizer_states.values()
                              for f in state["found_inf_per_device"].values()]
                assert len(found_infs) > 0, "No inf checks were recorded prior to update."
                found = found_infs[0]
                for f in found_infs[1:]:
                    found = found + f
                self._update_scale(scale, tracker, found)
        self._per_optimizer_states = {}

    def _update_scale(self, scale, tracker, found_inf):
        """torch's _amp_update_scale_, as device ops (no host read): after an overflow the scale
        backs off and the tracker restarts; else the tracker counts, and at growth_interval the
        scale grows (where the grown scale is finite) and the tracker restarts."""
        overflow = found_inf > 0
        counted = tracker + 1
        grow = ~overflow & (counted >= self._growth_interval)
        grown = scale * self._growth_factor
        grown = grown.where(grown.isfinite(), scale)
        new_scale = scale.where(~overflow, scale * self._backoff_factor).where(~grow, grown)
        scale.copy_(new_scale)
        tracker.copy_(counted.where(~(overflow | grow), 0).to(tracker.dtype))

    def _host_value(self, tensor, initial, disabled):
        """A device value as a Python number: `initial` before the first scale(), `disabled`
        when the scaler is off."""
        if not self._enabled:
            return disabled
        return initial if tensor is None else tensor.item()

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        return self._host_value(self._scale, self._init_scale, 1.0)

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        return self._host_value(self._growth_tracker, self._init_growth_tracker, 0)

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval and _growth_tracker ({} when
        disabled), as torch's."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        # every value read and converted before any is set: a bad dict changes nothing
        scale, tracker = float(state_dict["scale"]), int(state_dict["_growth_tracker"])
        factors = (float(state_dict["growth_factor"]), float(state_dict["backoff_factor"]),
                   int(state_dict["growth_interval"]))
        self._init_scale, self._init_growth_tracker = scale, tracker
        self._growth_factor, self._backoff_factor, self._growth_interval = factors
        if self._scale is not None:
            self._scale.fill_(scale)
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(tracker)
