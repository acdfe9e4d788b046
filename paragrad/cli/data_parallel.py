"""Data-parallel `paragrad train`: the same command under an MPI launcher trains on every rank.

    mpirun -n 4 paragrad train mnist                       DistributedDataParallel
    paragrad launch -n 4 -- paragrad train mnist --sync-every 10      LocalSGD
    srun -n 4 paragrad train shakespeare --diloco          DiLoCo, H = --sync-every (default 50)

A process started by a launcher of more than one rank (launcher_world_size()) joins the process
group: backend mpi on the cpu, nccl on cuda. --batch-size stays the global batch: each rank
trains on batch_size / world_size samples a step. Image datasets are sharded with
DistributedSampler (reshuffled each epoch through set_epoch); language models draw their windows
from a generator seeded per rank. Every rank builds the model from the same seed, and each
scheme starts from rank 0's weights anyway (its construction broadcasts them).

Schemes: DistributedDataParallel by default (gradients averaged every step); --sync-every N
LocalSGD (parameters averaged every N steps); --diloco DiLoCo (an outer Nesterov SGD step on
the averaged parameter change every --sync-every steps, 50 unless given). LocalSGD and DiLoCo
also synchronize before each evaluation and checkpoint (the end of an image epoch, a language
model's --eval-interval), so that what is evaluated and saved is every rank's common model;
in a single process both run on a process group of one rank (LocalSGD then averages nothing;
DiLoCo's outer step still acts, as a lookahead optimizer would).

Only rank 0 prints, writes metrics.jsonl, the plot and the checkpoints. Evaluation: image
runs split the test set over the ranks and add up the hits (all_reduce); language models are
evaluated by rank 0 alone, on the same batches as a single-process run. The checkpoint
records the world size and the scheme; --resume restores every rank from it (a different world
size or scheme is refused), the outer DiLoCo momentum and the wrappers' step count included.
The inner optimizer state of LocalSGD and DiLoCo, which differs between ranks, is rank 0's
in the checkpoint: a resumed run continues from it on every rank.
"""
from __future__ import annotations

import os
import sys
from copy import copy

from .. import distributed as dist
from .arguments import UsageError, positive_int
from .run_config import contradiction, read_train_state

DILOCO_SYNC_EVERY = 50      # DiLoCo's H when --diloco comes without --sync-every
RANK_SEED_STRIDE = 1000     # rank r draws its windows and dropout from seed + r * stride
SCHEME_FLAGS = ("sync_every", "diloco")


def add_flags(t):
    g = t.add_argument_group(
        "data parallel (under mpirun, srun or paragrad launch)",
        "launched as N ranks, train data-parallel: --batch-size is the global batch, split over "
        "the ranks; gradients are averaged every step (DistributedDataParallel) unless one of "
        "these picks another scheme")
    g.add_argument("--sync-every", type=positive_int, default=None, metavar="N",
                   help="LocalSGD: each rank steps on its own, the parameters are averaged every N "
                        "steps (with --diloco: DiLoCo's H, default 50)")
    g.add_argument("--zero", action="store_true", default=None,
                   help="ZeRO-1 (with DistributedDataParallel): each rank keeps the optimizer state of "
                        "its share of the parameters and updates that share (ZeroRedundancyOptimizer); "
                        "the updates and checkpoints are the unsharded optimizer's")
    g.add_argument("--diloco", action="store_true", default=None,
                   help="DiLoCo: every --sync-every steps an outer SGD step (lr 0.7, Nesterov "
                        "momentum 0.9) on the ranks' averaged parameter change")


class Ranks:
    """This process's place in a data-parallel run (a single process: rank 0 of 1, no group)."""

    def __init__(self, rank=0, world=1, grouped=False):
        self.rank, self.world, self.grouped = rank, world, grouped
        self.main = rank == 0
        self.scheme = None          # the LocalSGD or DiLoCo wrapper, once wrap() made one
        self._stdout = self._devnull = None

    # ---- joining and leaving -------------------------------------------------------------------
    @classmethod
    def join(cls, args):
        """Join the process group when launched as several ranks, or for --sync-every/--diloco
        in a single process; the other ranks' stdout goes to devnull (rank 0 reports)."""
        world = dist.launcher_world_size()
        if world == 1 and args.sync_every is None and not args.diloco and not _resumes_a_scheme(args):
            return cls()
        backend = "nccl" if args.device.startswith("cuda") else "mpi"
        index = args.device.partition(":")[2]
        if backend == "nccl" and index and world > 1:
            raise UsageError(f"--device {args.device}: on {world} ranks each rank trains on the GPU "
                             f"of its local rank (LOCAL_RANK); pass --device cuda")
        try:
            dist.init_process_group(backend, device_id=int(index) if index else None)
        except (RuntimeError, ValueError) as e:
            raise UsageError(f"data-parallel training on {world} rank(s) could not start the {backend} "
                             f"process group: {e}") from None
        if backend == "nccl":       # the GPU the nccl backend chose for this rank
            args.device = f"cuda:{dist.group.WORLD.device_index}"
        ranks = cls(dist.get_rank(), dist.get_world_size(), grouped=True)
        if not ranks.main:
            ranks._devnull = open(os.devnull, "w")
            ranks._stdout, sys.stdout = sys.stdout, ranks._devnull
        return ranks

    def close(self):
        if self._stdout is not None:
            sys.stdout, self._stdout = self._stdout, None
        if self._devnull is not None:
            self._devnull.close()
            self._devnull = None
        if self.grouped and dist.is_initialized():
            dist.destroy_process_group()

    # ---- the run's flags -----------------------------------------------------------------------
    def resolve(self, args, state):
        """Fill --sync-every/--diloco from the resumed run; refuse a resume on another world
        size or with another scheme, and a global batch the ranks can't share."""
        if state is not None:
            run = state["extra"].get("run", {})
            kept = {"sync_every": run.get("sync_every"), "diloco": run.get("diloco") or None}
            for name in SCHEME_FLAGS:
                given = getattr(args, name)
                if given is not None and given != kept[name]:
                    raise contradiction(name, given, kept[name] if kept[name] is not None else "off",
                                        args.resume)
                setattr(args, name, kept[name])
            trained_on = run.get("world_size", 1)
            if trained_on != self.world:
                raise UsageError(f"--resume {args.resume}: the run trained on {trained_on} process(es), "
                                 f"this is {self.world}; launch it with -n {trained_on} to continue it")
        if args.diloco and args.sync_every is None:
            args.sync_every = DILOCO_SYNC_EVERY
        if args.zero and (args.sync_every or self.world == 1):
            raise UsageError("--zero shards the optimizer state over the ranks of a DistributedDataParallel "
                             "run: " + ("not with --sync-every or --diloco, whose ranks step on their own"
                                        if args.sync_every else "launch several ranks (one process has "
                                        "nothing to shard it over)"))
        if args.batch_size % self.world:
            raise UsageError(f"--batch-size {args.batch_size} is the global batch and must divide "
                             f"evenly over the {self.world} ranks (world size {self.world}): pass a "
                             f"multiple of {self.world}")

    def record(self, run, args):
        """The run record (run_config.run_record's, or lm_run_record's) with the scheme."""
        return {**run, "world_size": self.world, "sync_every": args.sync_every,
                "diloco": bool(args.diloco)}

    def describe(self, args):
        """What the 'training ...' line adds."""
        if not self.grouped:
            return ""
        scheme = ("DiLoCo" if args.diloco else "LocalSGD") + f" every {args.sync_every} steps" \
            if args.sync_every else "DistributedDataParallel" + (", ZeRO-1 optimizer state" if args.zero else "")
        return f", {self.world} rank(s) of batch {args.batch_size // self.world}, {scheme}"

    def per_rank(self, args):
        """A copy of args whose batch_size is this rank's share."""
        mine = copy(args)
        mine.batch_size = args.batch_size // self.world
        return mine

    def seed(self, seed):
        return seed + RANK_SEED_STRIDE * self.rank

    # ---- the model and optimizer ---------------------------------------------------------------
    def wrap(self, model, opt, args):
        """The module the training step calls: DistributedDataParallel(model) for the default
        scheme on several ranks, else model itself (LocalSGD and DiLoCo wrap the optimizer:
        self.scheme, which after_step() and synchronize() drive)."""
        if args.sync_every:
            from ..distributed import DiLoCo, LocalSGD
            self.scheme = (DiLoCo if args.diloco else LocalSGD)(model, opt, args.sync_every)
            return model
        if self.world > 1:
            from ..nn.parallel import DistributedDataParallel
            return DistributedDataParallel(model)
        return model

    def after_step(self):
        if self.scheme is not None:
            self.scheme.count_step()

    def synchronize(self):
        """Before an evaluation or a checkpoint: every rank holds the common model."""
        if self.scheme is not None:
            self.scheme.synchronize()

    def optimizer(self, opt, args):
        """The optimizer the run steps: opt, or with --zero a ZeroRedundancyOptimizer of opt's
        class, groups and settings."""
        if not args.zero:
            return opt
        import inspect

        from ..distributed.optim import ZeroRedundancyOptimizer
        takes = inspect.signature(type(opt)).parameters     # (defaults may hold more: AdamW's decoupling)
        return ZeroRedundancyOptimizer([dict(g) for g in opt.param_groups], type(opt),
                                       **{k: v for k, v in opt.defaults.items() if k in takes})

    def before_checkpoint(self, opt):
        """On every rank, before rank 0 saves a checkpoint: a sharded optimizer's state gathered there."""
        if hasattr(opt, "consolidate_state_dict"):
            opt.consolidate_state_dict(to=0)

    def checkpointed(self, opt):
        """What the checkpoint saves and restores as 'the optimizer': DiLoCo's inner and outer
        optimizers together, else opt."""
        from ..distributed import DiLoCo
        if isinstance(self.scheme, DiLoCo):
            return JoinedOptimizers(opt, self.scheme.outer_optimizer)
        return opt

    def scheme_state(self):
        """The wrapper's step count, for the checkpoint's extra."""
        return {} if self.scheme is None else {"scheme_step_count": self.scheme.step_count}

    def restore(self, extra, generators, step):
        """After checkpoint.load on every rank: the wrapper's count and DiLoCo's global
        parameters (the saved weights: checkpoints follow a synchronization); ranks other than
        0 re-seed their generators, which were restored to rank 0's states."""
        from ..autograd import no_grad
        from ..distributed import DiLoCo
        if self.scheme is not None:
            self.scheme.step_count = int(extra.get("scheme_step_count", 0))
            if isinstance(self.scheme, DiLoCo):
                with no_grad():
                    for g, p in zip(self.scheme.global_params, self.scheme.params):
                        g.copy_(p)
        if not self.main:
            from ..random import manual_seed
            manual_seed(self.seed(step))
            for i, g in enumerate(generators):
                g.manual_seed(self.seed(step) + i + 1)

    # ---- collectives for the loop --------------------------------------------------------------
    def barrier(self):
        if self.world > 1:
            dist.barrier()

    def sum_(self, t):
        if self.world > 1:
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t

    def accuracy(self, evaluate, model, test_ds, device, precision, tensors):
        """train.evaluate's accuracy, each rank testing its slice of the test set."""
        if self.world == 1:
            return evaluate(model, test_ds, device, precision, tensors=tensors)
        from ..ops.creation import tensor
        images, labels = tensors
        n = len(labels)
        lo, hi = n * self.rank // self.world, n * (self.rank + 1) // self.world
        # evaluate divides its hits by len(dataset): a range of the slice's length
        hits = round(evaluate(model, range(hi - lo), device, precision,
                              tensors=(images[lo:hi], labels[lo:hi])) * (hi - lo))
        return int(self.sum_(tensor([hits], device=device)).item()) / n

    def progress_stream(self):
        """Where the progress bar draws: stderr (the default) on rank 0, nowhere elsewhere."""
        return None if self.main else self._devnull


def _resumes_a_scheme(args):
    """Whether --resume continues a LocalSGD or DiLoCo run (its flags come from the checkpoint)."""
    if not args.resume:
        return False
    return bool(read_train_state(args.resume, "--resume")["extra"].get("run", {}).get("sync_every"))


class JoinedOptimizers:
    """Two optimizers seen as one by checkpoint.save/load: the first's groups and state, then
    the second's with parameter indices shifted past the first's."""

    def __init__(self, first, second):
        self.first, self.second = first, second

    def _count(self):
        return sum(len(g["params"]) for g in self.first.param_groups)

    def state_dict(self):
        a, b, n = self.first.state_dict(), self.second.state_dict(), self._count()
        groups = a["param_groups"] + [{**g, "params": [i + n for i in g["params"]]}
                                      for g in b["param_groups"]]
        return {"state": {**a["state"], **{i + n: s for i, s in b["state"].items()}},
                "param_groups": groups}

    def load_state_dict(self, state_dict):
        k, n = len(self.first.param_groups), self._count()
        groups, state = state_dict["param_groups"], state_dict["state"]
        if len(groups) != k + len(self.second.param_groups):
            raise ValueError(f"the checkpoint's optimizer has {len(groups)} parameter groups; "
                             f"DiLoCo's inner and outer optimizers have "
                             f"{k + len(self.second.param_groups)}")
        self.first.load_state_dict({"state": {i: s for i, s in state.items() if i < n},
                                    "param_groups": groups[:k]})
        self.second.load_state_dict({"state": {i - n: s for i, s in state.items() if i >= n},
                                     "param_groups": [{**g, "params": [i - n for i in g["params"]]}
                                                      for g in groups[k:]]})
