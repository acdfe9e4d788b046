"""DiLoCo (Douillard et al., "DiLoCo: Distributed Low-Communication Training of Language
Models", 2023): LocalSGD whose synchronization is an optimizer step of its own.

Every rank runs `sync_every` (H) inner steps on its local copy; then, with the global
parameters θ kept from the last synchronization,
    Δ      = mean over ranks of (θ - θ_local)         the outer "pseudo-gradient"
    θ      = outer SGD step on θ with gradient Δ      (lr 0.7, Nesterov momentum 0.9)
    θ_local := θ
The outer step is paragrad.optim.SGD itself (torch's rule: buf = momentum*buf + Δ; with
Nesterov update = Δ + momentum*buf, else buf; θ -= lr*update). With outer_lr=1 and no momentum
it is LocalSGD's plain average. The paper trains with inner AdamW and H=500: as good as
synchronous training with 500 times less communication.

Buffers are averaged at each synchronization as LocalSGD does (floating-point ones only).
"""
from __future__ import annotations

from ..autograd import no_grad
from ..optim.sgd import SGD
from .coalesced import all_reduce_coalesced
from .local_sgd import LocalSGD


class DiLoCo(LocalSGD):
    """Wraps the `inner_optimizer` of `model`: step() steps it, and every `sync_every` steps
    takes the outer step above. state_dict covers the inner optimizer, the outer one (momentum
    buffers), the global parameters and the step count."""

    def __init__(self, model, inner_optimizer, sync_every=500, outer_lr=0.7, outer_momentum=0.9,
                 nesterov=True):
        super().__init__(model, inner_optimizer, sync_every)
        with no_grad():     # θ: leaves of their own, updated by the outer optimizer only
            self.global_params = [p.detach().clone().requires_grad_(True) for p in self.params]
        self.outer_optimizer = SGD(self.global_params, lr=outer_lr, momentum=outer_momentum,
                                   nesterov=nesterov)

    @property
    def inner_optimizer(self):
        return self.optimizer

    def _synchronize(self):
        with no_grad():
            deltas = [g.detach() - p.detach() for g, p in zip(self.global_params, self.params)]
            self.bytes_communicated += all_reduce_coalesced(deltas + self.buffers)   # Δ, averaged
            for g, d in zip(self.global_params, deltas):
                g.grad = d
            self.outer_optimizer.step()
            for p, g in zip(self.params, self.global_params):
                p.copy_(g)              # θ_local := θ
                g.grad = None

    def state_dict(self):
        """LocalSGD's entries ('optimizer' is the inner one), plus 'outer_optimizer' and
        'global_params' (detached copies, in the order of the model's parameters)."""
        state = super().state_dict()
        state["outer_optimizer"] = self.outer_optimizer.state_dict()
        state["global_params"] = [g.detach().clone() for g in self.global_params]
        return state

    def load_state_dict(self, state_dict):
        self._check_keys(state_dict, ("outer_optimizer", "global_params"))
        saved = state_dict["global_params"]
        shapes = [tuple(g.shape) for g in self.global_params]
        if [tuple(t.shape) for t in saved] != shapes:
            raise ValueError(f"DiLoCo.load_state_dict: the checkpoint's global parameters have shapes "
                             f"{[tuple(t.shape) for t in saved]}, the model's {shapes}")
        super().load_state_dict(state_dict)
        self.outer_optimizer.load_state_dict(state_dict["outer_optimizer"])
        with no_grad():
            for g, t in zip(self.global_params, saved):
                g.copy_(t)

    def __repr__(self):
        return (f"DiLoCo(sync_every={self.sync_every}, outer_optimizer={self.outer_optimizer!r}, "
                f"inner_optimizer={self.optimizer!r})")
