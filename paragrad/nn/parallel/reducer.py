"""The gradient reducer of DistributedDataParallel (torch's C++ `Reducer`): averages the
parameters' gradients across ranks in buckets while backward is still running.

Buckets. The parameters that require grad, in reverse registration order (the order backward
roughly finishes them), fill buckets of about `bucket_cap_mb` each; a bucket holds one dtype on
one device and owns one flat buffer, so averaging a bucket is one collective. A bucket closes
once it reaches the cap, so it may exceed it by its last parameter.

During backward. Each parameter's post-accumulate-grad hook copies its final .grad into its
slice of the bucket buffer. When every parameter of a bucket has arrived, and every bucket
before it has been launched, the bucket's all_reduce(AVG) starts with async_op=True: buckets
launch in the same order on every rank (collectives must match), and communication overlaps
the rest of backward. A callback queued for the end of backward launches what is left
(find_unused_parameters), waits for every bucket and copies the averages back into .grad in
place (the .grad tensors stay the same objects, as optimizers and captured graphs expect).

Nothing here reads a device value on the host, except find_unused_parameters' check of which
parameters were used on some rank, so a synchronized backward can be captured by pg.jit.

How much of the communication actually overlaps the rest of backward is the transport's
business: MPI's non-blocking all-reduces progress while a rank is inside MPI (paragrad's waits
poll them); nccl enqueues them on the current stream, where they run in order with the
backward kernels (the host goes on launching, and a captured step has no host gaps at all).
"""
from __future__ import annotations

import weakref

from ... import capture
from ... import distributed as dist
from ...autograd import no_grad, queue_callback
from ...dtypes import float32
from ...ops import empty, zeros


class Bucket:
    """One flat buffer and the parameters whose gradients it carries."""

    def __init__(self, params, indices):
        self.params = params            # in bucket order
        self.indices = indices          # their positions in the reducer's parameter list
        self.numel = sum(p.numel() for p in params)
        first = params[0]
        self.flat = empty(self.numel, dtype=first.dtype, device=first.device)   # (numel,)
        self.views, offset = [], 0
        for p in params:        # one view of the flat buffer per parameter, in its shape
            n = p.numel()
            self.views.append(self.flat[offset:offset + n].view(p.shape))
            offset += n
        self.nbytes = self.numel * first.dtype.itemsize
        self.pending = len(params)      # parameters not yet ready in this backward
        self.work = None                # the running all_reduce


def assign_buckets(params, cap_bytes):
    """Group `params` (in the order given) into lists of indices: a bucket per dtype and device
    that closes once it holds at least cap_bytes. Buckets are ordered by their first parameter."""
    open_buckets, buckets = {}, []
    for i, p in enumerate(params):
        key = (p.dtype, p.device)
        bucket = open_buckets.get(key)
        if bucket is None:
            bucket = open_buckets[key] = [[], 0]
            buckets.append(bucket[0])
        bucket[0].append(i)
        bucket[1] += p.numel() * p.dtype.itemsize
        if bucket[1] >= cap_bytes:
            del open_buckets[key]
    return buckets


class Reducer:
    def __init__(self, named_params, cap_bytes, find_unused_parameters):
        # reverse registration order, as torch: the last layers' gradients are ready first
        self.names = [n for n, _ in reversed(named_params)]
        self.params = [p for _, p in reversed(named_params)]
        self.find_unused = find_unused_parameters
        self.buckets = []
        self.bucket_of = {}         # parameter index -> (bucket, position in it)
        for indices in assign_buckets(self.params, cap_bytes):
            bucket = Bucket([self.params[i] for i in indices], indices)
            for pos, i in enumerate(indices):
                self.bucket_of[i] = (bucket, pos)
            self.buckets.append(bucket)
        self.grad_bytes = sum(b.nbytes for b in self.buckets)
        # find_unused_parameters: which parameters got a gradient on some rank, one number each
        self.used_map = (zeros(len(self.params), dtype=float32, device=self.params[0].device)
                         if self.find_unused else None)
        self.bytes_communicated = 0     # payload handed to all_reduce so far (host-side count)
        self.armed = False              # the next backward averages (set by DDP's forward)
        self._reset()
        me = weakref.ref(self)          # (the hooks must not keep a dropped DDP alive)
        for i, p in enumerate(self.params):
            p.register_post_accumulate_grad_hook(_ready_hook(me, i))

    @property
    def bytes_per_step(self):
        """What one synchronized backward all-reduces: every gradient bucket, plus the
        used-parameter map under find_unused_parameters."""
        return self.grad_bytes + (self.used_map.numel() * 4 if self.find_unused else 0)

    def _reset(self):
        self.ready = [False] * len(self.params)
        self.next_bucket = 0            # the first bucket not launched yet
        self.started = False            # a hook of this backward has run
        for b in self.buckets:
            b.pending, b.work = len(b.params), None

    # ---- at forward ---------------------------------------------------------------------------
    def check_previous_reduction(self):
        """Raise (as torch) if the last synchronized backward stopped before its end, e.g. an
        error inside it: its buckets never finished, so the gradients are not averaged."""
        if self.started:
            missing = [self.names[i] for i, r in enumerate(self.ready) if not r]
            self._wait_launched()
            self.armed = False
            self._reset()
            raise RuntimeError(_unfinished_message(missing))

    def prepare_for_backward(self, outputs):
        """The forward just run is synchronized: its backward averages the gradients. A hook on
        each output tensor queues the end-of-backward step as soon as backward starts, so it
        runs even if no parameter gets a gradient on this rank."""
        self.armed = True
        for t in outputs:
            if t.requires_grad and t.grad_fn is not None:
                t.register_hook(_start_hook(weakref.ref(self)))

    # ---- during backward ---------------------------------------------------------------------
    def start(self):
        if self.armed and not self.started:
            self.started = True
            queue_callback(self._finalize)

    def mark_ready(self, i):
        """Parameter i's .grad is final for this backward: stage it and launch what is full."""
        if not self.armed or self.ready[i]:
            return
        self.start()
        bucket, pos = self.bucket_of[i]
        grad = self.params[i].grad
        with no_grad():
            if grad is None:                # (an unused parameter under find_unused_parameters)
                bucket.views[pos].zero_()
            else:
                bucket.views[pos].copy_(grad)
        self.ready[i] = True
        bucket.pending -= 1
        self._launch_full_buckets()

    def _launch_full_buckets(self):
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            bucket = self.buckets[self.next_bucket]
            bucket.work = dist.all_reduce(bucket.flat, op=dist.ReduceOp.AVG, async_op=True)
            self.bytes_communicated += bucket.nbytes
            self.next_bucket += 1

    # ---- at the end of backward --------------------------------------------------------------
    def _finalize(self):
        try:
            unused = [i for i, r in enumerate(self.ready) if not r]
            if unused and not self.find_unused:
                self._wait_launched()
                raise RuntimeError(_unfinished_message([self.names[i] for i in unused]))
            used_work = None
            if self.find_unused:
                # which parameters some rank used is read on the host below: not capturable
                capture.forbid_sync("DistributedDataParallel(find_unused_parameters=True)")
                missing = set(unused)
                local = [0.0 if i in missing else 1.0 for i in range(len(self.params))]
                for i in unused:
                    self.mark_ready(i)      # zero contribution, or what .grad holds already
                with no_grad():
                    self.used_map.copy_(self.used_map.new_tensor(local))
                used_work = dist.all_reduce(self.used_map, op=dist.ReduceOp.SUM, async_op=True)
                self.bytes_communicated += self.used_map.numel() * 4
            self._wait_launched()
            globally_used = None
            if used_work is not None:
                used_work.wait()
                globally_used = [u > 0 for u in self.used_map.tolist()]
            with no_grad():
                for bucket in self.buckets:
                    for p, i, view in zip(bucket.params, bucket.indices, bucket.views):
                        if globally_used is not None and not globally_used[i]:
                            continue        # no rank used it: .grad stays as it was (torch)
                        if p.grad is None:
                            p.grad = view.clone()
                        else:
                            p.grad.copy_(view)
        finally:
            self.armed = False
            self._reset()

    def _wait_launched(self):
        for bucket in self.buckets:
            if bucket.work is not None:
                bucket.work.wait()
                bucket.work = None


def _ready_hook(reducer_ref, i):
    def hook(param):
        reducer = reducer_ref()
        if reducer is not None:
            reducer.mark_ready(i)
    return hook


def _start_hook(reducer_ref):
    def hook(grad):
        reducer = reducer_ref()
        if reducer is not None:
            reducer.start()
    return hook


def _unfinished_message(names):
    return ("Expected to have finished reduction in the prior iteration before starting a new one. "
            "This error indicates that your module has parameters that were not used in producing "
            "loss. You can enable unused parameter detection by passing the keyword argument "
            "`find_unused_parameters=True` to `paragrad.nn.parallel.DistributedDataParallel`, and by "
            "making sure all `forward` function outputs participate in calculating loss. "
            f"Parameters which did not receive grad for rank {dist.get_rank()}: {', '.join(names)}")
