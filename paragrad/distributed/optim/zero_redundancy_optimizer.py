"""ZeroRedundancyOptimizer, torch's name and semantics (ZeRO stage 1): the optimizer state is
sharded over the ranks. Each parameter belongs to one rank (parameters dealt out largest first,
each to the rank holding the fewest elements so far, as torch partitions them); a rank's local
optimizer (`optimizer_class` over its parameters only) keeps the state of those alone and
updates them, then every rank's updated parameters are broadcast from their owner, one
coalesced broadcast per rank and dtype. Gradients must already be the same on every rank (the
data-parallel average: DistributedDataParallel, or an all-reduce), as for the unsharded
optimizer, whose results this one equals.

State dicts are the unsharded optimizer's: consolidate_state_dict(to) gathers every rank's
state onto rank `to` (every rank calls it), whose state_dict() then returns what the
unsharded optimizer's would; load_state_dict takes that full dict on every rank and keeps each
rank's share.
"""
from __future__ import annotations

import pickle

import numpy as np

from ... import capture
from ...ops.creation import tensor
from ...optim.optimizer import Optimizer
from ...tensor import Tensor
from ..coalesced import broadcast_coalesced
from ..collectives import broadcast
from ..initialization import get_rank, get_world_size
from ..process_group import default_group


class ZeroRedundancyOptimizer(Optimizer):
    """ZeroRedundancyOptimizer(params, optimizer_class, **defaults): `optimizer_class(params of
    this rank, **defaults)` runs the update; `.optim` is that local optimizer, `param_groups`
    the whole model's groups (their hyperparameters, e.g. a scheduler's lr, reach the local
    optimizer at each step). parameters_as_bucket_view is accepted either way: the updated
    parameters always travel in one flat buffer per rank and dtype. overlap_with_ddp (updates
    run from DDP's communication hook) is refused, and so is a process group other than the
    default one."""

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view=False,
                 overlap_with_ddp=False, **defaults):
        if overlap_with_ddp:
            raise RuntimeError("ZeroRedundancyOptimizer: overlap_with_ddp=True (updates run from "
                               "DistributedDataParallel's communication hook) is not supported by paragrad")
        if process_group is not None and process_group is not default_group():
            raise RuntimeError("ZeroRedundancyOptimizer: only the default process group is supported")
        self._rank, self._world = get_rank(), get_world_size()
        self.optim = None
        self._sizes = [0] * self._world         # elements dealt to each rank so far
        self._shares = [[] for _ in range(self._world)]    # each rank's parameters
        self._consolidated = None               # the gathered state, on the rank consolidated to
        super().__init__(params, defaults)
        self.optim = optimizer_class([self._deal(g) for g in self.param_groups], **defaults)
        self._sync(self.optim.param_groups, self.param_groups)     # (the class's own defaults too)
        self.state = self.optim.state
        capture.track(self)     # (a pg.jit replay runs no step(): the lr reaches the device here)

    def add_param_group(self, param_group):
        """Add a group on every rank (call it on all of them): its parameters are dealt out
        after the earlier groups', whose shards stay where they are."""
        super().add_param_group(param_group)
        if self.optim is not None:
            self.optim.add_param_group(self._deal(self.param_groups[-1]))
            self._sync(self.optim.param_groups[-1:], self.param_groups[-1:])

    def _deal(self, group):
        """group's parameters dealt to the ranks -> this rank's part, with the group's settings."""
        mine = []
        for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
            rank = self._sizes.index(min(self._sizes))
            self._sizes[rank] += p.numel()
            self._shares[rank].append(p)
            if rank == self._rank:
                mine.append(p)
        return {**{k: v for k, v in group.items() if k != "params"}, "params": mine}

    @staticmethod
    def _sync(source_groups, target_groups):
        for source, target in zip(source_groups, target_groups):
            target.update({k: v for k, v in source.items() if k != "params"})

    def sync_device_state(self):
        """Before a pg.jit capture or replay: the groups' settings (a scheduler's lr) handed to
        the local optimizer, which writes its learning rates into their device buffers."""
        self._sync(self.param_groups, self.optim.param_groups)
        self.optim.sync_device_state()

    def step(self, closure=None):
        """The local optimizer's step on this rank's parameters, then every parameter
        broadcast from its owner. -> the closure's loss, if one was given."""
        self._sync(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(closure)
        self._sync(self.optim.param_groups, self.param_groups)
        for rank, params in enumerate(self._shares):
            if params:
                broadcast_coalesced(params, src=rank)
        return loss

    # ---- state dicts -----------------------------------------------------------------------
    def consolidate_state_dict(self, to=0):
        """Gather every rank's optimizer state onto rank `to` (a collective: every rank calls
        it), for state_dict() there."""
        index = {id(p): i for i, p in enumerate(p for g in self.param_groups for p in g["params"])}
        mine = {index[id(p)]: {k: v.detach().cpu() if isinstance(v, Tensor) else v for k, v in st.items()}
                for p, st in self.optim.state.items()}
        device = self.param_groups[0]["params"][0].device
        gathered = {}
        for rank in range(self._world):
            part = _broadcast_object(mine if rank == self._rank else None, rank, device)
            if self._rank == to:
                gathered.update(part)
        self._consolidated = gathered if self._rank == to else None

    def state_dict(self):
        """The unsharded optimizer's state dict, on the rank consolidate_state_dict(to) named."""
        if self._consolidated is None:
            raise RuntimeError(f"ZeroRedundancyOptimizer.state_dict: the optimizer state is not consolidated on "
                               f"rank {self._rank}; call consolidate_state_dict(to={self._rank}) on every rank first")
        full = super().state_dict()         # (the groups; this rank's own state is replaced below)
        params = [p for g in self.param_groups for p in g["params"]]
        full["state"] = {i: {k: v.to(params[i].device) if isinstance(v, Tensor) and k not in self._scalar_state
                             else v for k, v in st.items()}
                         for i, st in sorted(self._consolidated.items())}
        return full

    def load_state_dict(self, state_dict):
        """Load an unsharded optimizer's state dict (what state_dict() returns), on every rank:
        each keeps the state of its own parameters. Checked whole (Optimizer.load_state_dict)
        before anything changes."""
        Optimizer.load_state_dict(self, state_dict)     # the checks, and the groups' settings
        local = {id(p) for g in self.optim.param_groups for p in g["params"]}
        self.optim.state = {p: st for p, st in self.state.items() if id(p) in local}
        self._sync(self.param_groups, self.optim.param_groups)
        self.state = self.optim.state
        self._consolidated = None


def _broadcast_object(obj, src, device):
    """obj (on rank src) pickled and broadcast to every rank: -> obj, everywhere."""
    mine = get_rank() == src
    data = pickle.dumps(obj) if mine else b""
    size = tensor([len(data)], device=device)
    broadcast(size, src)
    buf = tensor(np.frombuffer(data, np.uint8) if mine else np.zeros(int(size.item()), np.uint8), device=device)
    broadcast(buf, src)
    return obj if mine else pickle.loads(buf.cpu().numpy().tobytes())
