"""CUDA memory: CuPy's pool (or the stream-ordered pool with PARAGRAD_CUDA_ALLOCATOR=async),
wrapped so that out-of-memory errors name the request and the pool's state, and so that the
peak of bytes in use is known (pg.cuda.max_memory_allocated)."""
from __future__ import annotations

import os

import cupy

from .... import capture

_state = {"pool": None, "peak": 0}


class OutOfMemoryError(RuntimeError):
    pass


def _fmt(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024


def pool():
    return _state["pool"]


def install():
    """Choose the pool once per process and route CuPy's allocations through it."""
    if _state["pool"] is not None:
        return
    kind = os.environ.get("PARAGRAD_CUDA_ALLOCATOR", "pool")
    if kind not in ("pool", "async"):
        raise RuntimeError(f"PARAGRAD_CUDA_ALLOCATOR must be 'pool' or 'async', got {kind!r}")
    p = cupy.cuda.MemoryAsyncPool() if kind == "async" else cupy.get_default_memory_pool()
    _state["pool"] = p

    def malloc(size):
        try:
            mem = p.malloc(size)
        except cupy.cuda.memory.OutOfMemoryError:
            free, total = cupy.cuda.runtime.memGetInfo()
            raise OutOfMemoryError(
                f"CUDA out of memory: tried to allocate {_fmt(size)}; the {kind} pool holds "
                f"{_fmt(p.total_bytes())} ({_fmt(p.used_bytes())} in use), the device has "
                f"{_fmt(free)} free of {_fmt(total)}. Free tensors or call "
                f"paragrad.cuda.empty_cache().") from None
        used = p.used_bytes()
        if used > _state["peak"]:
            _state["peak"] = used
        return mem
    cupy.cuda.set_allocator(malloc)


def allocated():
    return pool().used_bytes()


def peak():
    return max(_state["peak"], allocated())


def reset_peak():
    _state["peak"] = allocated()


def reserved():
    return pool().total_bytes()


def empty_cache():
    pool().free_all_blocks()


def summary():
    kind = os.environ.get("PARAGRAD_CUDA_ALLOCATOR", "pool")
    return (f"paragrad CUDA memory ({kind} allocator)\n"
            f"  allocated now : {_fmt(allocated())}\n"
            f"  peak allocated: {_fmt(peak())}\n"
            f"  reserved      : {_fmt(reserved())}\n")


def graph_pool():
    """A private pool for the buffers a captured graph allocates: they are the graph's for as
    long as it lives, and no eager allocation may reuse them between replays."""
    return cupy.cuda.MemoryPool()


_upload_streams = {}


def upload(host_array):
    """A host array copied to the current device. Inside a pg.jit capture the copy must not be
    recorded (a replay would re-read host memory that is gone by then), so it runs at once on a
    side stream and the result is kept alive with the graph: a constant of the graph."""
    if not capture.active():
        return cupy.asarray(host_array)
    dev = cupy.cuda.runtime.getDevice()
    side = _upload_streams.get(dev)
    if side is None:
        side = _upload_streams[dev] = cupy.cuda.Stream(non_blocking=True)
    with side:
        d = cupy.asarray(host_array)
        side.synchronize()
    return capture.keep(d)
