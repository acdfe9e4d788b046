"""F's distances (PyTorch's torch.nn.functional distance forms): pairwise_distance,
cosine_similarity and pdist, composed from differentiable paragrad ops."""
from __future__ import annotations

from ...autograd import rename
from ...ops import broadcast_tensors, triu_indices, zeros
from ...ops.linalg.vector_norm import distance, vector_norm
from ...ops.autocast_policy import policy


@policy("cosine_similarity")
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along dim of the inputs' broadcast
    shape, as torch.nn.functional.cosine_similarity (each input divided by its norm first)."""
    x1, x2 = broadcast_tensors(x1, x2)
    return ((x1 / _clamped_norm(x1, dim, eps)) * (x2 / _clamped_norm(x2, dim, eps))).sum(dim)


def _clamped_norm(x, dim, eps):
    """||x|| along dim (kept), its value raised to eps, its gradient the norm's: torch clamps
    the norm in place without recording it."""
    n = vector_norm(x, 2, dim, True)
    return n + (n.clamp(min=eps) - n).detach()


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim (torch's node: norm(p, dim)'s, NormBackward1)."""
    return rename(vector_norm(x1 - x2 + eps, p, -1, keepdim), "NormBackward1")


@policy("pdist")
def pdist(input, p=2):
    """The p-norm distances between the rows of an (N, M) input, for each pair i < j in row
    order: N * (N - 1) / 2 values."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    if n < 2:
        return zeros((0,), dtype=input.dtype, device=input.device)
    idx = triu_indices(n, n, 1, device=input.device)                           # (2, N(N-1)/2)
    return distance(input[idx[0]] - input[idx[1]], p, "PdistBackward0")
