"""LRScheduler: what every learning-rate schedule shares (PyTorch's base class): the initial
lrs, the step counter, step() with PyTorch's deprecated step(epoch) closed forms, state_dict.
The schedules themselves are in lr_scheduler.py (the module users import)."""
from __future__ import annotations

from .. import capture
from .optimizer import Optimizer


class LRScheduler:
    """The base of the learning-rate schedulers, as torch.optim.lr_scheduler.LRScheduler: it
    sets each param group's initial_lr (or, resuming with last_epoch >= 0, requires it), and
    step() advances last_epoch and writes get_lr()'s values into the optimizer's param groups
    (get_last_lr() returns them). A subclass implements get_lr(); state_dict() / load_state_dict()
    save everything but the optimizer. Call optimizer.step() before scheduler.step()."""
    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for g in optimizer.param_groups:
                g.setdefault("initial_lr", g["lr"])
        else:
            for i, g in enumerate(optimizer.param_groups):
                if "initial_lr" not in g:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when "
                                   f"resuming a scheduler with last_epoch >= 0 (load the optimizer's "
                                   f"state_dict first)")
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True         # the step made by the constructor
        self.step()
        self._is_initial = False

    def get_lr(self):
        raise NotImplementedError(f"{type(self).__name__} must implement get_lr()")

    def get_last_lr(self):
        return self._last_lr

    def _refuse_in_capture(self):
        if capture.active():
            raise RuntimeError(
                f"{type(self).__name__}.step() inside a function that pg.jit is capturing "
                f"({capture.active()}) would run only once, at capture. Call it outside the jitted "
                f"function: the learning rate lives on the device, so changing it needs no re-capture.")

    def step(self, epoch=None):
        self._refuse_in_capture()
        self._step_count += 1
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:       # PyTorch's deprecated step(epoch): the closed form where there is one
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        for g, lr in zip(self.optimizer.param_groups, values):
            g["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state):
        self.__dict__.update(state)
