"""DistributedDataParallel (torch.nn.parallel.DistributedDataParallel): data parallel training,
one process per rank, each running the whole model on its share of the batch.

At construction rank 0's parameters and buffers are broadcast, so every rank starts equal.
Each forward (broadcast_buffers=True) first broadcasts rank 0's buffers, BatchNorm statistics
for instance; each backward averages the gradients across ranks, bucket by bucket while backward
runs (reducer.py). With every rank stepping the same optimizer on the same averaged gradients,
the parameters stay equal, and N ranks on batches of B train as one process on the N*B batch.

Where paragrad differs from torch: buckets keep the registration order (torch rebuilds them
after the first iteration in the order gradients arrived, and makes its first bucket 1 MiB);
.grad tensors are separate from the bucket buffers (torch's gradient_as_bucket_view=False);
only single-device modules, and the default process group.
"""
from __future__ import annotations

from contextlib import contextmanager

from ... import distributed as dist
from ...autograd import is_grad_enabled
from ...backends import as_device
from ...distributed.coalesced import broadcast_coalesced
from ...dtypes import int64
from ...tensor import Tensor
from ..module import Module
from .reducer import Reducer


class DistributedDataParallel(Module):
    """Wrap `module` (already on its device) for data parallel training. `device_ids`: None,
    or the one device of a CUDA module, where inputs are moved; `bucket_cap_mb`: the size of a
    gradient bucket; `broadcast_buffers`: rank 0's buffers before each forward;
    `find_unused_parameters`: allow parameters that get no gradient in a backward (they count
    as zero on that rank; a parameter no rank used keeps its .grad, as torch).

    `bytes_per_step` is what one synchronized iteration hands to the collectives (gradients,
    and the buffers broadcast before its forward); `bytes_communicated` counts everything so
    far, construction included. Both count this rank's payload bytes, as
    paragrad.distributed.bytes_communicated() does."""

    def __init__(self, module, device_ids=None, output_device=None, broadcast_buffers=True,
                 bucket_cap_mb=25, find_unused_parameters=False):
        super().__init__()
        if not dist.is_initialized():
            raise ValueError("DistributedDataParallel: Default process group has not been "
                             "initialized, please make sure to call init_process_group.")
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: expected a paragrad.nn.Module, got "
                            f"{type(module).__name__}")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        if bucket_cap_mb is None:
            bucket_cap_mb = 25
        if not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.module = module
        self.device = _single_device(module, device_ids, output_device)
        self.device_ids = None if device_ids is None else [self.device.index]
        self.output_device = None if device_ids is None else self.device.index
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.bucket_cap_mb = bucket_cap_mb
        self.require_backward_grad_sync = True      # False inside no_sync()
        # every rank checks it wraps the same parameters, then starts from rank 0's state (all
        # of it: also frozen parameters). _own_bytes: what the wrapper sends itself, at
        # construction and before each forward; the reducer counts the gradients.
        self._own_bytes = _check_same_parameters(module)
        self._own_bytes += broadcast_coalesced(list(module.parameters()) + list(module.buffers()), src=0)
        self.reducer = Reducer(named, int(bucket_cap_mb * 1024 * 1024), find_unused_parameters)

    @property
    def bytes_communicated(self):
        return self._own_bytes + self.reducer.bytes_communicated

    @property
    def bytes_per_step(self):
        """This rank's payload in one synchronized iteration: every gradient, plus, on rank 0
        (a broadcast counts on its source), the buffers."""
        buffers = 0
        if self.broadcast_buffers and dist.get_rank() == 0:
            buffers = sum(b.numel() * b.dtype.itemsize for b in self.module.buffers())
        return self.reducer.bytes_per_step + buffers

    def forward(self, *inputs, **kwargs):
        self.reducer.check_previous_reduction()
        sync = is_grad_enabled() and self.require_backward_grad_sync
        if sync and self.broadcast_buffers:
            buffers = list(self.module.buffers())
            if buffers:
                self._own_bytes += broadcast_coalesced(buffers, src=0)
        if self.device_ids is not None:
            inputs, kwargs = _to_device((inputs, kwargs), self.device)
        out = self.module(*inputs, **kwargs)
        if sync:
            self.reducer.prepare_for_backward(_tensors(out))
        else:
            self.reducer.armed = False
        return out

    @contextmanager
    def no_sync(self):
        """Inside, forward and backward accumulate gradients locally, without communication;
        the first synchronized backward after it averages the accumulated sums. The forward
        must run inside too: whether a backward synchronizes is decided by its forward."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def extra_repr(self):
        return (f"bucket_cap_mb={self.bucket_cap_mb}, broadcast_buffers={self.broadcast_buffers}, "
                f"find_unused_parameters={self.find_unused_parameters}")


def _single_device(module, device_ids, output_device):
    """The one device of the module's parameters, checked against device_ids as torch does."""
    devices = {p.device for p in module.parameters()}
    if len(devices) != 1:
        raise ValueError(f"DistributedDataParallel's input module must be on a single device, "
                         f"got parameters on {sorted(str(d) for d in devices)}")
    (device,) = devices
    if device_ids is None:
        return device
    ids = list(device_ids)
    wanted = [as_device(i if not isinstance(i, int) else f"cuda:{i}") for i in ids]
    if device.type != "cuda" or len(ids) != 1 or wanted[0] != device:
        raise ValueError(f"DistributedDataParallel device_ids and output_device arguments only work "
                         f"with single-device GPU modules or CPU modules, but got device_ids {ids}, "
                         f"output_device {output_device}, and module parameters {{{device}}}.")
    return device


def _check_same_parameters(module):
    """Every rank must wrap the same parameters: compare counts and sizes through one small
    all_gather, so a mismatch raises on every rank instead of corrupting or hanging a broadcast.
    -> the bytes sent."""
    params = list(module.parameters())
    mine = [len(params), sum(p.numel() for p in params),
            sum((i + 1) * p.numel() for i, p in enumerate(params)) % 1_000_003]
    world = dist.get_world_size()
    out = params[0].new_zeros(world * 3, dtype=int64)
    dist.all_gather_into_tensor(out, params[0].new_tensor(mine, dtype=int64))
    rows = [tuple(out.tolist()[3 * r:3 * r + 3]) for r in range(world)]
    if len(set(rows)) > 1:
        described = "; ".join(f"rank {r}: {n} parameters, {e} elements" for r, (n, e, _) in enumerate(rows))
        raise RuntimeError(f"DistributedDataParallel: the ranks' modules have different parameters "
                           f"({described}); every rank must wrap the same model")
    return 3 * 8


def _tensors(obj):
    """The tensors inside a forward's output (a tensor, or tuples, lists and dicts of them)."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return []


def _to_device(obj, device):
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj
