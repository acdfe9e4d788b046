"""One CUDA graph per jitted function signature (what pg.jit needs from the CUDA backend).

The eager warm-up and the capture run on a private side stream (cuBLASLt plans and other
per-stream caches made in the warm-up are then the ones the capture uses); buffers allocated
while capturing come from a private pool that lives as long as the graph, so nothing eager
can reuse them between replays. Replays launch on the caller's current stream.

The graph copies its inputs in itself: a copy queued before each launch kept the GPU idle
about 4 us a step (the launch's first kernel waited on it; the bf16 MNIST step 81.5 -> 77.8 us
without it), so each whole-buffer input copy is a memcpy node of the graph, re-pointed at the
call's argument before the launch.
"""
from __future__ import annotations

import ctypes

import cupy

from .... import capture
from .. import fused_chains
from . import memory


class StepGraph:
    def __init__(self, device_index, copy, stream=None):
        self.device_index = device_index
        self.copy = copy        # the backend's copy_(dst, src): for inputs without a node
        if stream is None:
            with cupy.cuda.Device(device_index):
                stream = cupy.cuda.Stream(non_blocking=True)
        self.stream = stream
        self.pool = None
        self.graph = None
        self.kept = None
        self.nodes = None
        self.statics = []       # the input buffers fn reads
        self.inputs = []        # per input: its _CopyNode, or None (copied before the launch)

    def _on_side(self, fn):
        """fn() on the side stream, ordered after the caller's work and before what follows
        (pending elementwise chains launched on the stream that recorded them)."""
        with cupy.cuda.Device(self.device_index):
            fused_chains.flush()
            caller = cupy.cuda.get_current_stream()
            self.stream.wait_event(caller.record())
            with self.stream:
                out = fn()
                fused_chains.flush()
            caller.wait_event(self.stream.record())
        return out

    def warmup(self, fn):
        return self._on_side(fn)

    def sibling(self):
        """Another graph on this one's side stream, whose per-stream handles and plans this
        one's warm-up made (a captured backward beside its captured forward)."""
        return StepGraph(self.device_index, self.copy, self.stream)

    def capture(self, fn, name, inputs=(), pool=None):
        """Record fn() into the graph (nothing runs), then run the graph once: -> fn's output.
        inputs: (static, source) buffer pairs; each run of the graph starts from the source
        copied into the static buffer fn reads, and replay(sources) takes new sources. pool:
        another graph's `.pool`, for a graph that reads what that one left in its memory (a
        captured backward reading its forward's activations), else a new one."""
        def record():
            self.pool = pool or memory.graph_pool()
            with cupy.cuda.using_allocator(self.pool.malloc), capture.capturing(name) as kept:
                self.stream.begin_capture()
                try:
                    for static, source in inputs:
                        if _whole(static, source):
                            static.data.copy_from_device_async(source.data, static.nbytes, self.stream)
                    out = fn()
                    fused_chains.flush()        # (its kernel belongs in the graph)
                except BaseException:
                    fused_chains.discard()      # (ops of the failed capture, on its pool's memory)
                    self._abandon()
                    raise
                try:
                    graph = self.stream.end_capture()
                except cupy.cuda.runtime.CUDARuntimeError as e:
                    raise RuntimeError(
                        f"pg.jit: capturing {name} failed ({e}); an operation inside it synchronized "
                        f"with the host or used an API CUDA graphs can't record") from None
            self.graph, self.kept = graph, kept
            graph.launch(self.stream)       # (also instantiates it: the nodes below are its own)
            self.statics = [static for static, _ in inputs]
            self.inputs = _copy_nodes(graph, inputs)
            return out
        return self._on_side(record)

    def _abandon(self):
        try:
            self.stream.end_capture()
        except Exception:       # the capture was already invalidated: nothing to discard
            pass
        self.pool = None

    def replay(self, sources=()):
        """Run the graph again on new sources for its inputs (buffers, in capture's order)."""
        fused_chains.flush()        # (a source may be a pending chain's result: its copy node reads it)
        with cupy.cuda.Device(self.device_index):
            for node, static, source in zip(self.inputs, self.statics, sources):
                if node is not None and _whole(static, source):
                    node.point_at(source)
                elif static is not source:
                    if node is not None:
                        node.point_at(static)       # the node copies nothing new
                    self.copy(static, source)
            self.graph.launch(cupy.cuda.get_current_stream())

    def num_nodes(self):
        """The number of nodes (kernels, copies, memsets) in the graph."""
        if self.nodes is None:
            self.nodes = _count_nodes(self.graph)
        return self.nodes


def _count_nodes(graph):
    count = ctypes.c_size_t(0)
    _check(_libcuda().cuGraphGetNodes(ctypes.c_void_p(int(graph.graph)), None, ctypes.byref(count)),
           "cuGraphGetNodes")
    return count.value


def _whole(static, source):
    """Whether source is copied into static as one block of bytes: both dense and laid out alike."""
    return (source.dtype == static.dtype and source.shape == static.shape and source.strides == static.strides
            and static.flags.c_contiguous)


class _Memcpy3D(ctypes.Structure):
    """The driver's CUDA_MEMCPY3D: a memcpy node's parameters."""
    _fields_ = [(f"{side}{name}", kind) for side in ("src", "dst") for name, kind in (
        ("XInBytes", ctypes.c_size_t), ("Y", ctypes.c_size_t), ("Z", ctypes.c_size_t),
        ("LOD", ctypes.c_size_t), ("MemoryType", ctypes.c_int), ("Host", ctypes.c_void_p),
        ("Device", ctypes.c_uint64), ("Array", ctypes.c_void_p), ("Reserved", ctypes.c_void_p),
        ("Pitch", ctypes.c_size_t), ("Height", ctypes.c_size_t))] + [
        ("WidthInBytes", ctypes.c_size_t), ("Height", ctypes.c_size_t), ("Depth", ctypes.c_size_t)]


_MEMCPY_NODE = 1        # CU_GRAPH_NODE_TYPE_MEMCPY


class _CopyNode:
    """One input's memcpy node in an instantiated graph, re-pointed at a new source (and, when
    the source is the static buffer itself, at a scratch destination) before a launch."""

    def __init__(self, graph, node, params, static):
        self.graph, self.node, self.params = graph, node, params
        self.static, self.scratch = static, None
        self.ctx = ctypes.c_void_p()
        _check(_libcuda().cuCtxGetCurrent(ctypes.byref(self.ctx)), "cuCtxGetCurrent")

    def point_at(self, source):
        src = source.data.ptr
        dst = self.static.data.ptr
        if src == dst:          # nothing to copy, and a copy onto itself is undefined: a scratch target
            if self.scratch is None:
                self.scratch = cupy.empty(self.static.nbytes, cupy.uint8)
            dst = self.scratch.data.ptr
        p = self.params
        if p.srcDevice == src and p.dstDevice == dst:
            return
        p.srcDevice, p.dstDevice = src, dst
        _check(_libcuda().cuGraphExecMemcpyNodeSetParams(
            ctypes.c_void_p(int(self.graph.graphExec)), self.node, ctypes.byref(p), self.ctx),
            "cuGraphExecMemcpyNodeSetParams")


def _copy_nodes(graph, inputs):
    """Per input, its memcpy node in the graph (the one copying that source into that static
    buffer: fn's own copies have other ends), or None: an input that is not one block of bytes
    is copied before each launch. (Not yet handled: a whole input whose recorded copy is not
    exactly one node with these ends, which only a function copying a tensor it also takes as an
    argument could make. It gets None too, but its recorded copy would still run from the first
    call's tensor; raising here is the fix, to be made with a GPU run.)"""
    lib = _libcuda()
    count = ctypes.c_size_t(0)
    handle = ctypes.c_void_p(int(graph.graph))
    _check(lib.cuGraphGetNodes(handle, None, ctypes.byref(count)), "cuGraphGetNodes")
    nodes = (ctypes.c_void_p * count.value)()
    _check(lib.cuGraphGetNodes(handle, nodes, ctypes.byref(count)), "cuGraphGetNodes")
    by_ends = {}
    for node in nodes:
        kind = ctypes.c_int()
        _check(lib.cuGraphNodeGetType(ctypes.c_void_p(node), ctypes.byref(kind)), "cuGraphNodeGetType")
        if kind.value == _MEMCPY_NODE:
            params = _Memcpy3D()
            _check(lib.cuGraphMemcpyNodeGetParams(ctypes.c_void_p(node), ctypes.byref(params)),
                   "cuGraphMemcpyNodeGetParams")
            by_ends.setdefault((params.srcDevice, params.dstDevice), []).append((ctypes.c_void_p(node), params))
    out = []
    for static, source in inputs:
        found = by_ends.get((source.data.ptr, static.data.ptr), []) if _whole(static, source) else []
        out.append(_CopyNode(graph, *found[0], static) if len(found) == 1 else None)
    return out


_lib = []


def _libcuda():
    if not _lib:
        _lib.append(ctypes.CDLL("libcuda.so.1"))
    return _lib[0]


def _check(err, what):
    if err != 0:
        raise RuntimeError(f"pg.jit: {what} failed with CUDA error {err}")
