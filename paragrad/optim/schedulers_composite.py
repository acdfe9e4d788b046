"""Schedulers made of schedulers (SequentialLR, ChainedScheduler) and the metric-driven
ReduceLROnPlateau; exported by lr_scheduler.py."""
from __future__ import annotations

import math
from bisect import bisect_right

from .optimizer import Optimizer
from .scheduler_base import LRScheduler


def _check_schedulers(cls, optimizer, schedulers):
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{cls} at index {i} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{cls} does not support `ReduceLROnPlateau` scheduler as it requires "
                             f"additional kwargs to be specified when calling `step`, but got one at "
                             f"index {i} in the given schedulers sequence.")
        if s.optimizer is not optimizer:
            raise ValueError(f"{cls} expects all schedulers to belong to the same optimizer, but got "
                             f"scheduler {type(s).__name__} at index {i} with another optimizer.")


class _Composite:
    """state_dict of a scheduler made of schedulers: its own fields and each part's state."""

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state):
        state = dict(state)
        parts = state.pop("_schedulers")
        self.__dict__.update(state)
        for s, part in zip(self._schedulers, parts):
            s.load_state_dict(part)


class SequentialLR(_Composite, LRScheduler):
    """schedulers[i] drives the lr between milestones[i-1] and milestones[i] (e.g. a LinearLR
    warm-up, then a CosineAnnealingLR)."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler, but got no scheduler.")
        _check_schedulers("SequentialLR", optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"Sequential Schedulers expects number of schedulers provided to be one "
                             f"more than the number of milestone points, but got number of "
                             f"schedulers {len(schedulers)} and the number of milestones to be "
                             f"equal to {len(milestones)}")
        self._schedulers, self._milestones = list(schedulers), list(milestones)
        self.last_epoch, self.optimizer = last_epoch + 1, optimizer
        for g in optimizer.param_groups:    # undo the constructors' first steps
            g["lr"] = g["initial_lr"]
        for s in self._schedulers:
            s.last_epoch -= 1
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._step_count, first._is_initial = 0, True
        first.step()
        first._is_initial = False
        self._last_lr = first.get_last_lr()

    def step(self):
        self._refuse_in_capture()
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        s = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            s._update_lr(0)         # a scheduler taking over starts from its epoch 0
        else:
            s.step()
        self._last_lr = s.get_last_lr()


class ChainedScheduler(_Composite, LRScheduler):
    """Every scheduler steps, in order, each step."""

    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) < 1:
            raise ValueError("ChainedScheduler expects at least one scheduler to be chained, but got "
                             "no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers("ChainedScheduler", optimizer, schedulers)
        self._schedulers, self.optimizer = list(schedulers), optimizer
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def step(self):
        for s in self._schedulers:
            s.step()
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]


class ReduceLROnPlateau(LRScheduler):
    """lr *= factor when the metric passed to step(metric) has not improved for `patience`
    steps (then waits `cooldown` steps); never below min_lr."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ValueError(f"expected {n} min_lrs, got {len(min_lr)}")
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * n
        self.optimizer, self.factor, self.patience, self.cooldown, self.eps = optimizer, factor, patience, cooldown, eps
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.last_epoch = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]
        self.best, self.cooldown_counter, self.num_bad_epochs = self.mode_worse, 0, 0

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def _is_better(self, a, best):
        if self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold) if self.mode == "min" else a > best * (1.0 + self.threshold)
        return a < best - self.threshold if self.mode == "min" else a > best + self.threshold

    def step(self, metrics, epoch=None):
        self._refuse_in_capture()
        current = float(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            if len(self.min_lrs) != len(self.optimizer.param_groups):
                if self.default_min_lr is None:
                    raise RuntimeError("ReduceLROnPlateau: the optimizer has a different number of "
                                       "param groups than min_lr lists; update `min_lrs`")
                self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
            for g, floor in zip(self.optimizer.param_groups, self.min_lrs):
                old = float(g["lr"])
                new = max(old * self.factor, floor)
                if old - new > self.eps:
                    g["lr"] = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]
