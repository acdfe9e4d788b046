"""nn.MultiheadAttention (PyTorch's): attention over num_heads projections of query, key and
value, with PyTorch's parameters (in_proj_weight / in_proj_bias, or q/k/v_proj_weight when kdim
or vdim differ from embed_dim; out_proj), masks and returned attention weights. It composes
linear, matmul and softmax, so its gradients come from those ops."""
from __future__ import annotations

import math

from .. import dtypes as dt
from ..ops.creation import empty, zeros
from . import functional as F
from . import init
from .layers import Linear
from .module import Module
from .parameter import Parameter


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's class name for MultiheadAttention's out_proj (a plain Linear), kept for its repr."""


class MultiheadAttention(Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                             f"and num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if add_bias_kv or add_zero_attn:
            raise ValueError("MultiheadAttention: add_bias_kv and add_zero_attn are not supported by paragrad")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        kw = dict(device=device, dtype=dtype)
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **kw))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **kw))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **kw))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        self._reset_parameters()

    def _reset_parameters(self):
        # PyTorch's: Xavier-uniform projections, zero biases (out_proj.weight keeps Linear's init)
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    def _projections(self):
        e = self.embed_dim
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            return (w[:e], bq), (w[e:2 * e], bk), (w[2 * e:], bv)
        return (self.q_proj_weight, bq), (self.k_proj_weight, bk), (self.v_proj_weight, bv)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        """-> (output, attention weights or None). Inputs (L, N, E), (S, N, kdim), (S, N, vdim)
        ((N, L, E) ... with batch_first; (L, E) ... unbatched). attn_mask (L, S) or (N*heads, L, S)
        and key_padding_mask (N, S): bool (True = may not attend) or float (added to the scores).
        Weights are (N, L, S) averaged over heads, or (N, heads, L, S)."""
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                               "Transformer module method `generate_square_subsequent_mask` to create "
                               "this mask.")
        batched = query.ndim == 3
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                                 f"{query.ndim}-D query tensor (key {key.ndim}-D, value {value.ndim}-D)")
        if not batched:      # (L, E) -> (L, 1, E)
            query, key, value = (t.unsqueeze(1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        tgt, n, e = query.shape
        src = key.shape[0]
        if e != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {e}")
        h, hd = self.num_heads, self.head_dim
        (wq, bq), (wk, bk), (wv, bv) = self._projections()
        # (T, N, E) -> (N*h, T, hd)
        split = lambda t, length: t.reshape(length, n * h, hd).transpose(0, 1)  # noqa: E731
        q = split(F.linear(query, wq, bq), tgt)
        k = split(F.linear(key, wk, bk), src)
        v = split(F.linear(value, wv, bv), src)
        scores = (q @ k.transpose(1, 2)) * (1.0 / math.sqrt(hd))        # (N*h, L, S)
        scores = scores + self._mask(attn_mask, key_padding_mask, n, tgt, src, scores.dtype, scores.device)
        attn = F.softmax(scores, -1)
        attn = F.dropout(attn, self.dropout, self.training)
        out = (attn @ v).transpose(0, 1).reshape(tgt, n, e)              # (L, N, E)
        out = self.out_proj(out)
        weights = None
        if need_weights:
            weights = attn.reshape(n, h, tgt, src)
            if average_attn_weights:
                weights = weights.mean(1)
            if not batched:
                weights = weights.squeeze(0)
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def _mask(self, attn_mask, key_padding_mask, n, tgt, src, dtype, device):
        """The additive (N*h, L, S)-broadcastable mask: 0 where attention may go, -inf (bool
        masks) or the given values (float masks) elsewhere."""
        total = zeros((), dtype=dtype, device=device)
        if attn_mask is not None:
            m = _additive(attn_mask, dtype)
            if m.ndim == 2:
                if tuple(m.shape) != (tgt, src):
                    raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(m.shape)}, but should be "
                                       f"{(tgt, src)}.")
            elif tuple(m.shape) != (n * self.num_heads, tgt, src):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(m.shape)}, but should be "
                                   f"{(n * self.num_heads, tgt, src)}.")
            total = total + m
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (n, src):
                raise AssertionError(f"expecting key_padding_mask shape of {(n, src)}, but got "
                                     f"{tuple(key_padding_mask.shape)}")
            m = _additive(key_padding_mask, dtype)                          # (N, S)
            m = m.reshape(n, 1, 1, src).expand(n, self.num_heads, 1, src).reshape(n * self.num_heads, 1, src)
            total = total + m
        return total


def _additive(mask, dtype):
    """A bool mask (True = masked) as 0 / -inf, a float one as is."""
    if mask.dtype is dt.bool_:
        return zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))
    return mask.to(dtype)
