"""linalg.vector_norm, the one p-norm every norm-like op computes through (linalg.norm,
Tensor.norm, dist, cdist, pdist, F.normalize, F.pairwise_distance, renorm), with torch's backward:
the gradient is 0, not NaN, where the norm is 0 (a zero vector, coincident points) and where
an element is 0 for p < 1; for p = +-inf it is shared among the extreme elements, NaNs
included.
"""
from __future__ import annotations

import math

from ... import autograd
from ... import dtypes as dt
from ...autograd import Node, grad_mode, node_class, record, rename
from .._common import alias, check_tensor, dim_arg, dims_arg, snapshot
from ..creation import zeros_like
from ..elementwise.binary import where
from .decompositions import _tname
from ..autocast_policy import policy


def _keep(t, shape, axes, keepdim):
    """A reduced tensor with its reduced axes back as size 1 (it broadcasts against x)."""
    if keepdim or not axes:
        return t
    return t.reshape(tuple(1 if i in axes else s for i, s in enumerate(shape)))


class LinalgVectorNormBackward0(Node):
    """torch's norm_backward, term for term (FunctionsManual.cpp)."""

    def backward(self, g):
        p, axes = self.p, self.axes
        x, out = self.saved
        if p == 0:      # torch's norm has no gradient here (x.grad stays None), cdist a zero one
            return zeros_like(x) if self.distance else None
        if grad_mode._enabled:      # create_graph: out as a function of x, for 2nd order
            out = _p_norm(x, p, axes, True, self.distance)
        g, out = _keep(g, x.shape, axes, self.keepdim), _keep(out, x.shape, axes, self.keepdim)
        if p == 1:
            return x.sign() * g
        if p == 2:
            return g * (x / out).masked_fill(out == 0, 0)
        if math.isinf(p):
            a = x.abs()
            mask = ((a == out) | a.isnan()).to(x.dtype)     # (x's shape) the arg-extremes
            # a norm shares g among tied extremes; a distance (cdist, pdist) gives each all of g
            return x.sign() * (g * mask if self.distance else g / mask.sum(axes, keepdim=True) * mask)
        if p < 1:
            scaled = x.sign() * x.abs().pow(p - 1).masked_fill(x == 0, 0)
            return scaled * g * out.pow(1 - p)
        scaled = x.sign() * x.abs().pow(p - 1) if p < 2 else x * x.abs().pow(p - 2)
        return scaled * (g / out.pow(p - 1)).masked_fill(out == 0, 0)


def _p_norm(x, p, axes, keepdim, distance=False, cls=LinalgVectorNormBackward0):
    """(sum |x|^p)^(1/p) over `axes` (+-inf: the largest / smallest |x|, 0: the count of
    nonzeros), one node of class `cls`. float16/bfloat16 sum their powers in float32 and
    round the norm once."""
    with autograd.no_grad():
        a = x.to(dt.opmath(x.dtype)).abs()
        if p == 0:
            out = (x != 0).to(x.dtype).sum(axes, keepdim)
        elif p == math.inf:
            out = a.amax(axes, keepdim)
        elif p == -math.inf:
            out = a.amin(axes, keepdim)
        elif p == 1:
            out = a.sum(axes, keepdim)
        elif p == 2:
            out = (a * a).sum(axes, keepdim).sqrt()
        else:
            out = (a ** p).sum(axes, keepdim) ** (1.0 / p)
        out = out.to(x.dtype)
    if x._requires_grad and grad_mode._enabled:
        node = cls()
        node.p, node.axes, node.keepdim, node.distance = float(p), axes, keepdim, distance
        node.saved = (snapshot(x), alias(out))
        record(node, (x,), out)
    return out


def norm_dtype(x, dtype, op):
    """x converted to the dtype= of a norm, which may widen it but never narrow it."""
    if dtype is None:
        return x
    dtype = dt.get_dtype(dtype)
    if dt.promote_types(x.dtype, dtype) is not dtype:
        raise RuntimeError(f"{op}: the dtype of the input ({_tname(x.dtype)}) should be convertible "
                           f"without narrowing to the specified dtype ({_tname(dtype)})")
    return x.to(dtype)


@policy("vector_norm")
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|^ord)^(1/ord) over dim (all dims when None); inf / -inf: max / min |x|; 0: the
    count of nonzeros."""
    op = "linalg.vector_norm"
    check_tensor(x, op, "x")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {_tname(x.dtype)}")
    x = norm_dtype(x, dtype, op)
    axes = tuple(range(x.ndim)) if dim is None else dims_arg(dim, x.ndim, op)
    if ord in (math.inf, -math.inf):
        if any(x.shape[d] == 0 for d in axes) or (x.ndim and x.numel() == 0 and dim is None):
            raise RuntimeError(f"{op} cannot compute the {ord} norm on an empty tensor because the "
                               f"operation does not have an identity")
    return _p_norm(x, ord, axes, keepdim)


# the distance ops' nodes: the norm's formula with their own gradient rules, torch's names
_DISTANCE_NODES = {name: node_class(LinalgVectorNormBackward0, name)
                   for name in ("CdistBackward0", "PdistBackward0")}


def distance(diff, p, name="CdistBackward0"):
    """The p-norm over diff's last dim with cdist's and pdist's gradient: at p = inf every
    element tied for the largest |diff| gets the whole gradient, at p = 0 it is zero. The
    node is cdist's unless `name` says otherwise (pdist's)."""
    return _p_norm(diff, p, (diff.ndim - 1,), False, True, _DISTANCE_NODES[name])


@policy("renorm")
def renorm(input, p, dim, maxnorm):
    """Each slice along dim (input.select(dim, i)) whose p-norm exceeds maxnorm scaled to norm
    maxnorm (by maxnorm / (norm + 1e-7), as PyTorch); the others unchanged. Half types take
    the norm in float32."""
    check_tensor(input, "renorm")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point tensor as input, got {input.dtype}")
    d = dim_arg(dim, input.ndim, "renorm")
    axes = tuple(i for i in range(input.ndim) if i != d)
    x = input.to(dt.float32) if input.dtype.itemsize == 2 else input
    with autograd.no_grad():
        big = vector_norm(x, p, axes, keepdim=True) > maxnorm                    # (1.., n, ..1)
    # the norm is differentiated only where it is used: other slices are replaced by ones, so
    # that a zero slice's norm (whose gradient is 0/0) never enters the graph
    scale = maxnorm / (vector_norm(x.masked_fill(~big, 1.0), p, axes, keepdim=True) + 1e-7)
    return rename((x * where(big, scale, 1.0)).to(input.dtype), "RenormBackward0")
