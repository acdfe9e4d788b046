"""Activation modules (PyTorch's torch/nn/modules/activation.py): ReLU, GELU, SiLU, Tanh, Sigmoid,
LeakyReLU, Softplus, the softmax family (Softmax, LogSoftmax, Softmin, Softmax2d), the others
(ELU, SELU, Hardtanh, Mish, GLU, PReLU, RReLU, ...), with PyTorch's names, arguments and reprs,
each calling its functional form (nn/functional/activation.py); and MultiheadAttention, which
PyTorch files here too.

nn.MultiheadAttention: attention over num_heads projections of query, key and value, with
PyTorch's parameters (in_proj_weight / in_proj_bias, or q/k/v_proj_weight when kdim or vdim
differ from embed_dim; out_proj), masks and returned attention weights. It composes linear,
matmul and softmax, so its gradients come from those ops."""
from __future__ import annotations

import math
import warnings

from ... import dtypes as dt
from ...autograd import no_grad
from ...ops import empty, full, zeros
from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .linear import Linear


class ReLU(Module):
    """Applies ReLU elementwise, max(0, x); as torch.nn.ReLU (inplace=True writes into the input)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return x.relu_() if self.inplace else F.relu(x)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """Applies GELU elementwise, x * Phi(x), Phi the standard normal CDF (approximate='tanh':
    its tanh approximation); as torch.nn.GELU."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate='{self.approximate}'"


class SiLU(Module):
    """Applies SiLU (swish) elementwise, x * sigmoid(x); as torch.nn.SiLU."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return F.silu(x, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """Applies tanh elementwise; as torch.nn.Tanh."""

    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    """Applies the logistic sigmoid 1 / (1 + exp(-x)) elementwise; as torch.nn.Sigmoid."""

    def forward(self, x):
        return F.sigmoid(x)


class LeakyReLU(Module):
    """Applies x where x > 0, else negative_slope * x, elementwise; as torch.nn.LeakyReLU."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope, inplace=self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """Applies log(1 + exp(beta * x)) / beta elementwise (x itself where beta * x > threshold);
    as torch.nn.Softplus."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(Module):
    """Applies softmax along dim, exp(x) / sum(exp(x)); as torch.nn.Softmax.
    dim must be given: with dim=None the call raises TypeError (torch picks a legacy dim and warns)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """Applies log(softmax(x)) along dim; as torch.nn.LogSoftmax.
    dim must be given: with dim=None the call raises TypeError (torch picks a legacy dim and warns)."""

    def forward(self, x):
        return F.log_softmax(x, self.dim)


def _inplace(inplace):
    return "inplace=True" if inplace else ""


class ELU(Module):
    """Applies ELU elementwise, x where x > 0, else alpha * (exp(x) - 1); as torch.nn.ELU."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x):
        return F.elu(x, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    """Applies CELU elementwise, x where x > 0, else alpha * (exp(x / alpha) - 1); as torch.nn.CELU."""

    def forward(self, x):
        return F.celu(x, self.alpha, self.inplace)


class SELU(Module):
    """Applies SELU elementwise, scale * ELU(x, alpha) with PyTorch's fixed scale and alpha;
    as torch.nn.SELU."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return F.selu(x, self.inplace)

    def extra_repr(self):
        return _inplace(self.inplace)


class Hardtanh(Module):
    """Applies clamp(x, min_val, max_val) elementwise; as torch.nn.Hardtanh."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None or max_value is not None:      # PyTorch's deprecated names
            warnings.warn("keyword argument `min_value`/`max_value` is deprecated and renamed to "
                          "`min_val`/`max_val`", FutureWarning, stacklevel=2)
            min_val = min_val if min_value is None else min_value
            max_val = max_val if max_value is None else max_value
        if max_val <= min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    """Applies min(max(0, x), 6) elementwise; as torch.nn.ReLU6."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace(self.inplace)


class _InplaceOnly(Module):
    """An activation whose only argument is inplace."""
    fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return type(self).fn(x, self.inplace)

    def extra_repr(self):
        return _inplace(self.inplace)


class Hardsigmoid(_InplaceOnly):
    """Applies clamp(x + 3, 0, 6) / 6 elementwise; as torch.nn.Hardsigmoid."""
    fn = staticmethod(F.hardsigmoid)


class Hardswish(_InplaceOnly):
    """Applies x * clamp(x + 3, 0, 6) / 6 elementwise; as torch.nn.Hardswish."""
    fn = staticmethod(F.hardswish)


class Mish(_InplaceOnly):
    """Applies Mish elementwise, x * tanh(softplus(x)); as torch.nn.Mish."""
    fn = staticmethod(F.mish)


class LogSigmoid(Module):
    """Applies log(sigmoid(x)) elementwise, in a form that does not overflow; as torch.nn.LogSigmoid."""

    def forward(self, x):
        return F.logsigmoid(x)


class Softsign(Module):
    """Applies x / (1 + |x|) elementwise; as torch.nn.Softsign."""

    def forward(self, x):
        return F.softsign(x)


class Tanhshrink(Module):
    """Applies x - tanh(x) elementwise; as torch.nn.Tanhshrink."""

    def forward(self, x):
        return F.tanhshrink(x)


class Softshrink(Module):
    """Applies soft shrinkage elementwise: x - lambd above lambd, x + lambd below -lambd, else 0;
    as torch.nn.Softshrink."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, x):
        return F.softshrink(x, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Softshrink):
    """Applies hard shrinkage elementwise: x where |x| > lambd, else 0; as torch.nn.Hardshrink."""

    def forward(self, x):
        return F.hardshrink(x, self.lambd)


class Threshold(Module):
    """Applies value where x <= threshold, else x, elementwise; as torch.nn.Threshold."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, x):
        return F.threshold(x, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class RReLU(Module):
    """Applies randomized leaky ReLU elementwise; as torch.nn.RReLU: in training each negative
    element's slope is drawn from U(lower, upper), in eval it is (lower + upper) / 2."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, x):
        return F.rrelu(x, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class GLU(Module):
    """Applies the gated linear unit a * sigmoid(b), a and b the two halves of the input along dim;
    as torch.nn.GLU."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.glu(x, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(Module):
    """Applies softmin along dim, softmax(-x); as torch.nn.Softmin.
    dim must be given: with dim=None the call raises TypeError (torch picks a legacy dim and warns)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmin(x, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """x if x > 0 else a * x with a learned slope: one, or one per channel (num_parameters)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(full((num_parameters,), init, device=device, dtype=dtype))

    def reset_parameters(self):
        with no_grad():
            self.weight.fill_(self.init)

    def forward(self, x):
        return F.prelu(x, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Softmax2d(Module):
    """Softmax over the channels at each spatial location of (N, C, H, W) or (C, H, W)."""

    def forward(self, x):
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {x.ndim}D instead")
        return F.softmax(x, -3)


# ---- MultiheadAttention -----------------------------------------------------------------------


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's class name for MultiheadAttention's out_proj (a plain Linear), kept for its repr."""


class MultiheadAttention(Module):
    """Multi-head scaled dot-product attention of query over key and value, with input and output
    projections; as torch.nn.MultiheadAttention.
    add_bias_kv=True and add_zero_attn=True are refused (ValueError)."""

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
