"""scaled_dot_product_attention as one recorded op: softmax(q k^T * scale + bias) @ v.

A backend may run it as one fused kernel (`fast_scaled_dot_product_attention` and its
`_backward`, signatures in backends/fast_paths.py) when there is no mask and q, k, v are 4-D
(B, H, L|S, E) with equal (B, H); dropout then happens inside the kernel, which keeps what the
backward needs to drop the same weights (no mask is ever written out). Otherwise the op composes primitives on buffers: scores,
a softmax that is 0 on fully masked rows (as PyTorch's math backend), the product with v, and
the standard backward summed over broadcast batch dims. Under create_graph the backward is
written with differentiable Tensor ops, so double backward works.
"""
from __future__ import annotations

import math

import numpy as np

from ... import autograd
from ... import dtypes as dt
from ...autograd import Node, node_class, record
from ...random import default_generator
from ...tensor import Tensor, _wrap
from .._common import same_device, snapshot
from ..movement.views import mT, reshape_to, sum_to
from ..autocast_policy import policy

OP = "scaled_dot_product_attention"
_LOW = ("float16", "bfloat16")      # the softmax runs in float32 for these
_causal_cache: dict = {}            # (L, S, dtype, device) -> additive causal bias buffer (L, S)


# ---- buffers ------------------------------------------------------------------------------------
def _swap(b, x):
    n = x.ndim
    return b.permute(x, tuple(range(n - 2)) + (n - 1, n - 2))


def _sum_to(b, x, shape):
    """Sum a broadcast gradient buffer back to `shape`."""
    shape = tuple(shape)
    if tuple(x.shape) == shape:
        return x
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and x.shape[lead + i] != 1)
    return b.reshape(b.reduce("sum", x, axes, True) if axes else x, shape)


def _rep_heads(b, x, hq):
    """GQA: (..., H, N, D) -> (..., hq, N, D), query head h reading head h // (hq // H), as
    torch's repeat_interleave. H == 1 needs no copy: broadcasting does it."""
    h = x.shape[-3]
    if h in (1, hq):
        return x
    lead, tail = tuple(x.shape[:-3]), tuple(x.shape[-2:])
    e = b.expand(b.reshape(x, lead + (h, 1) + tail), lead + (h, hq // h) + tail)
    return b.reshape(e, lead + (hq,) + tail)


def _fold_heads(b, g, shape, hq):
    """The gradient of _rep_heads (then of batch broadcasting): g summed back to `shape`."""
    if hq is None or shape[-3] in (1, hq):
        return _sum_to(b, g, shape)
    lead, h, tail = tuple(shape[:-3]), shape[-3], tuple(shape[-2:])
    g = _sum_to(b, g, lead + (hq,) + tail)
    return b.reduce("sum", b.reshape(g, lead + (h, hq // h) + tail), (len(lead) + 1,), False)


def _causal_bias(b, L, S, dtype, device):
    """0 where key j <= query i (top-left aligned: PyTorch's rule when L != S), else -inf.
    Cached, so a captured step (paragrad.jit) finds it on the device without a host copy."""
    key = (L, S, dtype.name, str(device))
    buf = _causal_cache.get(key)
    if buf is None:
        bias = np.where(np.tril(np.ones((L, S), dtype=bool)), 0.0, -np.inf)
        if len(_causal_cache) >= 16:
            _causal_cache.pop(next(iter(_causal_cache)))
        buf = _causal_cache[key] = b.from_numpy(bias, dtype, device.index)
    return buf


def _probs(b, q, k, bias, scale, dtype, dev, want_lse=False):
    """P = softmax(q k^T * scale + bias) over the last axis; a row whose scores are all -inf
    gives 0 (PyTorch's math backend: _safe_softmax). Returns (P (sb, L, S), lse or None)."""
    s = b.matmul(q, _swap(b, k))                                  # (sb, L, S)
    b.binary("mul", s, scale, out=s)
    if bias is not None:                       # validated: broadcasts into s without growing it
        b.binary("add", s, bias, out=s)
    if dtype.name in _LOW:
        s = b.cast(s, dt.float32)
    if s.shape[-1] == 0:
        return b.cast(s, dtype), None
    cdt = dt.float32 if dtype.name in _LOW else dtype
    ax = s.ndim - 1
    m = b.reduce("max", s, (ax,), True)                           # (sb, L, 1)
    m = b.where(b.binary("eq", m, -math.inf), b.full((), 0, cdt, dev), m)
    p = b.unary("exp", b.binary("sub", s, m, out=s), out=s)
    den = b.reduce("sum", p, (ax,), True)                         # 0 only on a fully masked row
    den = b.where(b.binary("eq", den, 0), b.full((), 1, cdt, dev), den)
    lse = b.cast(b.binary("add", b.unary("log", den), m), dt.float32) if want_lse else None
    p = b.binary("div", p, den, out=p)
    return (b.cast(p, dtype) if dtype.name in _LOW else p), lse


# ---- the node -----------------------------------------------------------------------------------
class ScaledDotProductAttentionBackward(Node):
    """saved: q, k, v, float mask (or None), out, P (or None: recompute), keep (dropout mask
    scaled by 1/(1-p), or None), stats (logsumexp for a fast backward, or None)."""

    def backward(self, g):
        q, k, v, mask, out, p, keep, stats = self.saved
        need = tuple(e is not None for e in self.next_edges)
        fused_dropout = self.rng is not None     # the weights were dropped inside the fused kernel
        if autograd.is_grad_enabled():
            if fused_dropout:
                raise RuntimeError(f"{OP}: double backward (create_graph=True) through attention whose "
                                   f"dropout ran inside the fused kernel is not supported, as in PyTorch's "
                                   f"fused attention; use dropout_p=0 or run it on the CPU")
            return self._differentiable(g, q, k, v, mask, keep, need)
        b = g._backend
        if self.fast_ok and stats is not None and keep is None:
            fast = b.fast("scaled_dot_product_attention_backward")
            if fast is not None:
                r = fast(q._data, k._data, v._data, out._data, g._data, stats, self.scale, self.is_causal,
                         self.dropout_p if fused_dropout else 0.0, self.rng)
                if r is not None:
                    return tuple(_wrap(d, g.dtype, g._device) for d in r) + (None,)
        if fused_dropout:   # (the fast forward and backward take the same inputs: unreachable)
            raise RuntimeError(f"{OP}: the fused kernel dropped attention weights, but its backward "
                               f"refused the inputs {_shapes(q, k, v, None)}")
        return self._composite(b, g, q, k, v, mask, p, keep, need)

    def _composite(self, b, g, q, k, v, mask, p, keep, need):
        """dV = P^T dO; dP = dO V^T; dS = P * (dP - rowsum(dP * P)); dQ = dS K s; dK = dS^T Q s."""
        hq, dev, dtype = self.hq, g._device.index, g.dtype
        kr, vr = (_rep_heads(b, k._data, hq), _rep_heads(b, v._data, hq)) if hq else (k._data, v._data)
        if p is None:
            bias = mask._data if mask is not None else self.bias
            p, _ = _probs(b, q._data, kr, bias, self.scale, dtype, dev)
        gd = g._data                                                  # (ob, L, Ev)
        dq = dk = dv = dm = None
        if need[2]:
            pd = b.binary("mul", p, keep) if keep is not None else p
            dv = _fold_heads(b, b.matmul(_swap(b, pd), gd), v.shape, hq)
        if need[0] or need[1] or need[3]:
            # every buffer written with out= below is a fresh result of this function
            dp = _sum_to(b, b.matmul(gd, _swap(b, vr)), p.shape)     # (sb, L, S)
            if keep is not None:
                b.binary("mul", dp, keep, out=dp)
            rows = b.reduce("sum", b.binary("mul", dp, p), (p.ndim - 1,), True)
            ds = b.binary("mul", b.binary("sub", dp, rows, out=dp), p, out=dp)
            if need[0]:
                dq = b.matmul(ds, kr)
                dq = _sum_to(b, b.binary("mul", dq, self.scale, out=dq), q.shape)
            if need[1]:
                dk = b.matmul(_swap(b, ds), q._data)
                dk = _fold_heads(b, b.binary("mul", dk, self.scale, out=dk), k.shape, hq)
            if need[3]:
                dm = _sum_to(b, ds, mask.shape)
        return tuple(_wrap(d, dtype, g._device) if d is not None else None for d in (dq, dk, dv, dm))

    def _differentiable(self, g, q, k, v, mask, keep, need):
        """The same formulas with Tensor ops, P recomputed from q, k (and the mask) so that the
        gradients are themselves differentiable (create_graph)."""
        hq = self.hq
        kr, vr = (_rep_t(k, hq), _rep_t(v, hq)) if hq else (k, v)
        s = (q @ mT(kr)) * self.scale
        if mask is not None:
            s = s + mask
        elif self.bias is not None:
            s = s + _wrap(self.bias, q.dtype, q._device)
        with autograd.no_grad():
            dead = s.amax(-1, keepdim=True) == -math.inf          # fully masked rows -> P = 0
        p = s.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)
        kt = _wrap(keep, q.dtype, q._device) if keep is not None else None
        dq = dk = dv = dm = None
        if need[2]:
            dv = _fold_t(mT(p * kt if kt is not None else p) @ g, v.shape, hq)
        if need[0] or need[1] or need[3]:
            dp = sum_to(g @ mT(vr), p.shape)
            if kt is not None:
                dp = dp * kt
            ds = p * (dp - (dp * p).sum(-1, keepdim=True))
            if need[0]:
                dq = sum_to((ds @ kr) * self.scale, q.shape)
            if need[1]:
                dk = _fold_t((mT(ds) @ q) * self.scale, k.shape, hq)
            if need[3]:
                dm = sum_to(ds, mask.shape)
        return dq, dk, dv, dm


# torch's CPU names for the output's node (its kernel choice, see _node_name)
_NODES = {name: node_class(ScaledDotProductAttentionBackward, name) for name in (
    "ScaledDotProductFlashAttentionForCpuBackward0", "AddBackward0", "ToCopyBackward0", "MmBackward0",
    "CloneBackward0", "UnsafeViewBackward0")}


def _node_name(q, k, v, mask, dropout_p, enable_gqa):
    """The node torch's CPU attention ends in: its flash kernel's where that kernel takes the
    call, else the math composition's last step. An empty attention is zeros plus a link to
    the inputs (an add); half precision runs in float32 and casts back; otherwise the last
    matmul (P @ V) names it: mm for 2-D P and V, a clone of a transposed product for 2-D P
    and batched V, else the view of a batched product."""
    if 0 in tuple(q.shape[:-1]) + tuple(k.shape[:-1]) + tuple(v.shape):    # (every size but E's)
        return "AddBackward0"
    if _flash_takes(q, k, v, mask, dropout_p, enable_gqa):
        return "ScaledDotProductFlashAttentionForCpuBackward0"
    if q.dtype.name in _LOW:
        return "ToCopyBackward0"
    if max(q.ndim, k.ndim) == 2:
        return "MmBackward0" if v.ndim == 2 else "CloneBackward0"
    return "UnsafeViewBackward0"


def _flash_takes(q, k, v, mask, dropout_p, enable_gqa):
    """torch's CPU flash-attention constraints (sdp_utils_cpp): 4-D q, k, v of one batch size
    and head count (key/value heads dividing the query's with enable_gqa), one head dim, rows
    of unit stride, no dropout, and a mask that needs no gradient, 2-D or 4-D, broadcasting
    over (batch, heads) and (L, S) by size-1 dims only."""
    if dropout_p > 0 or not q.ndim == k.ndim == v.ndim == 4 or not q.shape[-1] == k.shape[-1] == v.shape[-1]:
        return False
    (b, hq), (bk, hk), (bv, hv) = q.shape[:2], k.shape[:2], v.shape[:2]
    if not b == bk == bv or hk != hv or (hq % hk if enable_gqa else hq != hk):
        return False
    if q.stride(-1) != 1 or k.stride(-1) != 1 or v.stride(-1) != 1:
        return False
    if mask is None:
        return True
    ms = mask.shape
    if mask.requires_grad or mask.ndim not in (2, 4) or ms[-2] not in (1, q.shape[-2]) or \
            ms[-1] not in (1, k.shape[-2]):
        return False
    return mask.ndim == 2 or (ms[0] in (1, b) and ms[1] in (1, hq))


def _rep_t(x, hq):
    h = x.shape[-3]
    if h in (1, hq):
        return x
    lead, tail = tuple(x.shape[:-3]), tuple(x.shape[-2:])
    return reshape_to(x.unsqueeze(-3).expand(lead + (h, hq // h) + tail), lead + (hq,) + tail)


def _fold_t(g, shape, hq):
    if hq is None or shape[-3] in (1, hq):
        return sum_to(g, shape)
    lead, h, tail = tuple(shape[:-3]), shape[-3], tuple(shape[-2:])
    g = sum_to(g, lead + (hq,) + tail)
    return reshape_to(g, lead + (h, hq // h) + tail).sum(len(lead) + 1)


# ---- the op -------------------------------------------------------------------------------------
def _shapes(q, k, v, mask=None):
    s = f"query {tuple(q.shape)}, key {tuple(k.shape)}, value {tuple(v.shape)}"
    return s + (f", attn_mask {tuple(mask.shape)}" if mask is not None else "")


def _check(q, k, v, mask, dropout_p, is_causal, enable_gqa):
    """Validate everything before any state changes; returns the query head count when GQA
    repeats key/value heads, else None."""
    for name, t in (("query", q), ("key", k), ("value", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{OP}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if mask is not None and not isinstance(mask, Tensor):
        raise TypeError(f"{OP}(): argument 'attn_mask' must be Tensor or None, not {type(mask).__name__}")
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError(f"{OP}: expected query, key and value to be at least 2-D, got {_shapes(q, k, v)}")
    if not (q.dtype is k.dtype is v.dtype):
        raise RuntimeError(f"{OP}: expected query, key and value to have the same dtype, got "
                           f"query {q.dtype}, key {k.dtype}, value {v.dtype}")
    if not q.dtype.is_floating_point:
        raise RuntimeError(f"{OP}: expected floating-point query, key and value, got {q.dtype}")
    same_device(OP, q, k, v, mask)
    if q.shape[-1] != k.shape[-1]:
        raise RuntimeError(f"{OP}: query and key must have the same embedding size E (query "
                           f"(..., L, E), key (..., S, E), value (..., S, Ev)), got {_shapes(q, k, v)}")
    if k.shape[-2] != v.shape[-2]:
        raise RuntimeError(f"{OP}: key and value must have the same sequence length S (key "
                           f"(..., S, E), value (..., S, Ev)), got {_shapes(q, k, v)}")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"{OP}: dropout probability has to be between 0 and 1, but got {dropout_p}")
    if is_causal and mask is not None:
        raise RuntimeError(f"{OP}: explicit attn_mask should not be set when is_causal=True "
                           f"({_shapes(q, k, v, mask)})")
    hq = None
    kshape, vshape = tuple(k.shape), tuple(v.shape)
    if enable_gqa:
        if min(q.ndim, k.ndim, v.ndim) < 3:
            raise RuntimeError(f"{OP}: enable_gqa needs a head dim (..., H, L, E) on query, key and "
                               f"value, got {_shapes(q, k, v)}")
        hq, hk, hv = q.shape[-3], k.shape[-3], v.shape[-3]
        if hk == 0 or hv == 0 or hq % hk or hq % hv:
            raise RuntimeError(f"{OP}: number of heads in key ({hk}) and value ({hv}) must divide "
                               f"the number of heads in query ({hq}) with enable_gqa; got {_shapes(q, k, v)}")
        kshape, vshape = kshape[:-3] + (hq,) + kshape[-2:], vshape[:-3] + (hq,) + vshape[-2:]
        if hk == hq and hv == hq:
            hq = None
    try:
        sb = np.broadcast_shapes(tuple(q.shape[:-2]), kshape[:-2])
        np.broadcast_shapes(sb, vshape[:-2])
    except ValueError:
        raise RuntimeError(f"{OP}: batch dims of query, key and value are not broadcastable: "
                           f"{_shapes(q, k, v)}" + ("" if enable_gqa else " (grouped-query "
                                                    "attention needs enable_gqa=True)")) from None
    if mask is not None:
        if mask.dtype is not dt.bool_ and mask.dtype is not q.dtype:
            raise RuntimeError(f"{OP}: expected attn_mask dtype to be bool or to match the query "
                               f"dtype {q.dtype}, got {mask.dtype}")
        want = tuple(sb) + (q.shape[-2], k.shape[-2])
        try:
            ok = np.broadcast_shapes(tuple(mask.shape), want) == want
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(f"{OP}: attn_mask of shape {tuple(mask.shape)} is not broadcastable "
                               f"to the attention weights' shape {want} (..., L, S); got "
                               f"{_shapes(q, k, v, mask)}")
    return hq


@policy("scaled_dot_product_attention")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    """torch.nn.functional.scaled_dot_product_attention: query (..., L, E), key (..., S, E),
    value (..., S, Ev) -> (..., L, Ev), batch dims broadcast. attn_mask: bool (True = take part)
    or float (added to the scores) broadcastable to (..., L, S); is_causal: the top-left lower
    triangle (exclusive with attn_mask); dropout_p drops attention weights with the default
    generator; enable_gqa repeats key/value heads (dim -3) to query's. A row with no key to
    attend to gives 0 (as PyTorch's math backend)."""
    q, k, v, mask, dropout_p = query, key, value, attn_mask, float(dropout_p)
    hq = _check(q, k, v, mask, dropout_p, is_causal, enable_gqa)
    E, L, S = q.shape[-1], q.shape[-2], k.shape[-2]
    scale = float(scale) if scale is not None else (1.0 / math.sqrt(E) if E else 1.0)
    b, dtype, device = q._backend, q.dtype, q._device
    dev = device.index
    float_mask = mask if mask is not None and mask.dtype is not dt.bool_ else None
    track = autograd.needs_grad(q, k, v, float_mask)
    fast_ok = (mask is None and dropout_p < 1 and q.ndim == k.ndim == v.ndim == 4
               and q.shape[:2] == k.shape[:2] == v.shape[:2] and L * S * E > 0)
    want_stats = fast_ok and track and b.fast("scaled_dot_product_attention_backward") is not None

    out = stats = p = keep = bias = rng = None
    if fast_ok:
        fast = b.fast("scaled_dot_product_attention")
        if fast is not None:
            state = default_generator(device)._state if dropout_p > 0 else None
            r = fast(q._data, k._data, v._data, scale, is_causal, dropout_p, state)
            if r is not None:
                out, stats, rng = r
    if is_causal:
        bias = _causal_bias(b, L, S, dtype, device)
    elif mask is not None:
        bias = mask._data if float_mask is not None else \
            b.where(mask._data, b.full((), 0, dtype, dev), b.full((), -math.inf, dtype, dev))
    if out is None:
        kr, vr = (_rep_heads(b, k._data, hq), _rep_heads(b, v._data, hq)) if hq else (k._data, v._data)
        p, stats = _probs(b, q._data, kr, bias, scale, dtype, dev, want_stats)     # (sb, L, S)
        pd = p
        if dropout_p > 0:
            gen = default_generator(device)
            keep = b.bernoulli(gen._state, 1.0 - dropout_p, tuple(p.shape), dtype, dev)
            b.binary("mul", keep, 1.0 / (1.0 - dropout_p) if dropout_p < 1 else 0.0, out=keep)
            pd = b.binary("mul", p, keep)
        out = b.matmul(pd, vr)                                                      # (ob, L, Ev)
        if want_stats:
            p = None        # a fast backward reads stats; the composite one recomputes P
    res = _wrap(out, dtype, device)
    if track:
        node = _NODES[_node_name(q, k, v, mask, dropout_p, enable_gqa)]()
        node.scale, node.is_causal, node.hq, node.fast_ok = scale, is_causal, hq, fast_ok
        node.dropout_p, node.rng = dropout_p, rng
        node.bias = bias if float_mask is None else None
        node.saved = (snapshot(q), snapshot(k), snapshot(v),
                      snapshot(float_mask) if float_mask is not None else None,
                      _wrap(out, dtype, device) if want_stats else None, p, keep,
                      stats if want_stats else None)
        record(node, (q, k, v, float_mask), res)
    return res
