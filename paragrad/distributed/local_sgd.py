"""LocalSGD: every rank trains its own copy of the model on its own data with its own
optimizer, and every `sync_every` optimizer steps the ranks replace their parameters by the
average across ranks (Stich, "Local SGD converges fast and communicates little", 2019; torch's
PostLocalSGDOptimizer with a PeriodicModelAverager). Communication drops by sync_every
against DistributedDataParallel, which averages gradients every step; with sync_every=1 and
plain SGD the two train the same parameters.

Buffers: floating-point buffers (BatchNorm's running statistics) are averaged with the
parameters; integer buffers (num_batches_tracked) are left alone, since every rank counts the
same steps. Optimizer state (momentum, Adam's moments) stays local, as in torch.

At construction every rank takes rank 0's parameters and buffers, so the local copies start
equal. The synchronization is host-side Python counting steps: call step() eagerly, not inside
a pg.jit-captured function (a captured step would replay the choice made at capture).
"""
from __future__ import annotations

from .coalesced import all_reduce_coalesced, broadcast_coalesced
from .initialization import is_initialized


class LocalSGD:
    """Wraps `optimizer` (over `model`'s parameters): step() steps it, and every `sync_every`
    steps averages the parameters and floating-point buffers across ranks. zero_grad,
    param_groups, state and state_dict/load_state_dict are the optimizer's, plus the step count.

    `bytes_per_step` is the payload one optimizer step sends on average (what one
    synchronization all-reduces, over sync_every); `bytes_communicated` counts everything
    sent so far, construction included."""

    def __init__(self, model, optimizer, sync_every=1):
        name = type(self).__name__
        if not is_initialized():
            raise ValueError(f"{name}: Default process group has not been initialized, please "
                               f"make sure to call init_process_group.")
        if isinstance(sync_every, bool) or not isinstance(sync_every, int) or sync_every < 1:
            raise ValueError(f"{name}: sync_every must be a positive int, got {sync_every!r}")
        self.model, self.optimizer, self.sync_every = model, optimizer, sync_every
        self.params = [p for p in model.parameters() if p.requires_grad]
        if not self.params:
            raise ValueError(f"{name}: the model has no parameter that requires grad")
        self.buffers = [b for b in model.buffers() if b.dtype.is_floating_point]
        self.step_count = 0         # optimizer steps taken through this wrapper
        self.bytes_communicated = broadcast_coalesced(list(model.parameters()) + list(model.buffers()))

    # ---- the optimizer's face ------------------------------------------------------------------
    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def state(self):
        return self.optimizer.state

    def zero_grad(self, set_to_none=True):
        self.optimizer.zero_grad(set_to_none)

    def step(self, closure=None):
        loss = self.optimizer.step(closure)
        self.step_count += 1
        if self.step_count % self.sync_every == 0:
            self._synchronize()
        return loss

    def _synchronize(self):
        self.bytes_communicated += all_reduce_coalesced(self.params + self.buffers)

    @property
    def sync_bytes(self):
        """The payload of one synchronization: the parameters and floating-point buffers."""
        return sum(t.numel() * t.dtype.itemsize for t in self.params + self.buffers)

    @property
    def bytes_per_step(self):
        return self.sync_bytes / self.sync_every

    # ---- checkpoints ---------------------------------------------------------------------------
    def state_dict(self):
        """{'optimizer': the optimizer's state_dict, 'step_count', 'sync_every'}."""
        return {"optimizer": self.optimizer.state_dict(), "step_count": self.step_count,
                "sync_every": self.sync_every}

    def load_state_dict(self, state_dict):
        """Restore the optimizer and the step count (the next synchronization falls where it
        would have); a checkpoint of another sync_every is refused."""
        self._check_keys(state_dict, ("optimizer", "step_count", "sync_every"))
        if state_dict["sync_every"] != self.sync_every:
            raise ValueError(f"{type(self).__name__}.load_state_dict: the checkpoint was written with "
                             f"sync_every={state_dict['sync_every']}, this wrapper has "
                             f"sync_every={self.sync_every}")
        self.optimizer.load_state_dict(state_dict["optimizer"])
        self.step_count = int(state_dict["step_count"])

    def _check_keys(self, state_dict, keys):
        missing = [k for k in keys if k not in state_dict]
        if missing:
            raise KeyError(f"{type(self).__name__}.load_state_dict: the state dict lacks "
                           f"{', '.join(missing)} (it has {', '.join(map(str, state_dict))})")

    def __repr__(self):
        return f"{type(self).__name__}(sync_every={self.sync_every}, optimizer={self.optimizer!r})"
