"""One CUDA graph per jitted function signature (what pg.jit needs from the CUDA backend).

The eager warm-up and the capture run on a private side stream (cuBLASLt plans and other
per-stream caches made in the warm-up are then the ones the capture uses); buffers allocated
while capturing come from a private pool that lives as long as the graph, so nothing eager
can reuse them between replays. Replays launch on the caller's current stream.
"""
from __future__ import annotations

import ctypes

import cupy

from .... import capture
from . import memory


class StepGraph:
    def __init__(self, device_index):
        self.device_index = device_index
        with cupy.cuda.Device(device_index):
            self.stream = cupy.cuda.Stream(non_blocking=True)
        self.pool = None
        self.graph = None
        self.kept = None
        self.nodes = None

    def _on_side(self, fn):
        """fn() on the side stream, ordered after the caller's work and before what follows."""
        with cupy.cuda.Device(self.device_index):
            caller = cupy.cuda.get_current_stream()
            self.stream.wait_event(caller.record())
            with self.stream:
                out = fn()
            caller.wait_event(self.stream.record())
        return out

    def warmup(self, fn):
        return self._on_side(fn)

    def capture(self, fn, name):
        """Record fn() into the graph (nothing runs), then run the graph once: -> fn's output."""
        def record():
            self.pool = memory.graph_pool()
            with cupy.cuda.using_allocator(self.pool.malloc), capture.capturing(name) as kept:
                self.stream.begin_capture()
                try:
                    out = fn()
                except BaseException:
                    self._abandon()
                    raise
                try:
                    graph = self.stream.end_capture()
                except cupy.cuda.runtime.CUDARuntimeError as e:
                    raise RuntimeError(
                        f"pg.jit: capturing {name} failed ({e}); an operation inside it synchronized "
                        f"with the host or used an API CUDA graphs can't record") from None
            self.graph, self.kept = graph, kept
            graph.launch(self.stream)
            return out
        return self._on_side(record)

    def _abandon(self):
        try:
            self.stream.end_capture()
        except Exception:       # the capture was already invalidated: nothing to discard
            pass
        self.pool = None

    def replay(self):
        with cupy.cuda.Device(self.device_index):
            self.graph.launch(cupy.cuda.get_current_stream())

    def num_nodes(self):
        """The number of nodes (kernels, copies, memsets) in the graph."""
        if self.nodes is None:
            self.nodes = _count_nodes(self.graph)
        return self.nodes


def _count_nodes(graph):
    handle = getattr(graph, "graph", None)
    if handle is None:
        raise RuntimeError("pg.jit: this CuPy version does not expose the graph handle")
    libcuda = ctypes.CDLL("libcuda.so.1")
    count = ctypes.c_size_t(0)
    err = libcuda.cuGraphGetNodes(ctypes.c_void_p(int(handle)), None, ctypes.byref(count))
    if err != 0:
        raise RuntimeError(f"pg.jit: cuGraphGetNodes failed with CUDA error {err}")
    return count.value
