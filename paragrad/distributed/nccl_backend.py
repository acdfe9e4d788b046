"""The `nccl` backend: collectives on CUDA tensors through CuPy's NCCL bindings
(cupy.cuda.nccl), one process per GPU.

- Device: device_id if given, else LOCAL_RANK (or the rank's index on its node) modulo the
  GPUs; it becomes CuPy's current device. Tensors must live on it (cuda:N).
- Rendezvous: rank 0's NCCL unique id travels to the others over MPI (MPI started the ranks).
- Every collective is enqueued on CuPy's *current* stream and returns without a host sync, so
  it orders with the kernels around it and can be captured into a CUDA graph by pg.jit.
  Work.wait() has nothing left to do (the work is already ordered on the stream the caller
  uses); is_completed() asks a CUDA event.
- AVG on floating tensors is ncclAvg (NCCL >= 2.10; else SUM and a division); on integer
  tensors SUM then a division truncating toward zero. bool reduces as uint8 (SUM/MAX: max,
  PRODUCT/MIN: min). bfloat16 is ncclBfloat16. Broadcast and all-gather move raw bytes.
- Timeouts: each eager collective records an event; a watchdog thread (nccl_watchdog.py)
  ends the process when one is not done within the timeout.
  Collectives inside a captured graph are not watched (replays run no Python).
- Mismatched calls: each collective's header (call_header.py) goes to the other ranks over MPI
  as on the mpi backend, but nothing here waits for theirs, since the host never waits for an
  nccl collective: the headers are compared as they come in, at the next collective's start
  (DistMismatchError), by the watchdog (which ends the process), and in full, waiting for
  them, at barrier(), destroy_process_group() and the end of the program. Under pg.jit's
  capture the headers are sent and compared the same way (host-side MPI only, no device sync),
  once per capture: replays run no Python, so they are not checked again.
- NCCL_NVLS_ENABLE defaults to 0 in the process (NVLink SHARP stalled NCCL on our machines).
"""
from __future__ import annotations

import os

import numpy as np

from .reduce_op import ReduceOp
from .work import Work

_NCCL_TYPES = {"float16": "NCCL_FLOAT16", "bfloat16": "NCCL_BFLOAT16", "float32": "NCCL_FLOAT32",
               "float64": "NCCL_FLOAT64", "int8": "NCCL_INT8", "uint8": "NCCL_UINT8",
               "int32": "NCCL_INT32", "int64": "NCCL_INT64", "bool": "NCCL_UINT8"}
_UNIQUE_ID_BYTES = 128
_NCCL_AVG_SINCE = 21000         # NCCL 2.10.0 introduced ncclAvg


class NCCLWork(Work):
    """An enqueued NCCL collective (torch's Work for NCCL, a dist.Work as every handle):
    wait() orders nothing more, since the collective already runs on the caller's current
    stream; is_completed() asks its event. Work's MPI request and deadline don't apply."""

    def __init__(self, collective, seq, event):
        self._collective, self._seq, self._event = collective, seq, event

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        if self._event is None:
            from .. import capture
            capture.forbid_sync(f"Work.is_completed() of {self._collective}")
            return True
        return self._event.done

    def is_success(self):
        return self.is_completed()

    def __repr__(self):
        return f"Work({self._collective} #{self._seq}, nccl)"


class NCCLBackend:
    name = "nccl"

    def __init__(self, world, rank, size, local_rank, device_id=None):
        try:
            import cupy
            from cupy.cuda import nccl
        except ImportError as e:
            raise RuntimeError(f"init_process_group('nccl'): the nccl backend needs CuPy with NCCL "
                               f"({e}); install it with: pip install \"paragrad[cuda]\"") from e
        os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
        self.cupy, self.nccl = cupy, nccl
        from ..backends.cuda.fused_chains import flush
        self.flush = flush
        count = cupy.cuda.runtime.getDeviceCount()
        if count == 0:
            raise RuntimeError("init_process_group('nccl'): no CUDA device is visible to rank "
                               f"{rank}; the nccl backend runs one process per GPU")
        self.device_index = _device_index(device_id, local_rank, count, rank)
        cupy.cuda.Device(self.device_index).use()
        uid = np.zeros(_UNIQUE_ID_BYTES, np.int8)     # NCCL's id is 128 C chars, signed here
        if rank == 0:
            ident = nccl.get_unique_id()       # a tuple of C chars in older CuPy, bytes in CuPy 14
            uid[:] = (np.frombuffer(bytes(ident), np.int8) if isinstance(ident, (bytes, bytearray))
                      else np.array(ident, np.int64).astype(np.int8))
        world.Bcast(uid, root=0)
        self.comm = _communicator(nccl, size, uid, rank)
        self.size = size
        self.has_avg = nccl.get_version() >= _NCCL_AVG_SINCE
        self.watchdog = None

    def start_watchdog(self, pg):
        from .nccl_watchdog import Watchdog
        self.watchdog = Watchdog(pg, self.device_index)

    def _stream(self):
        """The stream a collective runs on, once the pending elementwise chain is launched
        there: every collective asks for it before it reads or writes a buffer."""
        self.flush()
        return self.cupy.cuda.get_current_stream()

    def _type(self, dtype_name, collective):
        name = _NCCL_TYPES.get(dtype_name)
        if name is None or not hasattr(self.nccl, name):
            raise TypeError(f"{collective}: NCCL can't reduce {dtype_name} tensors "
                            f"(it reduces float16, bfloat16, float32, float64, int8, uint8, int32, "
                            f"int64 and bool)")
        return getattr(self.nccl, name)

    def _op(self, op, dtype_name):
        nccl = self.nccl
        if dtype_name == "bool":
            return nccl.NCCL_MAX if op in (ReduceOp.SUM, ReduceOp.MAX) else nccl.NCCL_MIN
        if op is ReduceOp.AVG:
            floating = dtype_name.startswith("float") or dtype_name == "bfloat16"
            return nccl.NCCL_AVG if floating and self.has_avg else nccl.NCCL_SUM
        return {ReduceOp.SUM: nccl.NCCL_SUM, ReduceOp.PRODUCT: nccl.NCCL_PROD,
                ReduceOp.MIN: nccl.NCCL_MIN, ReduceOp.MAX: nccl.NCCL_MAX}[op]

    def _average(self, buf, op, dtype_name):
        """After a SUM that stood in for AVG: the division, on the current stream."""
        if op is not ReduceOp.AVG or self._op(op, dtype_name) == self.nccl.NCCL_AVG:
            return None
        cupy, n = self.cupy, self.size

        def finish():
            if buf.dtype.kind in "iu":
                q = cupy.abs(buf) // n
                cupy.copyto(buf, cupy.where(buf < 0, -q, q))
            else:
                cupy.divide(buf, n, out=buf)
        return finish

    def all_reduce(self, arr, dtype_name, op):
        dtype = self._type(dtype_name, "all_reduce")
        ptr = arr.data.ptr
        self.comm.allReduce(ptr, ptr, arr.size, dtype, self._op(op, dtype_name), self._stream().ptr)
        return None, self._average(arr, op, dtype_name), arr.nbytes

    def broadcast(self, arr, src, rank):
        ptr = arr.data.ptr
        self.comm.broadcast(ptr, ptr, arr.nbytes, self.nccl.NCCL_UINT8, src, self._stream().ptr)
        return None, None, arr.nbytes if rank == src else 0

    def all_gather_into(self, out, inp):
        self.comm.allGather(inp.data.ptr, out.data.ptr, inp.nbytes, self.nccl.NCCL_UINT8,
                            self._stream().ptr)
        return None, None, inp.nbytes

    def reduce_scatter(self, out, inp, dtype_name, op):
        dtype = self._type(dtype_name, "reduce_scatter_tensor")
        self.comm.reduceScatter(inp.data.ptr, out.data.ptr, out.size, dtype, self._op(op, dtype_name),
                                self._stream().ptr)
        return None, self._average(out, op, dtype_name), inp.nbytes

    def barrier(self):
        """An all-reduce of one byte that the host then waits for (below, in make_work), as
        torch's NCCL barrier: every rank's earlier collectives on this stream are done too."""
        one = self.cupy.zeros(1, self.cupy.uint8)
        self.comm.allReduce(one.data.ptr, one.data.ptr, 1, self.nccl.NCCL_UINT8, self.nccl.NCCL_SUM,
                            self._stream().ptr)
        return "barrier", None, 0

    def make_work(self, pg, collective, seq, request, finish):
        """Finish steps run now, ordered on the stream; eager collectives get an event the
        watchdog follows. A barrier waits on the host, polling against the deadline."""
        if finish is not None:
            finish()
        stream = self._stream()
        if stream.is_capturing():
            return NCCLWork(collective, seq, None)
        event = self.cupy.cuda.Event(block=False, disable_timing=True)
        event.record(stream)
        if self.watchdog is not None:
            self.watchdog.watch(collective, seq, event)
        if request == "barrier":
            import time
            deadline = time.monotonic() + pg.timeout.total_seconds()
            pg.wait_until(event, collective, seq, deadline)
            pg.confirm(collective, seq, deadline)     # every header so far came in and agreed
        return NCCLWork(collective, seq, event)

    def test(self, request):
        """A CUDA event stands for the request here (the barrier's host wait)."""
        self.comm.check_async_error()
        return request.done

    def free(self):
        if self.watchdog is not None:
            self.watchdog.stop()
        self.comm.destroy()


def _device_index(device_id, local_rank, count, rank):
    if device_id is None:
        return local_rank % count
    index = device_id if isinstance(device_id, int) else getattr(device_id, "index", None)
    if getattr(device_id, "type", "cuda") != "cuda" or index is None or not 0 <= index < count:
        raise ValueError(f"init_process_group('nccl'): device_id must be a CUDA device index in "
                         f"[0, {count - 1}] (or a cuda:N device), got {device_id!r} on rank {rank}")
    return index


def _communicator(nccl, size, uid, rank):
    """NCCL's communicator from the broadcast id: CuPy takes the id as the tuple of chars its
    get_unique_id gave in older releases, as bytes where that returns bytes."""
    try:
        return nccl.NcclCommunicator(size, tuple(int(c) for c in uid), rank)
    except TypeError:
        return nccl.NcclCommunicator(size, uid.tobytes(), rank)
