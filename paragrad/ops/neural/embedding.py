"""embedding (PyTorch's F.embedding): rows of a weight matrix picked by integer indices, as one
recorded op whose gradient skips padding_idx and can be scaled by each index's frequency."""
from __future__ import annotations

import numpy as np

from ... import capture
from ... import dtypes as dt
from ...autograd import Node, grad_mode, no_grad, record
from ...tensor import Tensor, _wrap
from .._common import same_device
from ..indexing.index_bounds import out_of_range


class EmbeddingBackward0(Node):
    def backward(self, g):
        # written with Tensor ops, so a create_graph backward differentiates it too (without
        # one, the scatter runs on buffers)
        from ..creation import ones, zeros
        (idx,) = self.saved
        d = g.shape[-1]
        flat = idx.reshape(-1)                                        # (K,)
        gf = g.reshape(-1, d)                                         # (K, D)
        if self.scale_grad_by_freq:      # each occurrence counts 1 / (occurrences of its index)
            counts = zeros(self.num_weights, dtype=g.dtype, device=g.device).scatter_add(
                0, flat, ones(flat.shape[0], dtype=g.dtype, device=g.device))
            gf = gf / counts[flat].unsqueeze(1)
        if self.padding_idx is not None:
            gf = gf * (flat != self.padding_idx).unsqueeze(1).to(g.dtype)
        if not grad_mode._enabled:     # the common case, on buffers: the ids were checked
            b = g._backend                  # in the forward, no graph to record
            fast = b.fast("embedding_backward")
            dw = fast(flat._data, b.contiguous(gf._data), self.num_weights) if fast is not None else None
            if dw is not None:
                return (_wrap(dw, g.dtype, g._device),)
            dw = b.full((self.num_weights, d), 0, g.dtype, g._device.index)          # (V, D)
            rows = b.expand(b.reshape(flat._data, (-1, 1)), (flat.shape[0], d))       # (K, D)
            return (_wrap(b.scatter_add(dw, rows, b.contiguous(gf._data), 0), g.dtype, g._device),)
        dw = zeros(self.num_weights, d, dtype=g.dtype, device=g.device)
        return (dw.scatter_add(0, flat.unsqueeze(1).expand(-1, d), gf),)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """weight[input]: (*input.shape, D) for an integer input and a (V, D) weight. padding_idx
    rows get no gradient; max_norm renormalizes (in place, as PyTorch) the rows input uses whose
    norm exceeds it; scale_grad_by_freq divides each row's gradient by its count in input."""
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"embedding(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if input.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"embedding: Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.dtype} instead")
    if weight.ndim != 2:
        raise RuntimeError(f"embedding: 'weight' must be 2-D, got shape {tuple(weight.shape)}")
    if sparse:
        raise RuntimeError("embedding: sparse=True (sparse gradients) is not supported by paragrad")
    same_device("embedding", input, weight)
    v = weight.shape[0]
    if padding_idx is not None:
        if not -v <= padding_idx < v:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= v
    idx = input.long()
    # checked here on every backend, before max_norm writes into weight: a take wraps a
    # negative id (NumPy's does) or reads past the table (a GPU's), where torch refuses both.
    # No host read when the ids' range is known (ops/indexing/index_bounds.py)
    if idx.numel() and not capture.active() and out_of_range(input, 0, v - 1) is not None:
        raise IndexError(f"embedding: index out of range in self (num_embeddings {v}, indices of "
                         f"shape {tuple(input.shape)}, valid ids 0..{v - 1})")
    if max_norm is not None:
        _renorm_rows(weight, idx, float(max_norm), float(norm_type))
    b = weight._backend
    data = b.take(weight._data, b.reshape(idx._data, (-1,)), 0)          # (K, D)
    out = _wrap(b.reshape(data, tuple(input.shape) + (weight.shape[1],)), weight.dtype, weight._device)
    if weight._requires_grad and grad_mode._enabled:
        node = EmbeddingBackward0()
        node.saved, node.num_weights = (idx,), v
        node.padding_idx, node.scale_grad_by_freq = padding_idx, bool(scale_grad_by_freq)
        record(node, (weight,), out)
    return out


def _renorm_rows(weight, idx, max_norm, p):
    """PyTorch's embedding_renorm_: the rows used whose p-norm exceeds max_norm are scaled to
    max_norm / (norm + 1e-7), in place (reads the indices on the host, as PyTorch does)."""
    from ..creation import tensor
    rows = tensor(np.unique(idx.detach().cpu().numpy()), dtype=dt.int64, device=weight.device)
    with no_grad():
        w = weight.detach()                       # shares weight's buffer
        sel = w[rows]                             # (R, D)
        a = sel.abs()
        norms = a.amax(1, keepdim=True) if p == float("inf") else (a ** p).sum(1, keepdim=True) ** (1.0 / p)
        scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
        w[rows] = sel * scale
