"""Stopping a run whose loss becomes NaN or infinite, without a host read per step.

Each step adds its batch's loss to a device scalar, the epoch's loss sum; once one loss is not
finite, that sum stays non-finite for the rest of the epoch. So each step also counts, on the
device, the steps after which the sum was still finite. The host reads the sum only where the
loop already shows it (progress-bar redraws, the epoch's end); when it is not finite, the count
names the first bad step. The weights are checked once per epoch (a language model: per evaluation)
before they are saved, since the last step's update can break them without its loss showing it
yet.
"""
from __future__ import annotations

import math

from .. import dtypes
from ..ops.creation import zeros


class Diverged(RuntimeError):
    """Training produced a non-finite loss or weights; the message names the step."""


class LossWatch:
    def __init__(self, device):
        self.loss_sum = zeros((), device=device)                       # () batch loss x batch size
        self.finite_steps = zeros((), dtype=dtypes.int64, device=device)  # () steps with a finite sum

    def record(self, loss, batch_size):
        """Inside the training step (capturable: device ops only)."""
        self.loss_sum.add_(loss.detach() * batch_size)
        self.finite_steps.add_(self.loss_sum.isfinite())

    def new_epoch(self):
        self.loss_sum.zero_()
        self.finite_steps.zero_()

    def bad_step(self):
        """(the loss sum, None) while every loss recorded since new_epoch is finite, else (the
        sum, the 1-based index of the first step whose loss was not): host reads."""
        total = float(self.loss_sum)
        return total, None if math.isfinite(total) else int(self.finite_steps) + 1

    def checked_loss(self, seen, epoch, steps_per_epoch, last_checkpoint):
        """The epoch's mean loss over its first `seen` samples (a host read); Diverged, naming
        the first bad step, once it is not finite. `epoch` counts from 0."""
        total, k = self.bad_step()
        if k is None:
            return total / seen
        raise Diverged(f"the loss became {total / seen} at step {epoch * steps_per_epoch + k} (epoch "
                       f"{epoch + 1}, batch {k} of {steps_per_epoch}); training stopped, "
                       f"{kept(last_checkpoint)} (a lower --lr may help)")


def kept(last_checkpoint):
    return (f"the last good checkpoint is {last_checkpoint}" if last_checkpoint
            else "no checkpoint was written")


def weights_finite(model):
    """Whether every floating-point parameter and buffer is finite (one host read)."""
    bad = None
    for t in model.state_dict().values():
        if t.dtype.is_floating_point:
            n = t.detach().isfinite().logical_not().sum()
            bad = n if bad is None else bad + n
    return bad is None or int(bad) == 0
