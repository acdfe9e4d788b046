"""cuDNN through the cuDNN frontend (`import cudnn`): conv2d forward / data gradient / weight
gradient, and scaled-dot-product attention forward/backward for float16/bfloat16.

Each distinct geometry builds one cuDNN graph once (validate, heuristics, plans) and keeps
it; a call binds device pointers and runs it on the current stream through a per-stream
handle. With pg.backends.cudnn.benchmark, a convolution graph builds a plan for every engine
instead, times each on the GPU once and runs the fastest from then on. Outputs are given
explicit NCHW / BHLD strides (cuDNN's default output layout for a convolution is NHWC). A case
cuDNN can't take (integer dtypes, or float32 attention, which it has no kernel for) returns
None and the op composes primitives instead. A float32 convolution over a map of a few pixels
is one dense GEMM per direction (matmul/conv_gemm.py) instead of cuDNN.
"""
from __future__ import annotations

import math

import cupy
import numpy as np

from ... import capture
from .. import cudnn as cudnn_flags
from . import matmul as flags
from .matmul import conv_gemm
from .runtime import timing
from ...memory_format import runs_channels_last
from .runtime import channels_last
from .kernels import random
from .kernels.row_views import c_contiguous

_graphs: dict = {}
_handles: dict = {}
_CONV_DTYPES = ("float32", "float16", "bfloat16")
_SDPA_DTYPES = ("float16", "bfloat16")


def _cudnn():
    import cudnn
    return cudnn


def _handle():
    stream = cupy.cuda.get_current_stream().ptr
    key = (cupy.cuda.runtime.getDevice(), stream)
    h = _handles.get(key)
    if h is None:
        cudnn = _cudnn()
        h = _handles[key] = cudnn.create_handle()
        cudnn.set_stream(h, stream)
    return h


def _dt(dtype):
    cudnn = _cudnn()
    return {"float32": cudnn.data_type.FLOAT, "float16": cudnn.data_type.HALF,
            "bfloat16": cudnn.data_type.BFLOAT16}[dtype.name]


def _strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return out[::-1]


def _run(graph, bindings, plan=None):
    """Execute on the current stream: plan = (index, workspace bytes) that
    pg.backends.cudnn.benchmark chose, else (None) the heuristic's plan."""
    pack = {t: buf.data.ptr for t, buf in bindings.items()}
    if plan is None:
        ws = cupy.empty(max(graph.get_workspace_size(), 1), dtype=cupy.uint8)
        graph.execute(pack, ws.data.ptr, handle=_handle())
    else:   # by index: which plan a plain execute runs after building them all varies by version
        ws = cupy.empty(max(plan[1], 1), dtype=cupy.uint8)
        graph.execute_plan_at_index(pack, ws.data.ptr, index=plan[0], handle=_handle())


def _build(g, exclude_tf32=False, all_plans=False):
    """Plan a graph; float32 convolutions stay off TF32 tensor cores unless
    pg.backends.cuda.matmul.allow_tf32 (one switch for GEMMs and convolutions). all_plans
    builds every plan the heuristics list (deselected ones excepted), for timing."""
    cudnn = _cudnn()
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    if all_plans:   # every engine too, with its default knobs (what cudnnFind tries). Measured on
        # ResNet-18 at 32x32: the heuristics' list lacked the fastest engine for 4 of the 32
        # conv geometries and directions, which ran up to 37 % faster
        for engine in range(g.get_engine_count()):
            try:
                g.create_execution_plan(engine, {})
            except Exception:       # noqa: BLE001 - an engine that can't run this graph
                pass
        # not the engines cuDNN compiles with NVRTC while building: they took seconds per
        # geometry (warm-up of the MNIST CNN 0.85 -> 9.1 s, ResNet-18 at 32x32 1.0 -> 5.3 s)
        # for the same step time
        g.deselect_behavior_notes([cudnn.behavior_note.RUNTIME_COMPILATION])
    if exclude_tf32:
        g.deselect_numeric_notes([cudnn.numerical_note.TENSOR_CORE])
    g.check_support()
    if all_plans:
        g.build_plans(cudnn.build_plan_policy.ALL)
    else:
        g.build_plans()


def _fastest_plan(g, tensors, dtype, repeats=3):
    """pg.backends.cudnn.benchmark: time every built plan of g on scratch buffers (tensors:
    (cuDNN tensor, shape) pairs), GPU time only (timing.gpu_time: the plan runs in a CUDA graph
    later, and timed from the host a plan shorter than its launch looked as fast as any), and
    return the fastest as (index, workspace bytes), or None if none ran. Plans that weren't
    built (deselected) or fail here are skipped. Synchronizes with the device."""
    bufs = [cupy.zeros(math.prod(shape) * dtype.itemsize, dtype=cupy.uint8) for _, shape in tensors]
    pack = {t: b.data.ptr for (t, _), b in zip(tensors, bufs)}
    best = None
    for i in range(g.get_execution_plan_count()):
        try:
            ws_bytes = g.get_workspace_size_plan_at_index(i)
            ws = cupy.empty(max(ws_bytes, 1), dtype=cupy.uint8)
            ms = timing.gpu_time(lambda: g.execute_plan_at_index(pack, ws.data.ptr, index=i, handle=_handle()),
                                 repeats)
        except Exception:       # noqa: BLE001 - a plan that can't run here is no candidate
            continue
        if best is None or ms < best[0]:
            best = (ms, i, ws_bytes)
    return None if best is None else best[1:]


def _conv_graph(kind, xs, ws, ys, dtype, stride, padding, dilation, nhwc=False):
    """kind: 'fprop' (x, w -> y), 'dgrad' (dy, w -> dx) or 'wgrad' (x, dy -> dw); nhwc: all
    three tensors channels-last (else row-major).
    -> (graph, input tensors, output tensor, plan for _run)."""
    benchmark = cudnn_flags.benchmark
    key = (kind, xs, ws, ys, dtype.str, stride, padding, dilation, flags.allow_tf32, nhwc, benchmark)
    hit = _graphs.get(key)
    if hit is not None:
        return hit
    cudnn = _cudnn()
    dt = _dt(dtype)
    g = cudnn.pygraph(io_data_type=dt, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=_handle())
    conv = dict(pre_padding=[padding[0][0], padding[1][0]], post_padding=[padding[0][1], padding[1][1]],
                stride=list(stride), dilation=list(dilation), compute_data_type=cudnn.data_type.FLOAT)
    X = g.tensor(name="x", dim=list(xs), stride=channels_last.strides(xs, nhwc), data_type=dt)
    W = g.tensor(name="w", dim=list(ws), stride=channels_last.strides(ws, nhwc), data_type=dt)
    DY = g.tensor(name="dy", dim=list(ys), stride=channels_last.strides(ys, nhwc), data_type=dt)
    if kind == "fprop":
        out, ins, shapes = g.conv_fprop(image=X, weight=W, **conv), (X, W), (xs, ws, ys)
    elif kind == "dgrad":
        out, ins, shapes = g.conv_dgrad(loss=DY, filter=W, **conv), (DY, W), (ys, ws, xs)
    else:
        out, ins, shapes = g.conv_wgrad(image=X, loss=DY, **conv), (X, DY), (xs, ys, ws)
    out.set_output(True).set_dim(list(shapes[2])).set_stride(channels_last.strides(shapes[2], nhwc)).set_data_type(dt)
    timed = benchmark and not capture.active()      # (timing can't happen inside a capture)
    _build(g, exclude_tf32=dtype.name == "float32" and not flags.allow_tf32, all_plans=timed)
    if benchmark and not timed:     # run the heuristic's plan now; plan and time it next time
        return capture.keep((g, ins, out, None))
    plan = _fastest_plan(g, list(zip(ins + (out,), shapes)), dtype) if timed else None
    hit = _graphs[key] = (g, ins, out, plan)
    return hit


def _layouts(x, w, *others):
    """(nhwc, x, w, *others): nhwc where x or w runs channels-last (torch's rule for a
    convolution's layout; cuDNN then reads and writes every tensor so, without transposing
    internally, as tensor cores want), and every tensor laid out so."""
    nhwc = runs_channels_last(x) or runs_channels_last(w)
    return (nhwc,) + tuple(channels_last.as_nhwc(a) if nhwc else c_contiguous(a) for a in (x, w) + others)


def conv2d(x, w, b, stride, padding, dilation, groups):
    if x.dtype.name not in _CONV_DTYPES or x.size == 0 or w.size == 0:
        return None
    nhwc, x, w = _layouts(x, w)
    y = None if nhwc else conv_gemm.conv2d(x, w, b, stride, padding, dilation, groups)
    if y is not None:
        return y
    n, _, h, wd = x.shape
    k, _, r, s = w.shape
    ho = (h + sum(padding[0]) - dilation[0] * (r - 1) - 1) // stride[0] + 1
    wo = (wd + sum(padding[1]) - dilation[1] * (s - 1) - 1) // stride[1] + 1
    ys = (n, k, ho, wo)
    g, (X, W), Y, plan = _conv_graph("fprop", x.shape, w.shape, ys, x.dtype, tuple(stride), padding,
                                     tuple(dilation), nhwc)
    y = channels_last.empty(ys, x.dtype, nhwc)
    _run(g, {X: x, W: w, Y: y}, plan)
    if b is not None:
        y += b.reshape(1, k, 1, 1)
    return y


def conv2d_backward(gy, x, w, stride, padding, dilation, groups, need_dx, need_dw, need_db):
    if x.dtype.name not in _CONV_DTYPES or x.size == 0 or gy.size == 0:
        return None
    w_nhwc = runs_channels_last(w)
    nhwc, x, w, gy = _layouts(x, w, gy)
    key = (tuple(stride), padding, tuple(dilation), nhwc)
    dx = dw = db = None
    by_gemm = None if nhwc else conv_gemm.conv2d_backward(gy, x, w, stride, padding, dilation, groups,
                                                          need_dx, need_dw)
    if by_gemm is not None:
        dx, dw = by_gemm
        need_dx = need_dw = False
    if need_dx:
        g, (DY, W), DX, plan = _conv_graph("dgrad", x.shape, w.shape, gy.shape, x.dtype, *key)
        dx = channels_last.empty(x.shape, x.dtype, nhwc)
        _run(g, {DY: gy, W: w, DX: dx}, plan)
    if need_dw:
        g, (X, DY), DW, plan = _conv_graph("wgrad", x.shape, w.shape, gy.shape, x.dtype, *key)
        dw = channels_last.empty(w.shape, w.dtype, nhwc)
        _run(g, {X: x, DY: gy, DW: dw}, plan)
        if nhwc and not w_nhwc:     # the gradient in its weight's layout
            dw = cupy.ascontiguousarray(dw)
    if need_db:
        db = gy.sum(axis=(0, 2, 3), dtype=np.float32).astype(gy.dtype)
    return dx, dw, db


def _sdpa_graph(backward, layouts, dtype, scale, causal, dropout_p):
    """layouts: ((shape, strides in elements), ...) of q, k, v (and o, dO, dq, dk, dv backward):
    cuDNN reads them where they lie, so the heads of a (B, T, 3, H, E) projection need no
    copies, and writes the gradients laid out as their inputs."""
    key = ("sdpa_bwd" if backward else "sdpa", layouts, dtype.str, scale, causal, dropout_p)
    hit = _graphs.get(key)
    if hit is not None:
        return hit
    cudnn = _cudnn()
    dt = _dt(dtype)
    (qs, _), (ks, _), (vs, _) = layouts[:3]
    g = cudnn.pygraph(io_data_type=dt, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=_handle())
    Q, K, V = (g.tensor(name=n, dim=list(shape), stride=list(st), data_type=dt)
               for n, (shape, st) in zip("qkv", layouts[:3]))
    rng, dropout = (), None
    if dropout_p:   # Philox seed and offset, read from device memory when the graph runs
        rng = tuple(g.tensor(name=n, dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=cudnn.data_type.INT64)
                    for n in ("seed", "offset"))
        dropout = (dropout_p,) + rng
    os_ = qs[:3] + vs[3:]
    stats_shape = qs[:3] + (1,)
    if not backward:
        O, S = g.sdpa(q=Q, k=K, v=V, generate_stats=True, attn_scale=scale, use_causal_mask=causal,
                      dropout=dropout, name="sdpa")
        O.set_output(True).set_dim(list(os_)).set_stride(list(_heads_inner(os_))).set_data_type(dt)
        S.set_output(True).set_data_type(cudnn.data_type.FLOAT)
        _build(g)
        hit = _graphs[key] = (g, (Q, K, V), (O, S), rng)
        return hit
    O, dO = (g.tensor(name=n, dim=list(shape), stride=list(st), data_type=dt)
             for n, (shape, st) in zip(("o", "dO"), layouts[3:5]))
    S = g.tensor(name="stats", dim=list(stats_shape), stride=_strides(stats_shape),
                 data_type=cudnn.data_type.FLOAT)
    dQ, dK, dV = g.sdpa_backward(q=Q, k=K, v=V, o=O, dO=dO, stats=S, attn_scale=scale,
                                 use_causal_mask=causal, dropout=dropout, name="sdpa_backward")
    for t, (shape, st) in zip((dQ, dK, dV), layouts[5:]):
        t.set_output(True).set_dim(list(shape)).set_stride(list(st)).set_data_type(dt)
    _build(g)
    hit = _graphs[key] = (g, (Q, K, V, O, dO, S), (dQ, dK, dV), rng)
    return hit


def _heads_inner(shape):
    """Strides of a (B, H, L, E) tensor stored as (B, L, H, E): the attention output laid out so
    that out.transpose(1, 2).reshape(B, L, H * E), how models merge the heads, needs no copy."""
    B, H, L, E = shape
    return (L * H * E, E, H * E, 1)


def _layout(x):
    """x readable by cuDNN as it lies (unit-stride last dim, positive strides), else a copy;
    with its (shape, strides in elements)."""
    if x.strides[-1] != x.itemsize or min(x.strides) <= 0:
        x = cupy.ascontiguousarray(x)
    return x, (x.shape, tuple(st // x.itemsize for st in x.strides))


def _packed_like(q, k, v):
    """(dq, dk, dv) as q, k and v lie in their buffer, in one new buffer of its layout, when
    they are disjoint heads-inner slices of one (B, T, W) buffer (q, k, v = qkv.split(C, 2),
    then viewed (B, H, T, E)); else None."""
    if not (q.data.mem is k.data.mem is v.data.mem and q.shape == k.shape == v.shape
            and q.strides == k.strides == v.strides and q.dtype == k.dtype == v.dtype):
        return None
    B, H, T, E = q.shape
    sb, sh, st, se = (s // q.itemsize for s in q.strides)
    start = min(x.data.ptr for x in (q, k, v))
    at = sorted((x.data.ptr - start) // q.itemsize for x in (q, k, v))
    # each (b, t) of a piece is H * E consecutive elements; rows of st, batches of T rows
    if se != 1 or sh != E or sb != T * st or at[1] - at[0] < H * E or at[2] - at[1] < H * E \
            or at[2] + H * E > st:
        return None
    whole = cupy.empty(B * T * st, q.dtype)
    return tuple(cupy.ndarray(x.shape, x.dtype, whole.data + (x.data.ptr - start), strides=x.strides)
                 for x in (q, k, v))


def _rng_bindings(tensors, rng):
    """The seed and offset graph tensors bound to the two words of an rng snapshot."""
    return dict(zip(tensors, (rng[0:1], rng[1:2]))) if tensors else {}


def _supported(q, k, v):
    # (float32, cross-attention and E != Ev compose instead)
    return q.dtype.name in _SDPA_DTYPES and q.shape[2] == k.shape[2] and q.shape[3] == v.shape[3]


def sdpa(q, k, v, scale, is_causal, dropout_p=0.0, rng_state=None):
    """-> (out, stats, rng) or None. cuDNN's causal mask is top-left aligned, as PyTorch's.
    With dropout, rng is a copy of the generator's (seed, offset) taken before the draw (the
    backward drops the same weights from it); the generator then moves past every number the
    kernel may draw, one per attention weight."""
    if not _supported(q, k, v):
        return None
    dropout_p = float(dropout_p)
    (q, lq), (k, lk), (v, lv) = _layout(q), _layout(k), _layout(v)
    g, (Q, K, V), (O, S), rng_tensors = _sdpa_graph(False, (lq, lk, lv), q.dtype, float(scale),
                                                    bool(is_causal), dropout_p)
    rng = None
    if dropout_p:
        rng = rng_state.copy()
        random.advance(rng_state, q.shape[0] * q.shape[1] * q.shape[2] * k.shape[2])
    B, H, L, Ev = q.shape[:3] + v.shape[3:]
    out = cupy.empty((B, L, H, Ev), dtype=q.dtype).transpose(0, 2, 1, 3)    # (B, H, L, Ev)
    stats = cupy.empty((B, H, L, 1), dtype=np.float32)
    _run(g, {Q: q, K: k, V: v, O: out, S: stats, **_rng_bindings(rng_tensors, rng)})
    return out, stats, rng


def sdpa_backward(q, k, v, out, dout, stats, scale, is_causal, dropout_p=0.0, rng=None):
    if not _supported(q, k, v):
        return None
    (q, lq), (k, lk), (v, lv), (out, lo), (dout, ldo) = (_layout(x) for x in (q, k, v, out, dout))
    # each gradient dense in its input's dim order (empty_like's order "K"): q, k and v read
    # heads-inner from a (B, T, 3C) projection get heads-inner gradients, which the transpose
    # and merge of the heads' backward then view instead of copying (18 bf16 copies a GPT step);
    # split from one projection, they get one such buffer, which split's backward then takes
    # whole (no join: 0.25 ms of zero fills, copies and adds a GPT step)
    dq, dk, dv = _packed_like(q, k, v) or (cupy.empty_like(q), cupy.empty_like(k), cupy.empty_like(v))
    g, (Q, K, V, O, dO, S), (dQ, dK, dV), rng_tensors = _sdpa_graph(
        True, (lq, lk, lv, lo, ldo) + tuple((d.shape, tuple(st // d.itemsize for st in d.strides))
                                            for d in (dq, dk, dv)), q.dtype,
        float(scale), bool(is_causal), float(dropout_p))
    _run(g, {Q: q, K: k, V: v, O: out, dO: dout,
             S: c_contiguous(stats.astype(np.float32, copy=False)), dQ: dq, dK: dk, dV: dv,
             **_rng_bindings(rng_tensors, rng)})
    return dq, dk, dv
